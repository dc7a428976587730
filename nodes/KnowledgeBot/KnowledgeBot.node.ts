import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import { ERRORPIPE_CONTRACT_VERSION } from '../shared/contracts/ctx';
import { correlationOf, isUuid, newCorrelationId, success } from '../shared/envelope';
import { isRecord } from '../shared/json';
import { resourceProperties } from '../shared/node/resources';
import { runItems } from '../shared/node/runItems';
import { postgresContractsApiTest } from '../shared/postgres/credentialTest';
import { contractsLlmApiTest } from '../shared/llm/credentialTest';
import { contractsEmbeddingsApiTest, contractsTelegramApiTest } from './transport/credentialTest';
import { getPool, type PostgresCredential } from '../shared/postgres/pool';
import { findKnowledgeOperation, KNOWLEDGE_RESOURCES } from './actions';
import { embedTexts, type EmbeddingsCredential } from './transport/embeddings';
import { fetchSender, httpGet, httpPostJson } from './transport/http';
import type { LlmCredential } from '../shared/llm/generate';
import type { TelegramCredential } from './transport/botApi';

/**
 * Knowledge Bot — the worker steps of the Telegram knowledge bot (seed 003 §1), each the core of one
 * workflow: Telegram Update → Process (WF20), URL → Normalize (WF30) and Fetch (WF31), Telegram File →
 * Download (WF32, with the Contracts Telegram Bot API credential), Document →
 * Extract (WF33), Chunk (WF40) and Embed (WF41, with the Contracts Embeddings API credential; pgvector HNSW
 * where migration 007 is applied, else the exact store of migration 011 — actions/vectorRoute.ts).
 *
 * Input: an item with `req` (the workflow's input of seed 003) and optionally `ctx` (travelling
 * context: correlation_id, job_id… kept on errors). Output: a SuccessEnvelope per item, `data` as the
 * seed's output. Failures go to the error output as `{ error: { message, kind, status_code, retryable,
 * details, ctx, error_context } }` for the Error Pipe (WF99); ctx.job_id lets WF99 retry the job.
 */
export class KnowledgeBot implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Knowledge Bot',
		name: 'knowledgeBot',
		icon: 'file:knowledgeBot.svg',
		group: ['transform'],
		version: 1,
		usableAsTool: true,
		subtitle: '={{ $parameter["resource"] + ": " + $parameter["operation"] }}',
		description: 'Telegram knowledge bot steps: process updates, fetch URLs and files, extract and chunk documents (seed 003)',
		defaults: { name: 'Knowledge Bot' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [
			{ name: 'postgresContractsApi', required: true, testedBy: 'postgresContractsApiTest' },
			{ name: 'contractsTelegramApi', required: true, testedBy: 'contractsTelegramApiTest', displayOptions: { show: { operation: ['download', 'answer', 'check'] } } },
			{ name: 'contractsEmbeddingsApi', required: true, testedBy: 'contractsEmbeddingsApiTest', displayOptions: { show: { operation: ['embed', 'answer'] } } },
			{ name: 'contractsLlmApi', required: true, testedBy: 'contractsLlmApiTest', displayOptions: { show: { operation: ['answer'] } } },
		],
		properties: [
			...resourceProperties(KNOWLEDGE_RESOURCES),
			{
				displayName: 'Request',
				name: 'req',
				type: 'json',
				default: '={{ $json.req }}',
				required: true,
				description: 'The req of the seed-003 workflow this operation implements (see the README for each shape)',
			},
			{
				displayName: 'Context',
				name: 'ctx',
				type: 'json',
				default: '={{ $json.ctx || {} }}',
				description: 'The ctx travelling with the request (correlation_id, job_id, trace_id); kept in errors so WF99 can retry the job',
			},
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add option',
				default: {},
				options: [{ displayName: 'Workflow Label', name: 'workflow', type: 'string', default: '', description: 'Value of meta.source and ctx.workflow (default: the seed workflow of the operation, e.g. WF20)' }],
			},
		],
	};

	methods = { credentialTest: { postgresContractsApiTest, contractsTelegramApiTest, contractsEmbeddingsApiTest, contractsLlmApiTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const credential = (await this.getCredentials('postgresContractsApi')) as unknown as PostgresCredential;
		const pool = getPool(credential);
		const nodeName = this.getNode().name;
		return runItems(this, async (_item, itemIndex, state) => {
			const operation = findKnowledgeOperation(this.getNodeParameter('resource', itemIndex) as string, this.getNodeParameter('operation', itemIndex) as string);
			const options = this.getNodeParameter('options', itemIndex, {}) as { workflow?: string };
			const workflow = options.workflow || operation.workflow;
			const parse = (value: unknown) => (typeof value === 'string' && value.trim() ? (JSON.parse(value) as unknown) : value);
			const incomingCtx = parse(this.getNodeParameter('ctx', itemIndex, {}));
			const travelling = isRecord(incomingCtx) ? incomingCtx : {};
			const req = parse(this.getNodeParameter('req', itemIndex, {}));
			const fromReq = isRecord(req) ? req.correlation_id : undefined;
			const correlationId = isUuid(travelling.correlation_id) ? travelling.correlation_id : isUuid(fromReq) ? fromReq : newCorrelationId();
			state.ctx = { ...travelling, correlation_id: correlationId, workflow, node: nodeName, contracts: { errorpipe: ERRORPIPE_CONTRACT_VERSION } };
			const data = await operation.execute(
				{
					pool,
					state,
					correlationId,
					http: httpGet,
					telegram: async () => (await this.getCredentials('contractsTelegramApi', itemIndex)) as unknown as TelegramCredential,
					embed: async (model, texts, task) => embedTexts(httpPostJson, (await this.getCredentials('contractsEmbeddingsApi', itemIndex)) as unknown as EmbeddingsCredential, model, texts, task),
					postJson: httpPostJson,
					llm: async () => ({ credential: (await this.getCredentials('contractsLlmApi', itemIndex)) as unknown as LlmCredential, send: fetchSender }),
				},
				req,
			);
			const ctx = state.ctx;
			const envelope = success(data, { source: workflow, correlation: correlationOf(ctx, { workflow, node: nodeName }) });
			return { json: { ...(envelope as unknown as INodeExecutionData['json']), ctx } };
		});
	}
}
