/** Runs Knowledge Bot operations directly (no n8n) for the integration tests. */
import assert from 'node:assert/strict';
import type { Pool } from 'pg';
import type { KnowledgeOperation } from '../../nodes/KnowledgeBot/actions/types';
import { httpGet } from '../../nodes/KnowledgeBot/transport/http';
import type { TelegramCredential } from '../../nodes/KnowledgeBot/transport/telegramFiles';
import { ContractError } from '../../nodes/shared/errors';

/** `run(op, req)` → `{ data, ctx }`; `failure(op, req)` → the ContractError it must raise. `telegram`: the Bot API credential. */
export function knowledgeRunner(pool: () => Pool, correlationId: string, telegram: () => TelegramCredential = () => ({ accessToken: 'unset', baseUrl: 'http://127.0.0.1:9' })) {
	async function run(op: KnowledgeOperation, req: unknown) {
		const state = { ctx: { correlation_id: correlationId } as Record<string, unknown> };
		return { data: await op.execute({ pool: pool(), state, correlationId, http: httpGet, telegram: async () => telegram() }, req), ctx: state.ctx };
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
