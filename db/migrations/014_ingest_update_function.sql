-- 014: Telegram Ingest stores an update in one round trip (issue 14). raw.ingest_update runs, in the
-- caller's (implicit) transaction: the advisory lock of (bot, update_id) — the same key as
-- nodes/TelegramIngest/actions/sql.ts LOCK_UPDATE, which the quarantine path still takes — then
-- INGEST_UPDATE and, when it returns nothing, FIND_DUPLICATE. PL/pgSQL gives each statement a fresh
-- snapshot (READ COMMITTED), taken after the lock is granted. Both statements are sql.ts's text verbatim
-- (test/unit/ingestFunction.test.ts checks it): change them with a new migration.
-- Parameters: $1 bot_id, $2 tenant_id, $3 update_id (int8 text), $4 update (JSON text), $5 correlation_id,
-- $6 job_type, $7 update_type, $8 max_attempts, $9 dedup_key, $10 trace_id, $11 chat_id, $12 message_id,
-- $13 from_id (int8 text or NULL). Raises P0004 when the update was neither stored nor found.
CREATE FUNCTION raw.ingest_update(uuid, uuid, text, text, uuid, text, text, integer, text, text, text, text, text)
RETURNS TABLE (job_id bigint, raw_update_id bigint, quarantine_id bigint, duplicate boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended($1::text || ':' || $3::text, 0));
  RETURN QUERY
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
  INSERT INTO ops.jobs (tenant_id, job_type, payload, max_attempts, correlation_id, dedup_key)
  SELECT $2, $6,
         jsonb_build_object('tenant_id', $2::uuid, 'bot_id', $1::uuid, 'raw_update_id', raw_row.id,
                            'update_id', $3::bigint, 'update_type', $7::text, 'trace_id', $10::text,
                            'correlation_id', $5::uuid),
         $8, $5, $9::text
  FROM raw_row
  ON CONFLICT (dedup_key) DO NOTHING
  RETURNING id
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
SELECT NULL::bigint, NULL::bigint, quarantined.id, true FROM quarantined;
  IF FOUND THEN RETURN; END IF;
  RETURN QUERY
SELECT job_id, raw_update_id, NULL::bigint AS quarantine_id, true AS duplicate
FROM raw.telegram_update_keys WHERE bot_id = $1 AND update_id = $3::bigint
UNION ALL
SELECT id, NULL::bigint, NULL::bigint, true FROM ops.jobs WHERE dedup_key = $9::text
UNION ALL
SELECT NULL::bigint, NULL::bigint, id, true FROM raw.telegram_quarantine
WHERE bot_id = $1 AND update_id = $3::bigint AND status_code = 200
LIMIT 1;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'update neither stored nor found as a duplicate' USING ERRCODE = 'P0004';
  END IF;
END
$fn$;
