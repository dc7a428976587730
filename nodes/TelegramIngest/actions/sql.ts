/**
 * The two statements of TelegramIngest (seed 003 WF10). Bind parameters only.
 */

/** Resolves a bot by its webhook key (one round trip). Columns: bot_id, tenant_id, webhook_secret, enabled. */
export const LOOKUP_BOT = `
SELECT b.bot_id, b.tenant_id, b.webhook_secret, (b.is_enabled AND t.is_enabled) AS enabled
FROM core.bots b JOIN core.tenants t ON t.tenant_id = b.tenant_id
WHERE b.bot_key = $1`;

/**
 * Stores one update exactly once, atomically (one statement): raw.telegram_updates (the update as
 * received), ops.jobs (payload = update + meta, dedup key tg:<bot_id>:<update_id>) and
 * raw.telegram_update_keys (the indexed keys and the job id). A duplicate (bot_id, update_id) writes
 * nothing and returns the original job; when the original is committed by a concurrent request after
 * this statement's snapshot, zero rows come back and FIND_DUPLICATE (a fresh snapshot) finds it.
 *
 * $1 bot_id, $2 tenant_id, $3 update_id, $4 update (jsonb), $5 correlation_id, $6 job_type,
 * $7 update_type, $8 max_attempts, $9 dedup_key, $10 trace_id, $11 chat_id, $12 message_id, $13 from_id
 */
export const INGEST_UPDATE = `
WITH raw_row AS (
  INSERT INTO raw.telegram_updates (bot_id, tenant_id, update_id, update, correlation_id)
  VALUES ($1, $2, $3, $4::jsonb, $5)
  ON CONFLICT (bot_id, update_id) DO NOTHING
  RETURNING id
), job AS (
  INSERT INTO ops.jobs (tenant_id, job_type, payload, max_attempts, correlation_id, dedup_key)
  SELECT $2, $6,
         jsonb_build_object('tenant_id', $2::uuid, 'bot_id', $1::uuid, 'raw_update_id', raw_row.id,
                            'update_id', $3::bigint, 'update_type', $7::text, 'trace_id', $10::text,
                            'correlation_id', $5::uuid, 'update', $4::jsonb),
         $8, $5, $9
  FROM raw_row
  RETURNING id
), keys AS (
  INSERT INTO raw.telegram_update_keys
    (raw_update_id, bot_id, tenant_id, update_id, update_type, chat_id, message_id, from_id, job_id)
  SELECT raw_row.id, $1, $2, $3, $7, $11, $12, $13, job.id FROM raw_row, job
  RETURNING raw_update_id, job_id
)
SELECT keys.job_id, keys.raw_update_id, false AS duplicate FROM keys
UNION ALL
SELECT k.job_id, k.raw_update_id, true AS duplicate
FROM raw.telegram_update_keys k
WHERE k.bot_id = $1 AND k.update_id = $3 AND NOT EXISTS (SELECT 1 FROM raw_row)`;

/** The original job of an update stored by another transaction ($1 bot_id, $2 update_id). */
export const FIND_DUPLICATE = `
SELECT job_id, raw_update_id, true AS duplicate FROM raw.telegram_update_keys WHERE bot_id = $1 AND update_id = $2`;
