import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import type { Pool } from 'pg';
import { isRecord } from '../shared/json';
import { contextProperty, optionsCollection, requestProperty, workflowLabelOption } from '../shared/node/properties';
import { resourceProperties, withFormerValues } from '../shared/node/resources';
import { routeItems, type Route } from '../shared/node/router';
import { postgresContractsApiTest } from '../shared/postgres/credentialTest';
import { executionPool } from '../shared/postgres/executionPool';
import { contractsLlmApiTest } from '../shared/llm/credentialTest';
import { cancelSignalOf, type LlmCredential } from '../shared/llm/generate';
import { KNOWLEDGE_RESOURCES } from './actions';
import { DEFAULT_MIN_SCORE, DEFAULT_RELATIVE_SCORE } from './actions/qa/citations';
import { DEFAULT_RETRIEVAL } from './actions/qa/retrieve';
import type { KnowledgeContext, KnowledgeOperation } from './actions/types';
import type { TelegramCredential } from './transport/botApi';
import { contractsEmbeddingsApiTest, contractsTelegramApiTest } from './transport/credentialTest';
import { embedTexts, type EmbeddingsCredential } from './transport/embeddings';
import { fetchSender, httpGet, httpPostJson } from './transport/http';
import { guardedGet } from './transport/outbound';

/** A JSON parameter as n8n gives it: a non-blank string is parsed (bad JSON throws a SyntaxError). */
function parsed(value: unknown): unknown {
	return typeof value === 'string' && value.trim() ? (JSON.parse(value) as unknown) : value;
}

/**
 * How Knowledge Bot routes an item: the Request and Context parameters (the ctx travels on, its
 * correlation_id or the request's kept), the operation called as `execute(knowledgeContext, req)`, and
 * the final ctx beside each envelope.
 */
