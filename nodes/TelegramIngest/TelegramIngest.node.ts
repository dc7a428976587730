import {
	NodeConnectionTypes,
	type IDataObject,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import type { SuccessEnvelope } from '../shared/contracts/envelope';
import { JOB_REGISTRY } from '../shared/jobs/registry';
import { postgresContractsApiTest } from '../shared/postgres/credentialTest';
import { executionPool } from '../shared/postgres/executionPool';
import { maxAttemptsOf } from './actions/options';
import { defaultExpressionParameter, plainParameter, reuseCredentialOn } from '../shared/node/parameters';
import { optionsCollection, reuseCredentialOption, workflowLabelOption } from '../shared/node/properties';
import { runItems, type ItemHandler } from '../shared/node/runItems';
import { headerOf, ingestUpdate } from './actions/ingest.operation';

/** The default expressions of Bot Key and Secret Token (the shipped WF10 uses them as they are). */
const DEFAULT_BOT_KEY = '={{ ($json.query || {}).bot }}';
const DEFAULT_SECRET_TOKEN = '={{ ($json.headers || {})["x-telegram-bot-api-secret-token"] }}';

/** `(json[key] || {})[field]`, as the default expressions compute it. */
function fieldOf(json: INodeExecutionData['json'], key: string, field: string): unknown {
	return ((json[key] || {}) as Record<string, unknown>)[field];
}

/**
 * The body a successful item answers Telegram with ("Respond to Webhook" option; the same body as the
 * Respond 200 node of earlier WF10 versions): `{ ok: true, job_id, duplicate, quarantined }`.
 */
export function successAnswer(envelope: SuccessEnvelope): IDataObject {
	const data = envelope.data as { job_id?: unknown; duplicate?: unknown; quarantined?: unknown };
	return {
		ok: true,
		job_id: (data.job_id ?? null) as number | null,
		duplicate: data.duplicate === true,
		quarantined: data.quarantined === true,
	};
}

/** The bytes of the item's raw-body binary property, or undefined when the item has none. */
async function rawBodyOf(
	fn: IExecuteFunctions,
	node: INode,
	item: INodeExecutionData,
	itemIndex: number,
): Promise<Buffer | undefined> {
	const property = plainParameter(fn, node, 'rawBodyProperty', itemIndex, 'data') as string;
	if (!property || !item.binary?.[property]) return undefined;
	return await fn.helpers.getBinaryDataBuffer(itemIndex, property);
}

/**
 * Telegram Ingest — WF10 in one node (seed 003 WF10, seed 002 §2).
 *
 * Input: the item of a Webhook node (`headers`, `params`, `body`, and the raw body as binary `data`
 * when the Webhook gives it). Output: a SuccessEnvelope (status 200) with `data.job_id`, `data.duplicate`
 * and `data.quarantined` (true when the update was kept in raw.telegram_quarantine because PostgreSQL
 * cannot store it normally; its ops.errors row is already written). A rejected or failed item (400 /
 * 401 / 403 — an unknown bot key answers like a wrong secret — / 5xx) goes to the error output as
 * `{ error: { message, kind, status_code, retryable, ctx, error_context } }`, ready for
 * "ERR — Source Telegram Ingest" → "Prepare DB Error" → WF99. See actions/body.ts for the quarantine rules.
 * With Options → Respond to Webhook (the shipped WF10), a success also answers the webhook call at once
 * (200, `successAnswer`), so no Respond to Webhook node runs on the success path (issue 14).
 */
// Not usable as an AI agent's tool (docs/contracts-and-secrets.md, "Nodes as AI tools"): it stores updates and enqueues jobs, and takes the webhook secret.
// eslint-disable-next-line @n8n/community-nodes/node-usable-as-tool
export class TelegramIngest implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Telegram Ingest',
		name: 'telegramIngest',
		icon: 'file:telegramIngest.svg',
		group: ['transform'],
		version: 1,
		subtitle: '={{"update → job " + $parameter["jobType"]}}',
		description: 'Stores a Telegram webhook update exactly once and enqueues its job (WF10)',
		defaults: { name: 'Telegram Ingest' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'postgresContractsApi', required: true, testedBy: 'postgresContractsApiTest' }],
		properties: [
			{
				displayName: 'Bot Key',
				name: 'botKey',
				type: 'string',
				default: '={{ ($json.query || {}).bot }}', // = DEFAULT_BOT_KEY (a literal for n8n's lint)
				required: true,
				description:
					"The bot's key in core.bots, sent as the query parameter of the webhook URL: /webhook/telegram?bot=&lt;bot_key&gt;",
			},
			{
				displayName: 'Secret Token',
				name: 'secretToken',
				type: 'string',
				typeOptions: { password: true },
				default: '={{ ($json.headers || {})["x-telegram-bot-api-secret-token"] }}', // = DEFAULT_SECRET_TOKEN
				description:
					'The X-Telegram-Bot-Api-Secret-Token header Telegram sends; compared in constant time with core.bots.webhook_secret',
			},
			{
				displayName: 'Raw Body Property',
				name: 'rawBodyProperty',
				type: 'string',
				default: 'data',
				description:
					'Binary property holding the webhook body exactly as received (Webhook node v1 with the "Binary File" option, or the "Raw Body" option). When the item has it, the update is read from these bytes: IDs beyond 2^53 stay exact and a body that is not JSON gets this node\'s own 400. When it is absent, Update is used.',
			},
			{
				displayName: 'Update',
				name: 'update',
				type: 'json',
				default: '={{ $json.body }}',
				required: true,
				description:
					'The Telegram Update as n8n parsed it (the webhook body), used when the item has no raw body. Stored as received; unknown update types are accepted.',
			},
			{
				displayName: 'Job Type',
				name: 'jobType',
				type: 'string',
				default: 'telegram_update', // = JOB_TYPES.telegram_update (a literal for n8n's lint; test/unit/jobRegistry.test.ts checks it)
				required: true,
				description: `The ops.jobs.job_type of the job created for each new update (processed by ${JOB_REGISTRY.telegram_update.workflow_id.slice(0, 4)} through WF90). Must be a registered job type whose worker takes a Telegram update; any other value fails every update with a 500 and writes nothing.`,
			},
			optionsCollection(
				{
					displayName: 'Max Attempts',
					name: 'maxAttempts',
					type: 'number',
					typeOptions: { minValue: 1 },
					default: 5,
					description: 'The ops.jobs.max_attempts of the created job',
				},
				reuseCredentialOption('the PostgreSQL credential', 'WF10'),
				{
					displayName: 'Respond to Webhook',
					name: 'respond',
					type: 'boolean',
					default: false,
					description:
						'Whether this node answers the webhook call itself, as a Respond to Webhook node would, with 200 and {"ok": true, "job_id", "duplicate", "quarantined"} (no "method" key, so Telegram executes nothing) for a stored, duplicate or quarantined update — one node fewer per update. The Webhook\'s Respond must be "Using \'Respond to Webhook\' Node". Failures are not answered here: the error output\'s Respond to Webhook answers with the status code (WF10\'s error branch, seed 002 §2.3).',
				},
				workflowLabelOption('WF10'),
			),
		],
	};

	methods = { credentialTest: { postgresContractsApiTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		// Hot path (issue 14): the node is copied once per execution; parameters without expressions are
		// read as stored and the default Bot Key / Secret Token expressions computed from the item
		// (shared/node/parameters.ts); with Reuse Credential, the credential and its pool are read through n8n
		// at most once per 5 s per workflow (executionPool.ts).
		const node = this.getNode();
		const pool = await executionPool(this, { node, reuse: reuseCredentialOn(this, node) });
		let responded = false;
		const ingestItem: ItemHandler = async (item, itemIndex, state) => {
			const options = plainParameter(this, node, 'options', itemIndex, {}) as {
				maxAttempts?: number;
				workflow?: string;
				respond?: boolean;
			};
			const rawBody = await rawBodyOf(this, node, item, itemIndex);
			// With the raw body, "Update" is not evaluated: a deeply nested parsed body would overflow the expression engine.
			const update = rawBody ? undefined : this.getNodeParameter('update', itemIndex, '');
			const envelope = await ingestUpdate(
				pool,
				{
					botKey: defaultExpressionParameter(this, node, 'botKey', itemIndex, DEFAULT_BOT_KEY, () =>
						fieldOf(item.json, 'query', 'bot'),
					),
					secretToken: defaultExpressionParameter(this, node, 'secretToken', itemIndex, DEFAULT_SECRET_TOKEN, () =>
						fieldOf(item.json, 'headers', 'x-telegram-bot-api-secret-token'),
					),
					rawBody,
					update,
					correlationId: headerOf(item.json, 'x-correlation-id'),
					traceId: headerOf(item.json, 'traceparent') ?? headerOf(item.json, 'x-trace-id'),
					jobType: plainParameter(this, node, 'jobType', itemIndex) as string,
					maxAttempts: maxAttemptsOf(options.maxAttempts),
					workflow: options.workflow || 'WF10',
					nodeName: node.name,
				},
				state,
			);
			if (options.respond === true && !responded) {
				// One HTTP answer per webhook call: the first success (a webhook execution has one item).
				responded = true;
				this.sendResponse({ body: successAnswer(envelope), headers: {}, statusCode: 200 });
			}
			return { json: envelope as unknown as INodeExecutionData['json'] };
		};
		// the node read above: getNode() deep-copies it on every call
		return runItems(this, ingestItem, 1, node);
	}
}
