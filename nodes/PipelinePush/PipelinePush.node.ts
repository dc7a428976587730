import {
	NodeConnectionTypes,
	NodeOperationError,
	type ICredentialDataDecryptedObject,
	type INodeType,
	type INodeTypeDescription,
	type ITriggerFunctions,
	type ITriggerResponse,
} from 'n8n-workflow';
import { postgresContractsApiTest } from '../shared/postgres/credentialTest';
import {
	getPool,
	poolConfig,
	postgresRedactor,
	redactPostgresText,
	type PostgresCredential,
} from '../shared/postgres/pool';
import { contractsPushApiTest } from './transport/credentialTest';
import { DEFAULT_LIMITS } from './transport/protocol';
import { pgRunStore } from './transport/runs';
import { startPushService, type PushService } from './transport/service';
import {
	DEFAULT_MAX_TOKEN_LIFETIME_SECONDS,
	effectiveMaxTokenLifetime,
	MAX_TOKEN_LIFETIME_LIMIT_SECONDS,
	MIN_MAX_TOKEN_LIFETIME_SECONDS,
	MIN_PUSH_SECRET_LENGTH,
} from './transport/token';

/**
 * Pipeline Push — seed 001 §3 step 4, variant B: pushes a run's answer over a WebSocket when it
 * completes. While the workflow is active it serves `ws://<Bind Address>:<Port>/api/ws` (the `ws`
 * library) and LISTENs on `pipeline_events` with the shared listener (reconnect with backoff, catch-up),
 * re-checking every pending subscription after each reconnect and every Recheck Interval.
 *
 * Protocol (docs/nodes/pipeline-push.md): `{"type":"auth","user_id","token"}`, then
 * `{"type":"subscribe","request_ids":[…]}` (or both in the URL's query string, when Allow Token in URL is
 * on; off by default). Pushed: exactly
 * `{ request_id, status: "completed", answer }` or `{ request_id, status: "failed", error }`, once per
 * subscription, also for a run finished before the subscription (catch-up). A client may subscribe only
 * to its own user's runs (the token is HMAC-SHA256 of user_id and an expiry with the Contracts Push API
 * secret, refused after its expiry + 60 s or when it lives longer than Max Token Lifetime);
 * unknown and foreign ids are refused alike. Refusals are logged without the token: UNAUTHORIZED and
 * SUBSCRIPTION_REFUSED always (with the ids), malformed messages up to 20 per connection (then counted).
 *
 * Output: nothing while active, unless Emit Deliveries is on (one execution per pushed answer, at most
 * one per request_id and connection: `{ request_id, user_id, status }`, no answer text); in a manual
 * test run, the first pushed answer. Resource bounds: see transport/server.ts and the docs' Limits.
 */
