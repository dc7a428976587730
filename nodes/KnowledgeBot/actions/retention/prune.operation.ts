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
import { FINISHED_JOB_STATUSES } from '../../../shared/jobs/status';
import type { KnowledgeOperation } from '../types';

export const PruneRequest = z.object({
	tenant_id: OptionalUuid,
	chat_id: OptionalBigInt,
	batch_size: z.number().int().min(1).max(10_000).default(500),
	max_batches: z.number().int().min(1).max(1000).default(20),
});

/** Column defaults of core.chat_policies (migration 001): used for chats without a policy row. */
export const DEFAULT_RETENTION_DAYS = { raw: 90, documents: 3650 } as const;

interface Target {
	table: string;
	/** the rows' tenant, chat and age columns, as SQL over alias `t` (joins allowed in `from`) */
	from: string;
	tenant: string;
	chat: string;
	age: string;
	policy: 'raw' | 'documents';
	/** further condition over `t` */
	where?: string;
}

/** The finished statuses as an SQL list of literals ('succeeded', 'failed', 'dead'), from the one JOB_STATUS constant. */
const FINISHED = FINISHED_JOB_STATUSES.map((s) => `'${s}'`).join(', ');

const TARGETS: Target[] = [
	// a raw row is the only copy of its update for a job not finished yet (the payload carries raw_update_id)
	{
		table: 'raw.telegram_updates',
		from: 'raw.telegram_updates t JOIN raw.telegram_update_keys k ON k.raw_update_id = t.id',
		tenant: 't.tenant_id',
		chat: 'k.chat_id',
		age: 't.received_at',
		policy: 'raw',
		where: `NOT EXISTS (SELECT 1 FROM ops.jobs j WHERE j.id = k.job_id AND j.status NOT IN (${FINISHED}))`,
	},
	{
		table: 'tg.messages',
		from: 'tg.messages t',
		tenant: 't.tenant_id',
		chat: 't.chat_id',
		age: 't.sent_at',
		policy: 'raw',
	},
	{
		table: 'tg.chat_member_events',
		from: 'tg.chat_member_events t',
		tenant: 't.tenant_id',
		chat: 't.chat_id',
		age: 't.event_date',
		policy: 'raw',
	},
	{
		table: 'content.documents',
		from: 'content.documents t',
		tenant: 't.tenant_id',
		chat: 't.chat_id',
		age: 't.created_at',
		policy: 'documents',
	},
	// finished jobs keep their payload (raw row id, or the update in older jobs): the raw retention, once no update key points at them
	{
		table: 'ops.jobs',
		from: 'ops.jobs t',
		tenant: 't.tenant_id',
		chat: 'NULL::bigint',
		age: 't.finished_at',
		policy: 'raw',
		where: `t.status IN (${FINISHED}) AND NOT EXISTS (SELECT 1 FROM raw.telegram_update_keys k WHERE k.job_id = t.id)`,
	},
	{
		table: 'audit.qa_turns',
		from: 'audit.qa_turns t JOIN audit.qa_sessions s ON s.session_id = t.session_id',
		tenant: 's.tenant_id',
		chat: 's.chat_id',
		age: 't.created_at',
		policy: 'documents',
	},
];

/** One batch of one table: $1 tenant|null, $2 chat|null, $3 batch size, $4 default days. */
function batchSql(t: Target): string {
	const column = t.policy === 'raw' ? 'retention_days_raw' : 'retention_days_documents';
	return `
WITH victims AS (
  SELECT t.id FROM ${t.from}
  LEFT JOIN core.chat_policies p ON p.tenant_id = ${t.tenant} AND p.chat_id = ${t.chat}
  WHERE ($1::uuid IS NULL OR ${t.tenant} = $1) AND ($2::bigint IS NULL OR ${t.chat} = $2)
    AND ${t.age} < now() - make_interval(days => coalesce(p.${column}, $4::int))${
			t.where
				? `
    AND ${t.where}`
				: ''
		}
  ORDER BY t.id
  LIMIT $3
  FOR UPDATE OF t SKIP LOCKED
)
DELETE FROM ${t.table} d USING victims v WHERE d.id = v.id`;
}

async function prune(pool: Pool, req: z.infer<typeof PruneRequest>) {
	const deleted: Record<string, number> = {};
	let more = false;
	for (const target of TARGETS) {
		const sql = batchSql(target);
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
