/**
 * The statements of raw.telegram_updates, raw.telegram_update_keys and raw.telegram_quarantine (seed 003
 * WF10, Telegram Ingest: nodes/TelegramIngest/actions/ingest.operation.ts; issue 28, one home per table).
 * INGEST_UPDATE and FIND_DUPLICATE are snapshots: the newest migration defining raw.ingest_update (015)
 * holds their text verbatim (test/unit/ingestFunction.test.ts); INGEST_UPDATE's job is built by ./jobs.ts's
 * insertJobOncePerDedupKey (the same text), QUARANTINE's ops.errors row by ./errors.ts's insertErrors.
 * Bind parameters only.
 */
import { retentionBatch } from './core';
import { insertErrors } from './errors';
import { FINISHED_JOB_STATUS_LIST, insertJobOncePerDedupKey } from './jobs';

/**
 * Serialises the writes of one (bot, update_id) until the end of the transaction ($1 bot_id, $2 update_id
 * as int8 text). INGEST_UPDATE and QUARANTINE read different tables (raw.telegram_update_keys / ops.jobs
 * vs raw.telegram_quarantine), so without it a valid body and a poison body with the same update_id,
 * sent at once, could both be kept. Run it first in the transaction: the statement after it takes its
 * snapshot after the lock is granted, so it sees whatever the previous holder committed.
 */
export const LOCK_UPDATE = `SELECT pg_advisory_xact_lock(hashtextextended($1::text || ':' || $2::text, 0))`;

/**
 * Stores one update exactly once in ONE round trip, autocommit (issue 14: was BEGIN, LOCK_UPDATE,
 * INGEST_UPDATE, COMMIT): raw.ingest_update (migration 014) takes LOCK_UPDATE's advisory lock, then runs
 * INGEST_UPDATE and, when it returns nothing, FIND_DUPLICATE — each with a fresh snapshot (a PL/pgSQL
 * statement in READ COMMITTED), so what a previous lock holder committed is seen. When neither finds a
 * row it raises SQLSTATE P0004 (nothing is kept). Data errors of the update (22xxx, 54xxx) propagate
 * with their SQLSTATE. Parameters and columns: those of INGEST_UPDATE.
 */
export const INGEST = `SELECT job_id, raw_update_id, quarantine_id, duplicate
FROM raw.ingest_update($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`;

/** SQLSTATE raised by raw.ingest_update when the update was neither stored nor found as a duplicate. */
export const NEITHER_SQLSTATE = 'P0004';

/** INGEST_UPDATE's $6: the node's "Job Type" (a registered type whose payload is a Telegram update, checked before). */
const JOB_TYPE_PARAM = '$6';

/**
 * The payload of the job INGEST_UPDATE writes (the registry's TelegramUpdatePayload, nodes/shared/jobs/
 * payloads.ts): the raw row's id and the update's meta, not the update itself (the worker reads the raw
 * row). Part of INGEST_UPDATE's snapshot text.
 */
const TELEGRAM_UPDATE_JOB_PAYLOAD = `jsonb_build_object('tenant_id', $2::uuid, 'bot_id', $1::uuid, 'raw_update_id', raw_row.id,
                            'update_id', CASE WHEN abs($3::bigint) < 9007199254740992 THEN to_jsonb($3::bigint) ELSE to_jsonb($3::bigint::text) END,
                            'update_type', $7::text, 'trace_id', $10::text,
                            'correlation_id', $5::uuid)`;

/**
 * The body of raw.ingest_update (the newest migration defining it, 015, holds this text verbatim;
 * test/unit/ingestFunction.test.ts checks it). Stores one update exactly once, atomically (one statement,
 * run after LOCK_UPDATE): raw.telegram_updates (the update as received), ops.jobs (payload = the raw row's id + meta, not the update itself: the
 * worker reads raw.telegram_updates; dedup key tg:<bot_id>:<update_id>) and
 * raw.telegram_update_keys (the indexed keys and the job id). The payload's update_id is a JSON number when
 * JavaScript reads it exactly (|id| < 2^53), else its decimal text (the registry's Int8Id takes both;
 * migration 015, after a property test found 2^53 read back rounded). Nothing is written, and the original comes
 * back (duplicate = true), when (bot_id, update_id) is already stored (its job), when only its job is left
 * (raw row pruned by retention: job_id, raw_update_id NULL), or when it was quarantined as an update
 * (status_code 200: quarantine_id, job_id NULL). A quarantined body that is not an update (400) never
 * makes an update a duplicate. Zero rows: look again with FIND_DUPLICATE.
 *
 * $1 bot_id, $2 tenant_id, $3 update_id (int8 text), $4 update (JSON text, as received), $5 correlation_id,
 * $6 job_type, $7 update_type, $8 max_attempts, $9 dedup_key, $10 trace_id, $11 chat_id, $12 message_id,
 * $13 from_id (int8 text or NULL).
 * Columns: job_id, raw_update_id, quarantine_id, duplicate.
 */
