import {
	NodeConnectionTypes,
	type INodeType,
	type INodeTypeDescription,
	type ITriggerFunctions,
	type ITriggerResponse,
} from 'n8n-workflow';
import { postgresContractsApiTest } from '../shared/postgres/credentialTest';
import { poolConfig, postgresRedactor, redactPostgresText, type PostgresCredential } from '../shared/postgres/pool';
import { PipelineListener } from '../shared/postgres/listener';
import { optionsCollection } from '../shared/node/properties';

/**
 * Pipeline Trigger — starts the Orchestrator (seed 001) on every pipeline_runs status change.
 *
 * A dedicated `pg` connection LISTENs on 'pipeline_events' (the notify_pipeline_change trigger). When
 * the connection drops (backend terminated, server restart) it reconnects with capped exponential
 * backoff and jitter, LISTENs again, and catches up: it emits every run still waiting for a worker and
 * every run changed while it was away, so no run is left behind. n8n's built-in Postgres Trigger
 * (nodes-base 2.4.6) ends its LISTEN silently on a dropped connection, with no reconnect or catch-up.
 *
 * Output: one item per event `{ id, status, operation }` (operation INSERT / UPDATE, or CATCHUP).
 * Events can repeat; the Pipeline Capture node's Capture makes acting on them exactly once.
 */
// Not usable as an AI agent's tool (docs/contracts-and-secrets.md, "Nodes as AI tools"): a trigger is never a tool an AI agent could call.
export class PipelineTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Pipeline Trigger',
		name: 'pipelineTrigger',
		icon: 'file:pipelineTrigger.svg',
		group: ['trigger'],
		version: 1,
		subtitle: '={{ "runs entering " + (($parameter["statuses"] || []).join(", ") || "any status") }}',
		description: 'Starts a workflow when a pipeline run changes status (LISTEN with reconnect and catch-up)',
		eventTriggerDescription: 'Waiting for pipeline run changes',
		defaults: { name: 'Pipeline Trigger' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'postgresContractsApi', required: true, testedBy: 'postgresContractsApiTest' }],
		properties: [
			{
				displayName: 'Statuses',
				name: 'statuses',
				type: 'multiOptions',
				options: ['NEW', 'ANALYZING', 'ANALYZED', 'ASSEMBLING', 'READY', 'RESPONDING', 'COMPLETED', 'FAILED'].map(
					(s) => ({ name: s, value: s }),
				),
				default: ['NEW', 'ANALYZED', 'READY', 'COMPLETED'],
				description: 'Emit only runs entering these statuses (empty: all)',
			},
			optionsCollection(
				{
					displayName: 'Channel',
					name: 'channel',
					type: 'string',
					default: 'pipeline_events',
					description: 'The NOTIFY channel of the notify_pipeline_change trigger',
				},
				{
					displayName: 'Catch-Up Page Size',
					name: 'catchUpLimit',
					type: 'number',
					typeOptions: { minValue: 1 },
					default: 1000,
					description: 'Runs per catch-up batch (one execution each); the catch-up pages through all of them',
				},
				{
					displayName: 'Max Reconnect Delay (Ms)',
					name: 'maxBackoffMs',
					type: 'number',
					typeOptions: { minValue: 100 },
					default: 30000,
					description: 'Cap of the reconnect backoff (starts at 500 ms, doubles, with jitter)',
				},
			),
		],
	};

	methods = { credentialTest: { postgresContractsApiTest } };

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const credential = (await this.getCredentials('postgresContractsApi')) as unknown as PostgresCredential;
		const statuses = this.getNodeParameter('statuses', []) as string[];
		const options = this.getNodeParameter('options', {}) as {
			channel?: string;
			catchUpLimit?: number;
			maxBackoffMs?: number;
		};
		const redact = postgresRedactor(credential);
		// Refuses a connection string pasted into Host/Database/User (ContractError, the value not quoted).
		const { max: _max, idleTimeoutMillis: _idle, ...config } = poolConfig(credential);
		void _max;
		void _idle;
		const logger = this.logger;
		const listener = new PipelineListener(
			{ ...config, application_name: 'n8n-nodes-contracts pipeline trigger' },
			{
				channel: options.channel || 'pipeline_events',
				statuses,
				catchUpLimit: options.catchUpLimit ?? 1000,
				maxBackoffMs: options.maxBackoffMs ?? 30_000,
				onEvents: (events) => this.emit([this.helpers.returnJsonArray(events.map((e) => ({ ...e })))]),
				// The password is redacted from the logged message (e.g. a connection string pasted into Host).
				onError: (error) =>
					logger.warn(`Pipeline Trigger: ${redactPostgresText(redact, error.message)} (reconnecting)`),
			},
		);
		try {
			await listener.start();
		} catch (error) {
			// pg's message may name the host or the password: a redacted copy, never the original.
			const copy = redact.error(error);
			copy.message = redactPostgresText(redact, copy.message);
			copy.stack = redactPostgresText(redact, copy.stack ?? '');
			throw copy;
		}
		return { closeFunction: async () => listener.stop() };
	}
}