const KNOWLEDGE_ROUTE: Route<KnowledgeOperation, Pool, KnowledgeContext> = {
	label: 'KnowledgeBot',
	resources: withFormerValues(KNOWLEDGE_RESOURCES),
	ctxInOutput: true,
	connect: async (fn) => await executionPool(fn, { reuse: false }),
	workflow: (operation) => operation?.workflow ?? '',
	incoming: (fn, _item, itemIndex) => {
		const incomingCtx = parsed(fn.getNodeParameter('ctx', itemIndex, {}));
		const ctx = isRecord(incomingCtx) ? incomingCtx : {};
		const req = parsed(fn.getNodeParameter('req', itemIndex, {}));
		return { ctx, correlationIds: [ctx.correlation_id, isRecord(req) ? req.correlation_id : undefined], input: req };
	},
	context: (fn, pool, { itemIndex, state, correlationId, options }) => ({
		pool,
		state,
		correlationId,
		http: httpGet,
		fetchUrl: guardedGet,
		outbound: {
			allowedAddresses: typeof options.allowedPrivateAddresses === 'string' ? options.allowedPrivateAddresses : '',
			allowedPorts: typeof options.allowedPorts === 'string' ? options.allowedPorts : '',
		},
		telegram: async () => (await fn.getCredentials('contractsTelegramApi', itemIndex)) as unknown as TelegramCredential,
		embed: async (model, texts, task) =>
			embedTexts(
				httpPostJson,
				(await fn.getCredentials('contractsEmbeddingsApi', itemIndex)) as unknown as EmbeddingsCredential,
				model,
				texts,
				task,
			),
		postJson: httpPostJson,
		relevance: () => ({
			minScore: fn.getNodeParameter('minScore', itemIndex, DEFAULT_MIN_SCORE),
			relativeScore: fn.getNodeParameter('relativeScore', itemIndex, DEFAULT_RELATIVE_SCORE),
			retrieval: fn.getNodeParameter('retrieval', itemIndex, DEFAULT_RETRIEVAL),
		}),
		llm: async () => ({
			credential: (await fn.getCredentials('contractsLlmApi', itemIndex)) as unknown as LlmCredential,
			send: fetchSender,
			signal: cancelSignalOf(fn),
		}),
	}),
	execute: async (operation, context, req) => ({ data: await operation.execute(context, req) }),
};

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
// Not usable as an AI agent's tool (docs/contracts-and-secrets.md, "Nodes as AI tools"): it fetches URLs, downloads files, calls models and writes documents, chunks and jobs.
// eslint-disable-next-line @n8n/community-nodes/node-usable-as-tool
export class KnowledgeBot implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Knowledge Bot',
		name: 'knowledgeBot',
		icon: 'file:knowledgeBot.svg',
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["resource"] + ": " + $parameter["operation"] }}',
		description:
			'Telegram knowledge bot steps: process updates, fetch URLs and files, extract and chunk documents (seed 003)',
		defaults: { name: 'Knowledge Bot' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [
			{ name: 'postgresContractsApi', required: true, testedBy: 'postgresContractsApiTest' },
			{
				name: 'contractsTelegramApi',
				required: true,
				testedBy: 'contractsTelegramApiTest',
				displayOptions: { show: { operation: ['download', 'answer', 'check'] } },
			},
			{
				name: 'contractsEmbeddingsApi',
				required: true,
				testedBy: 'contractsEmbeddingsApiTest',
				displayOptions: { show: { operation: ['embed', 'answer'] } },
			},
			{
				name: 'contractsLlmApi',
				required: true,
				testedBy: 'contractsLlmApiTest',
				displayOptions: { show: { operation: ['answer'] } },
			},
		],
		properties: [
			...resourceProperties(KNOWLEDGE_RESOURCES),
			requestProperty(
				'The req of the seed-003 workflow this operation implements (docs/nodes/knowledge-bot.md gives each shape)',
			),
			contextProperty(),
			{
				displayName: 'Retrieval',
				name: 'retrieval',
				type: 'options',
				noDataExpression: true,
				default: DEFAULT_RETRIEVAL,
				options: [
					{
						name: 'Hybrid (Vector + Full-Text)',
						value: 'hybrid',
						description:
							"Each chunk scored 0.4 × cosine similarity + 0.6 × PostgreSQL's full-text rank of the question against it ('english': stop words, stemming; about 0.61 × the share of the question's words it holds)",
					},
					{
						name: 'Vector',
						value: 'vector',
						description: 'Each chunk scored by cosine similarity alone',
					},
				],
				description:
					'How retrieved chunks are scored. The default, Hybrid, was measured on the issue-30 evaluation set (npm run eval:answer); Vector is the pure embedding route.',
				displayOptions: { show: { resource: ['qa'], operation: ['answer'] } },
			},
			{
				displayName: 'Minimum Score',
				name: 'minScore',
				type: 'number',
				default: DEFAULT_MIN_SCORE,
				typeOptions: { minValue: 0, maxValue: 1, numberPrecision: 2 },
				description:
					"Absolute relevance floor (the Retrieval's score, 0–1): a retrieved chunk scoring below it is neither given to the model nor cited. The default 0.38 was measured for Hybrid on the issue-30 evaluation set with the offline stand-ins (npm run eval:answer; docs/nodes/knowledge-bot.md has the sweep); re-tune it for your embedding model and Retrieval. When no chunk passes, the bot says it found nothing, without calling the model.",
				displayOptions: { show: { resource: ['qa'], operation: ['answer'] } },
			},
			{
				displayName: 'Minimum Relative Score',
				name: 'relativeScore',
				type: 'number',
				default: DEFAULT_RELATIVE_SCORE,
				typeOptions: { minValue: 0, maxValue: 1, numberPrecision: 2 },
				description:
					'Relevance floor relative to the best retrieved chunk (0–1): a chunk scoring below this fraction of the best score is neither given to the model nor cited (0: off). The default 0.9 was measured as Minimum Score.',
				displayOptions: { show: { resource: ['qa'], operation: ['answer'] } },
			},
			optionsCollection(
				{
					displayName: 'Allowed Ports',
					name: 'allowedPorts',
					type: 'string',
					// a fixed value, never from item data (an expression over a chat's items could open the allowlist)
					noDataExpression: true,
					default: '80, 443',
					placeholder: '80, 443, 8000-8100',
					description:
						'Ports a fetched URL and each of its redirects may name, separated by commas: numbers and ranges (empty: 80 and 443)',
					displayOptions: { show: { '/resource': ['url'], '/operation': ['fetch'] } },
				},
				{
					displayName: 'Allowed Private Addresses',
					name: 'allowedPrivateAddresses',
					type: 'string',
					// a fixed value, never from item data (an expression over a chat's items could open the allowlist)
					noDataExpression: true,
					default: '',
					placeholder: 'intranet.example.com, 10.0.0.0/8',
					description:
						'Host names, IP addresses and CIDRs this node may fetch from although they are not public (separated by commas). Empty: only public unicast addresses; a name on the list may resolve to any address except unspecified, multicast and broadcast.',
					displayOptions: { show: { '/resource': ['url'], '/operation': ['fetch'] } },
				},
				workflowLabelOption(
					'',
					'Value of meta.source and ctx.workflow (default: the seed workflow of the operation, e.g. WF20)',
				),
			),
		],
	};

	methods = {
		credentialTest: {
			postgresContractsApiTest,
			contractsTelegramApiTest,
			contractsEmbeddingsApiTest,
			contractsLlmApiTest,
		},
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return routeItems(this, KNOWLEDGE_ROUTE);
	}
}