export const INGEST_UPDATE = `
WITH quarantined AS (
  SELECT q.id FROM raw.telegram_quarantine q WHERE q.bot_id = $1 AND q.update_id = $3::bigint AND q.status_code = 200
), prior_job AS (
  SELECT j.id FROM ops.jobs j
  WHERE j.dedup_key = $9::text
    AND NOT EXISTS (SELECT 1 FROM raw.telegram_update_keys k WHERE k.bot_id = $1 AND k.update_id = $3::bigint)
), raw_row AS (
  INSERT INTO raw.telegram_updates (bot_id, tenant_id, update_id, update, correlation_id)
  SELECT $1, $2, $3::bigint, $4::jsonb, $5
  WHERE NOT EXISTS (SELECT 1 FROM quarantined) AND NOT EXISTS (SELECT 1 FROM prior_job)
  ON CONFLICT (bot_id, update_id) DO NOTHING
  RETURNING id
), job AS (
  ${insertJobOncePerDedupKey(
		{
			tenant_id: '$2',
			job_type: JOB_TYPE_PARAM,
			payload: TELEGRAM_UPDATE_JOB_PAYLOAD,
			max_attempts: '$8',
			correlation_id: '$5',
			dedup_key: '$9::text',
		},
		'raw_row',
	)}
), keys AS (
  INSERT INTO raw.telegram_update_keys
    (raw_update_id, bot_id, tenant_id, update_id, update_type, chat_id, message_id, from_id, job_id)
  SELECT raw_row.id, $1, $2, $3::bigint, $7, $11::bigint, $12::bigint, $13::bigint, job.id FROM raw_row, job
  RETURNING raw_update_id, job_id
)
SELECT keys.job_id, keys.raw_update_id, NULL::bigint AS quarantine_id, false AS duplicate FROM keys
UNION ALL
SELECT k.job_id, k.raw_update_id, NULL::bigint, true
FROM raw.telegram_update_keys k
WHERE k.bot_id = $1 AND k.update_id = $3::bigint AND NOT EXISTS (SELECT 1 FROM raw_row)
UNION ALL
SELECT prior_job.id, NULL::bigint, NULL::bigint, true FROM prior_job
UNION ALL
SELECT NULL::bigint, NULL::bigint, quarantined.id, true FROM quarantined`;

/**
 * The original of an update kept by another transaction, in raw.ingest_update's numbering ($1 bot_id,
 * $3 update_id, $9 dedup_key): its keys row, its job alone (raw row pruned), or its quarantine row as an
 * update (status_code 200). Run by raw.ingest_update when INGEST_UPDATE returned nothing.
 */
export const FIND_DUPLICATE = `
SELECT job_id, raw_update_id, NULL::bigint AS quarantine_id, true AS duplicate
FROM raw.telegram_update_keys WHERE bot_id = $1 AND update_id = $3::bigint
UNION ALL
SELECT id, NULL::bigint, NULL::bigint, true FROM ops.jobs WHERE dedup_key = $9::text
UNION ALL
SELECT NULL::bigint, NULL::bigint, id, true FROM raw.telegram_quarantine
WHERE bot_id = $1 AND update_id = $3::bigint AND status_code = 200
LIMIT 1`;

/**
 * QUARANTINE's ops.errors row (the one writer, ./errors.ts insertErrors): kind validation, status 422, not
 * retryable, no job; correlation $10, tenant $2, workflow and source $11, node $12, message $13, details
 * $14 + the quarantine row's id, contract version $16; only when $15 is true, for the row `q` inserted.
 */
