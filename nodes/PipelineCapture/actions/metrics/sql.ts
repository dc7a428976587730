/**
 * The one query of Metrics → Pipeline Metrics (seed 001 §9): every pipeline, module, table and model-API
 * figure in one round trip, as one row of jsonb columns (numbers stay numbers). Reads maas.pipeline_runs,
 * maas.raw_logs, maas.lsm_storage and maas.llm_calls; writes nothing.
 * $1: run-duration bucket bounds (seconds, ascending); $2: module-duration bucket bounds (seconds, ascending).
 * Histogram buckets are cumulative counts of values ≤ each bound (Prometheus `le`), in bound order.
 */

/** Bounds of the NEW → COMPLETED histogram, seconds (seed 001 §1.2: a cycle takes seconds to tens of seconds). */
export const RUN_DURATION_BUCKETS = [0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600];
/** Bounds of the per-module call histogram, seconds (a 429 waits 60 s; a timeout is 30 s by default). */
export const MODULE_DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** The tables whose size is reported (seed 001 §9 "database", plus the call records of migration 016). */
export const SIZED_TABLES = ['maas.pipeline_runs', 'maas.raw_logs', 'maas.lsm_storage', 'maas.llm_calls'] as const;

export const PIPELINE_METRICS = `
WITH statuses AS (
  SELECT status, count(*)::bigint AS n FROM maas.pipeline_runs GROUP BY status
), runs AS (
  SELECT count(*)::bigint AS total,
         count(*) FILTER (WHERE created_at > now() - interval '1 minute')::bigint AS last_minute,
         extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'NEW'))::float8 AS oldest_new_age,
         count(*) FILTER (WHERE analysis_result IS NOT NULL)::bigint AS analyses,
         count(*) FILTER (WHERE CASE jsonb_typeof(analysis_result -> 'context_found')
             WHEN 'object' THEN analysis_result -> 'context_found' <> '{}'::jsonb
             WHEN 'array' THEN jsonb_array_length(analysis_result -> 'context_found') > 0
             WHEN 'boolean' THEN (analysis_result -> 'context_found')::boolean
             WHEN 'string' THEN analysis_result ->> 'context_found' <> ''
             WHEN 'number' THEN (analysis_result ->> 'context_found')::numeric <> 0
             ELSE false END)::bigint AS context_found,
         count(final_context_payload)::bigint AS contexts,
         coalesce(sum(octet_length(final_context_payload)), 0)::float8 AS context_bytes
  FROM maas.pipeline_runs
), completed AS (
  -- Complete Step's RESPONSE_DONE sets updated_at; Archive keeps it (it sets archived_at only).
  SELECT extract(epoch FROM updated_at - created_at)::float8 AS d FROM maas.pipeline_runs WHERE status = 'COMPLETED'
), run_hist AS (
  SELECT jsonb_build_object(
           'buckets', (SELECT jsonb_agg(n ORDER BY b) FROM (
               SELECT b, count(c.d) FILTER (WHERE c.d <= b) AS n
               FROM unnest($1::float8[]) AS b LEFT JOIN completed c ON true GROUP BY b) x),
           'sum', (SELECT coalesce(sum(d), 0) FROM completed),
           'count', (SELECT count(*) FROM completed)) AS h
), calls AS (
  -- One Generate call: its attempts share call_id; its time runs from the first attempt's start to the
  -- last attempt's end (retry waits included).
  SELECT CASE module WHEN 'analysis' THEN 'analyzer' WHEN 'assembly' THEN 'assembler'
                     WHEN 'response' THEN 'final_responder' WHEN 'archive' THEN 'archivist' ELSE module END AS module,
         extract(epoch FROM max(started_at + duration_ms * interval '1 millisecond') - min(started_at))::float8 AS d,
         count(*)::bigint AS attempts
  FROM maas.llm_calls GROUP BY 1, call_id
), module_hist AS (
  SELECT coalesce(jsonb_agg(jsonb_build_object(
           'module', m.module, 'calls', m.calls, 'retries', m.retries, 'sum', m.sum,
           'buckets', (SELECT jsonb_agg(n ORDER BY b) FROM (
               SELECT b, count(*) FILTER (WHERE c.d <= b) AS n
               FROM unnest($2::float8[]) AS b CROSS JOIN calls c WHERE c.module = m.module GROUP BY b) x))
           ORDER BY m.module), '[]'::jsonb) AS modules
  FROM (SELECT module, count(*)::bigint AS calls, sum(attempts - 1)::bigint AS retries, sum(d)::float8 AS sum
        FROM calls GROUP BY module) m
), models AS (
  SELECT coalesce(jsonb_agg(jsonb_build_object(
           'model', model, 'outcome', outcome, 'attempts', attempts,
           'prompt_tokens', prompt_tokens, 'completion_tokens', completion_tokens, 'seconds', seconds)
           ORDER BY model, outcome), '[]'::jsonb) AS models
  FROM (SELECT model, outcome, count(*)::bigint AS attempts,
               coalesce(sum(prompt_tokens), 0)::bigint AS prompt_tokens,
               coalesce(sum(completion_tokens), 0)::bigint AS completion_tokens,
               sum(duration_ms)::float8 / 1000 AS seconds
        FROM maas.llm_calls GROUP BY model, outcome) g
), tables AS (
  SELECT jsonb_build_array(
    jsonb_build_object('table', 'maas.pipeline_runs', 'rows', (SELECT total FROM runs),
                       'bytes', pg_total_relation_size('maas.pipeline_runs'::regclass)),
    jsonb_build_object('table', 'maas.raw_logs', 'rows', (SELECT count(*) FROM maas.raw_logs),
                       'bytes', pg_total_relation_size('maas.raw_logs'::regclass)),
    jsonb_build_object('table', 'maas.lsm_storage', 'rows', (SELECT count(*) FROM maas.lsm_storage),
                       'bytes', pg_total_relation_size('maas.lsm_storage'::regclass)),
    jsonb_build_object('table', 'maas.llm_calls', 'rows', (SELECT count(*) FROM maas.llm_calls),
                       'bytes', pg_total_relation_size('maas.llm_calls'::regclass))) AS tables
)
SELECT (SELECT coalesce(jsonb_object_agg(status, n), '{}'::jsonb) FROM statuses) AS statuses,
       (SELECT to_jsonb(runs) FROM runs) AS runs,
       (SELECT h FROM run_hist) AS run_duration,
       (SELECT modules FROM module_hist) AS modules,
       (SELECT models FROM models) AS models,
       (SELECT tables FROM tables) AS tables`;
