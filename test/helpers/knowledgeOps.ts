/** Runs Knowledge Bot operations directly (no n8n) for the integration tests. */
import assert from 'node:assert/strict';
import type { Pool } from 'pg';
import type { KnowledgeOperation } from '../../nodes/KnowledgeBot/actions/types';
import type { TelegramCredential } from '../../nodes/KnowledgeBot/transport/botApi';
import { embedTexts, type EmbeddingsCredential } from '../../nodes/KnowledgeBot/transport/embeddings';
import { fetchSender, httpGet, httpPostJson } from '../../nodes/KnowledgeBot/transport/http';
import { guardedGet, type Connector, type Resolver } from '../../nodes/KnowledgeBot/transport/outbound';
import { ContractError } from '../../nodes/shared/errors';
import type { LlmCredential } from '../../nodes/shared/llm/generate';

/** Where the credentials point (stand-in servers); unset ones point at a closed port. */
export interface RunnerCredentials {
	telegram?: () => TelegramCredential;
	embeddings?: () => EmbeddingsCredential;
	llm?: () => LlmCredential;
}

/**
 * URL → Fetch's guard: the node's Options → Allowed Private Addresses / Allowed Ports (none by default: the
 * pages on 127.0.0.1 are refused unless a test names them), and a resolver / connector to inject.
 */
export interface RunnerOutbound {
	allowedAddresses?: string;
	allowedPorts?: string;
	resolve?: Resolver;
	connect?: Connector;
}

const CLOSED = 'http://127.0.0.1:9';

/** `run(op, req)` → `{ data, ctx }`; `failure(op, req)` → the ContractError it must raise. */
export function knowledgeRunner(
	pool: () => Pool,
	correlationId: string,
	credentials: RunnerCredentials = {},
	outbound: RunnerOutbound = {},
) {
	const telegram = credentials.telegram ?? (() => ({ accessToken: 'unset', baseUrl: CLOSED }));
	const embeddings = credentials.embeddings ?? (() => ({ api: 'gemini' as const, baseUrl: CLOSED }));
	const llm = credentials.llm ?? (() => ({ api: 'openai' as const, baseUrl: CLOSED }));
	async function run(op: KnowledgeOperation, req: unknown) {
		const state = { ctx: { correlation_id: correlationId } as Record<string, unknown> };
		const data = await op.execute(
			{
				pool: pool(),
				state,
				correlationId,
				http: httpGet,
				fetchUrl: (url, options) =>
					guardedGet(url, { ...options, resolve: outbound.resolve, connect: outbound.connect }),
				outbound: { allowedAddresses: outbound.allowedAddresses, allowedPorts: outbound.allowedPorts },
				postJson: httpPostJson,
				telegram: async () => telegram(),
				embed: (model, texts, task) => embedTexts(httpPostJson, embeddings(), model, texts, task),
				llm: async () => ({ credential: llm(), send: fetchSender }),
			},
			req,
		);
		return { data, ctx: state.ctx };
	}
	async function failure(op: KnowledgeOperation, req: unknown): Promise<ContractError> {
		try {
			await run(op, req);
		} catch (error) {
			assert.ok(error instanceof ContractError, String(error));
			return error;
		}
		assert.fail('expected a ContractError');
	}
	return { run, failure };
}