const QUARANTINE_ERROR_ROW = insertErrors(
	{
		correlation_id: '$10',
		tenant_id: '$2',
		job_id: 'NULL',
		workflow: '$11',
		node: '$12',
		kind: "'validation'",
		status_code: '422',
		retryable: 'false',
		message: '$13',
		details: "$14::jsonb || jsonb_build_object('quarantine_id', q.id)",
		contract_version: '$16',
		source: '$11',
	},
	{ from: 'FROM q WHERE $15::boolean' },
);

/**
 * Keeps one body in raw.telegram_quarantine, exactly once, and (when $15 is true) writes its one
 * ops.errors row in the same statement, so both exist or neither (kind validation, status_code 422 —
 * the update is unprocessable — while Telegram was answered $8 = 200: details.quarantine.answered).
 * A re-delivery writes nothing and returns the first row (duplicate = true): same bot and same bytes
 * ($4) always; same bot and same update_id only when $17 is given (a quarantined UPDATE, answered 200,
 * whose update_id was read from the parsed body) — then an update_id already stored normally (its keys
 * row, or its job alone) is a duplicate too (job_id of the original). A body that is not an update (400)
 * or was not parsed (too_large) passes $17 and $18 NULL: it is a duplicate only by its bytes.
 * Run after LOCK_UPDATE when $17 is given.
 *
 * $1 bot_id, $2 tenant_id, $3 body (bytea), $4 body_sha256 (bytea), $5 update_id (int8 text or NULL, kept
 * for information), $6 body_source, $7 reason, $8 status_code, $9 details (jsonb text), $10 correlation_id,
 * $11 workflow (ops.errors.workflow and source), $12 node, $13 message, $14 ops.errors details (jsonb text),
 * $15 write the ops.errors row, $16 contract_version, $17 update_id identifying the update (int8 text or
 * NULL), $18 its job dedup_key (or NULL).
 * Columns: quarantine_id, error_id, job_id, raw_update_id, duplicate.
 */
export const QUARANTINE = `
WITH stored AS (
  SELECT k.job_id, k.raw_update_id FROM raw.telegram_update_keys k
  WHERE k.bot_id = $1 AND k.update_id = $17::bigint
  UNION ALL
  SELECT j.id, NULL::bigint FROM ops.jobs j
  WHERE j.dedup_key = $18::text
    AND NOT EXISTS (SELECT 1 FROM raw.telegram_update_keys k WHERE k.bot_id = $1 AND k.update_id = $17::bigint)
), q AS (
  INSERT INTO raw.telegram_quarantine
    (bot_id, tenant_id, update_id, body, body_source, body_sha256, reason, status_code, details, correlation_id)
  SELECT $1, $2, $5::bigint, $3, $6, $4, $7, $8, $9::jsonb, $10 WHERE NOT EXISTS (SELECT 1 FROM stored)
  ON CONFLICT DO NOTHING
  RETURNING id
), e AS (
  ${QUARANTINE_ERROR_ROW}
)
SELECT q.id AS quarantine_id, (SELECT id FROM e) AS error_id, NULL::bigint AS job_id, NULL::bigint AS raw_update_id, false AS duplicate FROM q
UNION ALL
(SELECT x.id, NULL::bigint, NULL::bigint, NULL::bigint, true FROM raw.telegram_quarantine x
 WHERE NOT EXISTS (SELECT 1 FROM q) AND NOT EXISTS (SELECT 1 FROM stored) AND x.bot_id = $1
   AND (x.body_sha256 = $4 OR (x.status_code = 200 AND x.update_id = $17::bigint))
 ORDER BY x.id LIMIT 1)
UNION ALL
(SELECT NULL::bigint, NULL::bigint, stored.job_id, stored.raw_update_id, true FROM stored LIMIT 1)`;

/**
 * A quarantined body committed by a concurrent request ($1 bot_id, $2 body_sha256, $3 the update_id
 * identifying the update, or NULL: see QUARANTINE's $17).
 */
export const FIND_QUARANTINED = `
SELECT id AS quarantine_id, NULL::bigint AS error_id, NULL::bigint AS job_id, NULL::bigint AS raw_update_id, true AS duplicate
FROM raw.telegram_quarantine WHERE bot_id = $1 AND (body_sha256 = $2 OR (status_code = 200 AND update_id = $3::bigint))
ORDER BY id LIMIT 1`;

// --- read by the Knowledge Bot (WF20) and pruned by its Retention (WF60) ---

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