// Not usable as an AI agent's tool (docs/contracts-and-secrets.md, "Nodes as AI tools"): a trigger is never a tool an AI agent could call (security review L14).
export class PipelinePush implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Pipeline Push',
		name: 'pipelinePush',
		icon: 'file:pipelinePush.svg',
		group: ['trigger'],
		version: 1,
		subtitle: 'WebSocket push of run answers',
		description: 'Pushes pipeline run answers to WebSocket clients (seed 001 step 4, variant B)',
		eventTriggerDescription: 'Serving WebSocket clients; waiting for a pushed answer',
		activationMessage: 'Clients can now connect to ws://<host>:<port>/api/ws',
		defaults: { name: 'Pipeline Push' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [
			{ name: 'postgresContractsApi', required: true, testedBy: 'postgresContractsApiTest' },
			{ name: 'contractsPushApi', required: true, testedBy: 'contractsPushApiTest' },
		],
		properties: [
			{
				displayName: 'Port',
				name: 'port',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 65535 },
				default: 5681,
				description:
					'TCP port of the WebSocket server (path /api/ws); one active Pipeline Push per port and n8n process',
			},
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add option',
				default: {},
				options: [
					{
						displayName: 'Allow Token in URL',
						name: 'allowQueryToken',
						type: 'boolean',
						default: false,
						description:
							'Whether a client may put user_id, token and request_id in the connection URL (?user_id=…&token=…) instead of the first message. Off by default: a URL ends up in proxy access logs, with the token.',
					},
					{
						displayName: 'Auth Timeout (Seconds)',
						name: 'authTimeoutSeconds',
						type: 'number',
						typeOptions: { minValue: 1 },
						default: 10,
						description: 'A connection that has not authenticated by then is closed (code 4408)',
					},
					{
						displayName: 'Bind Address',
						name: 'host',
						type: 'string',
						default: '127.0.0.1',
						description: 'Interface to listen on; 0.0.0.0 for every interface (put a TLS proxy in front for wss://)',
					},
					{
						displayName: 'Channel',
						name: 'channel',
						type: 'string',
						default: 'pipeline_events',
						description: 'The NOTIFY channel of the notify_pipeline_change trigger',
					},
					{
						displayName: 'Emit Deliveries',
						name: 'emitDeliveries',
						type: 'boolean',
						default: false,
						description:
							'Whether to start an execution per pushed answer (at most one per request_id and connection), with { request_id, user_id, status } (no answer text)',
					},
					{
						displayName: 'Max Connections',
						name: 'maxConnections',
						type: 'number',
						typeOptions: { minValue: 1 },
						default: 10000,
						description: 'Most open WebSocket connections; further ones are refused with HTTP 503 before the upgrade',
					},
					{
						displayName: 'Max Message Size (Bytes)',
						name: 'maxMessageBytes',
						type: 'number',
						typeOptions: { minValue: 256, maxValue: 1048576 },
						default: 16384,
						description:
							'A larger client message closes its connection (code 1009, read no further than its frame header, not answered)',
					},
					{
						displayName: 'Max Subscriptions per Connection',
						name: 'maxSubscriptions',
						type: 'number',
						typeOptions: { minValue: 1, maxValue: 10000 },
						default: 100,
						description: 'Most pending request_ids one connection may wait for (TOO_MANY_SUBSCRIPTIONS)',
					},
					{
						displayName: 'Max Token Lifetime (Seconds)',
						name: 'maxTokenLifetimeSeconds',
						type: 'number',
						typeOptions: { minValue: MIN_MAX_TOKEN_LIFETIME_SECONDS, maxValue: MAX_TOKEN_LIFETIME_LIMIT_SECONDS },
						default: DEFAULT_MAX_TOKEN_LIFETIME_SECONDS,
						description:
							'A token whose expiry lies further ahead than this (plus 60 s of clock skew) is refused, whoever minted it; at most 604800 (7 days)',
					},
					{
						displayName: 'Max Unauthenticated Connections',
						name: 'maxUnauthenticated',
						type: 'number',
						typeOptions: { minValue: 1 },
						default: 1000,
						description:
							'Most connections waiting to authenticate; further ones are refused with HTTP 503 before the upgrade',
					},
					{
						displayName: 'Recheck Interval (Seconds)',
						name: 'recheckSeconds',
						type: 'number',
						typeOptions: { minValue: 1 },
						default: 30,
						description:
							'How often pending subscriptions are re-read from the database (besides notifications and reconnects)',
					},
				],
			},
		],
	};

	methods = { credentialTest: { postgresContractsApiTest, contractsPushApiTest } };

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const credential = (await this.getCredentials('postgresContractsApi')) as unknown as PostgresCredential;
		const push = (await this.getCredentials('contractsPushApi')) as ICredentialDataDecryptedObject;
		const secret = typeof push.secret === 'string' ? push.secret : '';
		if (secret.length < MIN_PUSH_SECRET_LENGTH)
			throw new NodeOperationError(
				this.getNode(),
				`Contracts Push API: Token Secret (secret) must be at least ${MIN_PUSH_SECRET_LENGTH} characters`,
			);
		const port = this.getNodeParameter('port', 5681) as number;
		const options = this.getNodeParameter('options', {}) as {
			host?: string;
			allowQueryToken?: boolean;
			maxTokenLifetimeSeconds?: number;
			emitDeliveries?: boolean;
			maxMessageBytes?: number;
			maxSubscriptions?: number;
			maxConnections?: number;
			maxUnauthenticated?: number;
			authTimeoutSeconds?: number;
			recheckSeconds?: number;
			channel?: string;
		};
		const manual = this.getMode() === 'manual';
		const emit = manual || options.emitDeliveries === true;
		const redact = postgresRedactor(credential);
		const { max: _max, idleTimeoutMillis: _idle, ...config } = poolConfig(credential);
		void _max;
		void _idle;
		const logger = this.logger;
		const maxSubscriptions = options.maxSubscriptions ?? DEFAULT_LIMITS.maxIdsPerMessage;
		const host = options.host || '127.0.0.1';
		const text = (m: string) => redactPostgresText(redact, m);
		let service: PushService;
		try {
			service = await startPushService({
				port,
				host,
				secret,
				allowQueryToken: options.allowQueryToken === true,
				// NaN, a string or an empty value gives the default (fails closed), over 7 days is cut to 7 days
				maxTokenLifetimeSeconds: effectiveMaxTokenLifetime(options.maxTokenLifetimeSeconds),
				maxMessageBytes: options.maxMessageBytes ?? DEFAULT_LIMITS.maxMessageBytes,
				maxIdsPerMessage: maxSubscriptions,
				maxSubscriptions,
				maxConnections: options.maxConnections ?? 10_000,
				maxUnauthenticated: options.maxUnauthenticated ?? 1000,
				authTimeoutMs: (options.authTimeoutSeconds ?? 10) * 1000,
				heartbeatMs: 30_000,
				recheckMs: (options.recheckSeconds ?? 30) * 1000,
				channel: options.channel,
				listen: { ...config, application_name: 'n8n-nodes-contracts pipeline push' },
				store: pgRunStore(() => getPool(credential)),
				redact: text,
				logger: { info: (m) => logger.info(text(m)), warn: (m) => logger.warn(text(m)) },
				onDelivered: emit
					? (answer, userId) =>
							this.emit([
								this.helpers.returnJsonArray([
									{ request_id: answer.request_id, user_id: userId, status: answer.status },
								]),
							])
					: undefined,
			});
		} catch (error) {
			// pg's message may name the host or the password: a redacted copy, never the original.
			const copy = redact.error(error);
			throw new NodeOperationError(this.getNode(), text(copy.message));
		}
		logger.info(`Pipeline Push: serving ws://${host}:${service.server.port}/api/ws`);
		return {
			closeFunction: async () => service.stop(),
		};
	}
}
