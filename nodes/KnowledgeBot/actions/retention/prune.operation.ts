/**
 * Retention → Prune: WF60 of seed 003. Deletes what the chat policies (core.chat_policies; defaults
 * 90 days raw, 3650 days documents, the table's defaults) no longer keep, in batches (`FOR UPDATE SKIP
 * LOCKED`, so it can run beside the workers), one statement per batch:
 *  - raw retention: raw.telegram_updates (+ their keys) by received_at, tg.messages (+ versions and
 *    attachments) by sent_at, tg.chat_member_events by event_date, and finished ops.jobs (+ runs) by
 *    finished_at (a telegram_update job's payload names its raw row — older ones hold the update itself;
 *    no chat, so the default days; kept while an update key still points at them);
 *  - document retention: content.documents (+ chunks and embeddings) by created_at, audit.qa_turns
 *    (+ citations) by created_at.
 * Input `req`: `{ tenant_id?, chat_id?, batch_size (1–10000, default 500), max_batches (default 20) }`
 *   (no tenant: every tenant; no chat: every chat).
 * Output: `{ deleted: { "<table>": rows }, more: boolean }` (`more`: a table still had a full batch at
 *   max_batches — run again). Errors: 422 `req.<field>`; 503/500 db (the batches done so far stay done).
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { OptionalBigInt, OptionalUuid, parseRequest } from '../../../shared/contracts/request';
import { fromPgError } from '../../../shared/errors';
import { PRUNE_DOCUMENTS } from '../../../shared/statements/content';
import type { RetentionBatch } from '../../../shared/statements/core';
import { PRUNE_FINISHED_JOBS } from '../../../shared/statements/jobs';
import { PRUNE_QA_TURNS } from '../../../shared/statements/qa';
import { PRUNE_RAW_UPDATES } from '../../../shared/statements/telegramRaw';
import { PRUNE_MEMBER_EVENTS, PRUNE_MESSAGES } from '../../../shared/statements/tg';
import type { KnowledgeOperation } from '../types';

export const PruneRequest = z.object({
	tenant_id: OptionalUuid,
	chat_id: OptionalBigInt,
	batch_size: z.number().int().min(1).max(10_000).default(500),
	max_batches: z.number().int().min(1).max(1000).default(20),
});

/** Column defaults of core.chat_policies (migration 001): used for chats without a policy row. */
export const DEFAULT_RETENTION_DAYS = { raw: 90, documents: 3650 } as const;

/**
 * The tables pruned, in this order (a raw update before the finished jobs its keys point at), each with its
 * batch statement from the table's statements module (core.retentionBatch).
 */
const TARGETS: readonly RetentionBatch[] = [
	PRUNE_RAW_UPDATES,
	PRUNE_MESSAGES,
	PRUNE_MEMBER_EVENTS,
	PRUNE_DOCUMENTS,
	PRUNE_FINISHED_JOBS,
	PRUNE_QA_TURNS,
];

async function prune(pool: Pool, req: z.infer<typeof PruneRequest>) {
	const deleted: Record<string, number> = {};
	let more = false;
	for (const target of TARGETS) {
		const sql = target.sql;
		deleted[target.table] = 0;
		for (let batch = 0; batch < req.max_batches; batch++) {
			let count: number;
			try {
				count =
					(await pool.query(sql, [req.tenant_id, req.chat_id, req.batch_size, DEFAULT_RETENTION_DAYS[target.policy]]))
						.rowCount ?? 0;
			} catch (error) {
				throw fromPgError(error, { operation: 'delete', table: target.table });
			}
			deleted[target.table] += count;
			if (count < req.batch_size) break;
			if (batch === req.max_batches - 1) more = true;
		}
	}
	return { deleted, more };
}

export const pruneOperation: KnowledgeOperation = {
	value: 'prune',
	name: 'Prune',
	action: 'Delete data past its retention',
	description:
		'Delete raw updates, messages, documents and Q&A turns older than the chat policy keeps, in batches (WF60)',
	workflow: 'WF60',
	async execute({ pool, state }, raw) {
		const req = parseRequest(PruneRequest, raw ?? {}, { table: 'core.chat_policies' });
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, chat_id: req.chat_id });
		return prune(pool, req);
	},
};
