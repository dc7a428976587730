/** Runs Knowledge Bot operations directly (no n8n) for the integration tests. */
import assert from 'node:assert/strict';
import type { Pool } from 'pg';
import type { KnowledgeOperation } from '../../nodes/KnowledgeBot/actions/types';
import type { TelegramCredential } from '../../nodes/KnowledgeBot/transport/botApi';
import { embedTexts, type EmbeddingsCredential } from '../../nodes/KnowledgeBot/transport/embeddings';
import { fetchSender, httpGet, httpPostJson } from '../../nodes/KnowledgeBot/transport/http';
import { ContractError } from '../../nodes/shared/errors';
import type { LlmCredential } from '../../nodes/shared/llm/generate';

/** Where the credentials point (stand-in servers); unset ones point at a closed port. */
export interface RunnerCredentials {
	telegram?: () => TelegramCredential;
	embeddings?: () => EmbeddingsCredential;
	llm?: () => LlmCredential;
}

const CLOSED = 'http://127.0.0.1:9';

/** `run(op, req)` → `{ data, ctx }`; `failure(op, req)` → the ContractError it must raise. */
export function knowledgeRunner(pool: () => Pool, correlationId: string, credentials: RunnerCredentials = {}) {
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
