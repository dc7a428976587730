-- 015: raw.ingest_update writes the job payload's update_id exactly (issue 14). In 014 it was always a
-- JSON number, which JavaScript reads rounded beyond 2^53 (node-postgres parses jsonb with JSON.parse), so a
-- payload with update_id 9007199254740993 did not pass the job-type registry's schema
-- (test/integration/telegramIngest.property.test.ts found it). Now: a number when |update_id| < 2^53, else
-- its decimal text. Same signature, parameters and behaviour otherwise; INGEST_UPDATE and FIND_DUPLICATE are
-- sql.ts's text verbatim (test/unit/ingestFunction.test.ts reads the latest migration defining the function).
CREATE OR REPLACE FUNCTION raw.ingest_update(uuid, uuid, text, text, uuid, text, text, integer, text, text, text, text, text)
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
                            'update_id', CASE WHEN abs($3::bigint) < 9007199254740992 THEN to_jsonb($3::bigint) ELSE to_jsonb($3::bigint::text) END,
                            'update_type', $7::text, 'trace_id', $10::text,
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
