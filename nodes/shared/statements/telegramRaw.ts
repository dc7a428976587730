/**
 * The statements of raw.telegram_* (WF10: Telegram updates as received, their keys and the quarantine), as
 * named texts, in one place as pg-boss keeps its `plans`. Bind parameters only.
 */

// --- Knowledge Bot (issue 28 move) ---
import { FINISHED_JOB_STATUS_LIST } from './jobs';
import { retentionBatch } from './core';

/** Update → Process (WF20): the update stored as raw row $1 of tenant $2 (WF10's job payload names it). Column: update. */
export const RAW_UPDATE = 'SELECT update FROM raw.telegram_updates WHERE id = $1 AND tenant_id = $2';

/**
 * Retention → Prune (WF60), one batch (core.retentionBatch): raw updates (+ their keys) past the chat
 * policy's raw retention, by received_at — kept while a job not finished yet names them (the raw row is the
 * only copy of its update: the job's payload carries raw_update_id).
 */
export const PRUNE_RAW_UPDATES = retentionBatch({
	table: 'raw.telegram_updates',
	from: 'raw.telegram_updates t JOIN raw.telegram_update_keys k ON k.raw_update_id = t.id',
	tenant: 't.tenant_id',
	chat: 'k.chat_id',
	age: 't.received_at',
	policy: 'raw',
	where: `NOT EXISTS (SELECT 1 FROM ops.jobs j WHERE j.id = k.job_id AND j.status NOT IN (${FINISHED_JOB_STATUS_LIST}))`,
});
