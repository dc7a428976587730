-- seed 001 §9: the counters and histograms of Metrics → Pipeline Metrics as a rollup that only grows.
-- Before this, every `_total` and histogram bucket was count(*) / sum() over the rows that exist now, so
-- deleting old pipeline_runs / llm_calls (retention) lowered them and Prometheus read a counter reset.
-- Triggers add to maas.metric_counters in the same transaction as the event; nothing subtracts.
-- One figure = (name, labels) summed over `shard`: a writer adds to the shard of its backend
-- (pg_backend_pid() % 16), so concurrent writers rarely wait on one row lock.
-- Histogram buckets are NOT cumulative here: labels.le is the smallest bound ≥ the value ('+Inf' above
-- the last); the scrape accumulates them (nodes/PipelineCapture/actions/metrics/sql.ts holds the same bounds).
CREATE TABLE maas.metric_counters (
  name    text NOT NULL,
  labels  jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(labels) = 'object'),
  shard   smallint NOT NULL DEFAULT 0,
  value   double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (name, labels, shard)
);

-- The model names that get their own label value (at most 20, first come; later ones count as 'other'),
-- so label cardinality is bounded and a named model never moves to 'other' (its counters never drop).
CREATE TABLE maas.metric_models (
  model  text PRIMARY KEY
);

CREATE FUNCTION maas.metric_add(p_name text, p_labels jsonb, p_value double precision) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO maas.metric_counters AS c (name, labels, shard, value)
  VALUES (p_name, p_labels, pg_backend_pid() % 16, p_value)
  ON CONFLICT (name, labels, shard) DO UPDATE SET value = c.value + EXCLUDED.value
$$;

-- The bucket label of a value: the smallest bound ≥ v as text ('+Inf' above them all).
CREATE FUNCTION maas.metric_le(v double precision, bounds double precision[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(min(b)::text, '+Inf') FROM unnest(bounds) AS u(b) WHERE v <= b
$$;

-- Module labels: the four pipeline steps, anything else is 'other' (bounded cardinality).
CREATE FUNCTION maas.metric_module(m text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE m WHEN 'analysis' THEN 'analyzer' WHEN 'assembly' THEN 'assembler'
                WHEN 'response' THEN 'final_responder' WHEN 'archive' THEN 'archivist' ELSE 'other' END
$$;

CREATE FUNCTION maas.metric_model(m text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM maas.metric_models WHERE model = m) THEN RETURN m; END IF;
  IF m = 'other' THEN RETURN 'other'; END IF;
  -- Rare (a new model): serialise the "fewer than 20 named" check.
  PERFORM pg_advisory_xact_lock(hashtext('maas.metric_models'));
  IF EXISTS (SELECT 1 FROM maas.metric_models WHERE model = m) THEN RETURN m; END IF;
  IF (SELECT count(*) FROM maas.metric_models) < 20 THEN
    INSERT INTO maas.metric_models (model) VALUES (m) ON CONFLICT DO NOTHING;
    RETURN m;
  END IF;
  RETURN 'other';
END $$;

-- NEW → COMPLETED seconds; the same bounds as RUN_DURATION_BUCKETS.
CREATE FUNCTION maas.metric_run_bounds() RETURNS double precision[]
LANGUAGE sql IMMUTABLE AS $$ SELECT ARRAY[0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600]::float8[] $$;
-- Seconds of one model attempt; the same bounds as MODULE_DURATION_BUCKETS.
CREATE FUNCTION maas.metric_attempt_bounds() RETURNS double precision[]
LANGUAGE sql IMMUTABLE AS $$ SELECT ARRAY[0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]::float8[] $$;

-- Whether an analysis_result found context (the rule the scrape used before).
CREATE FUNCTION maas.metric_context_found(a jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE jsonb_typeof(a -> 'context_found')
    WHEN 'object' THEN a -> 'context_found' <> '{}'::jsonb
    WHEN 'array' THEN jsonb_array_length(a -> 'context_found') > 0
    WHEN 'boolean' THEN (a -> 'context_found')::boolean
    WHEN 'string' THEN a ->> 'context_found' <> ''
    WHEN 'number' THEN (a ->> 'context_found')::numeric <> 0
    ELSE false END
$$;

CREATE FUNCTION maas.metric_runs_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE d double precision;
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM maas.metric_add('requests', '{}', 1);
  END IF;
  IF NEW.status IN ('COMPLETED', 'FAILED') AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status) THEN
    PERFORM maas.metric_add('finished_runs', jsonb_build_object('status', NEW.status), 1);
    IF NEW.status = 'COMPLETED' THEN
      d := greatest(extract(epoch FROM NEW.updated_at - NEW.created_at)::float8, 0);
      PERFORM maas.metric_add('completion_duration_seconds',
                              jsonb_build_object('le', maas.metric_le(d, maas.metric_run_bounds())), 1);
      PERFORM maas.metric_add('completion_duration_seconds_sum', '{}', d);
    END IF;
  END IF;
  IF NEW.analysis_result IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.analysis_result IS NULL) THEN
    PERFORM maas.metric_add('analyses', '{}', 1);
    IF maas.metric_context_found(NEW.analysis_result) THEN
      PERFORM maas.metric_add('analyses_context_found', '{}', 1);
    END IF;
  END IF;
  IF NEW.final_context_payload IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.final_context_payload IS NULL) THEN
    PERFORM maas.metric_add('assembled_contexts', '{}', 1);
    PERFORM maas.metric_add('assembled_context_bytes', '{}', octet_length(NEW.final_context_payload));
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER pipeline_runs_metrics AFTER INSERT OR UPDATE OF status, analysis_result, final_context_payload
  ON maas.pipeline_runs FOR EACH ROW EXECUTE FUNCTION maas.metric_runs_event();

-- llm_calls: one statement-level trigger over the inserted rows (a transition table), one upsert per figure
-- and statement — a bulk insert does not update one counter row thousands of times in one transaction.
CREATE FUNCTION maas.metric_llm_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO maas.metric_counters AS c (name, labels, shard, value)
  SELECT x.name, x.labels, pg_backend_pid() % 16, sum(x.v)
  FROM (SELECT maas.metric_model(n.model) AS mo, jsonb_build_object('module', maas.metric_module(n.module)) AS mod,
               n.attempt, n.outcome, n.duration_ms / 1000 AS s, n.prompt_tokens, n.completion_tokens
        FROM new_rows n) r
  CROSS JOIN LATERAL (VALUES
    ('llm_requests', jsonb_build_object('model', r.mo, 'outcome', r.outcome), 1::float8),
    ('llm_request_seconds', jsonb_build_object('model', r.mo, 'outcome', r.outcome), r.s),
    ('llm_tokens', jsonb_build_object('model', r.mo, 'kind', 'prompt'), coalesce(r.prompt_tokens, 0)::float8),
    ('llm_tokens', jsonb_build_object('model', r.mo, 'kind', 'completion'), coalesce(r.completion_tokens, 0)::float8),
    (CASE WHEN r.attempt = 1 THEN 'module_calls' ELSE 'module_retries' END, r.mod, 1),
    ('module_attempt_seconds', r.mod || jsonb_build_object('le', maas.metric_le(r.s, maas.metric_attempt_bounds())), 1),
    ('module_attempt_seconds_sum', r.mod, r.s)) AS x(name, labels, v)
  GROUP BY x.name, x.labels
  -- A fixed order: two writers on one shard take the row locks in the same order (no deadlock).
  ORDER BY x.name, x.labels
  ON CONFLICT (name, labels, shard) DO UPDATE SET value = c.value + EXCLUDED.value;
  RETURN NULL;
END $$;

CREATE TRIGGER llm_calls_metrics AFTER INSERT ON maas.llm_calls REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION maas.metric_llm_event();

-- Job attempts (ops.job_runs), counted when they finish: per job type and run status (succeeded, failed,
-- retry, dead), and their run time (finished_at − started_at) as a histogram per job type.
CREATE FUNCTION maas.metric_job_bounds() RETURNS double precision[]
LANGUAGE sql IMMUTABLE AS $$ SELECT ARRAY[0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]::float8[] $$;

-- Job attempts are NOT counted by a trigger on ops.job_runs: Finish Job ends a whole batch per statement on
-- the queue's hot path, and any counter upsert there cost the queue a third of its throughput (bench:jobs,
-- issue 14 P2: 1.28x pg-boss without, 0.81x with a statement-level trigger). Instead a scrape adds the
-- finished runs that still exist (the view below) to what the rollup holds of the runs already deleted: a job
-- deleted (retention deletes finished jobs with their runs, ON DELETE CASCADE) first moves its finished runs'
-- figures into maas.metric_counters (BEFORE DELETE on ops.jobs, the same transaction), so the sum never goes
-- down. Deleting ops.job_runs rows by hand, without their job, would lower it: nothing in this package does.
CREATE FUNCTION maas.metric_job_run_figures(job_type text, status text, started_at timestamptz, finished_at timestamptz)
RETURNS TABLE (name text, labels jsonb, v double precision)
LANGUAGE sql IMMUTABLE AS $$
  SELECT x.name, x.labels, x.v
  FROM (SELECT jsonb_build_object('job_type', job_type) AS t,
               greatest(extract(epoch FROM finished_at - started_at)::float8, 0) AS d) r
  CROSS JOIN LATERAL (VALUES
    ('job_runs', r.t || jsonb_build_object('status', status), 1::float8),
    ('job_run_seconds', r.t || jsonb_build_object('le', maas.metric_le(r.d, maas.metric_job_bounds())), 1),
    ('job_run_seconds_sum', r.t, r.d)) AS x(name, labels, v)
$$;

-- The figures of the finished runs that exist now (read by every scrape; one pass over ops.job_runs, bounded
-- by the raw retention). Plain aggregates, no function call per row: the bucket is width_bucket()'s count of
-- bounds ≤ d, read as maas.metric_le does (the smallest bound ≥ d, '+Inf' above them all).
CREATE VIEW maas.metric_job_runs_live AS
  WITH r AS MATERIALIZED (
    SELECT j.job_type, r.status, greatest(extract(epoch FROM r.finished_at - r.started_at)::float8, 0) AS d,
           width_bucket(greatest(extract(epoch FROM r.finished_at - r.started_at)::float8, 0), maas.metric_job_bounds()) AS k
    FROM ops.job_runs r JOIN ops.jobs j ON j.id = r.job_id
    WHERE r.finished_at IS NOT NULL)
  SELECT 'job_runs'::text AS name, jsonb_build_object('job_type', job_type, 'status', status) AS labels,
         count(*)::float8 AS value
  FROM r GROUP BY job_type, status
  UNION ALL
  SELECT 'job_run_seconds', jsonb_build_object('job_type', job_type, 'le', le), count(*)::float8
  FROM (SELECT job_type,
               CASE WHEN k > 0 AND (maas.metric_job_bounds())[k] = d THEN (maas.metric_job_bounds())[k]::text
                    WHEN k < cardinality(maas.metric_job_bounds()) THEN (maas.metric_job_bounds())[k + 1]::text
                    ELSE '+Inf' END AS le
        FROM r) b
  GROUP BY job_type, le
  UNION ALL
  SELECT 'job_run_seconds_sum', jsonb_build_object('job_type', job_type), sum(d)
  FROM r GROUP BY job_type;

CREATE FUNCTION maas.metric_job_retired() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO maas.metric_counters AS c (name, labels, shard, value)
  SELECT f.name, f.labels, pg_backend_pid() % 16, sum(f.v)
  FROM ops.job_runs r
  CROSS JOIN LATERAL maas.metric_job_run_figures(OLD.job_type, r.status, r.started_at, r.finished_at) f
  WHERE r.job_id = OLD.id AND r.finished_at IS NOT NULL
  GROUP BY f.name, f.labels
  ORDER BY f.name, f.labels
  ON CONFLICT (name, labels, shard) DO UPDATE SET value = c.value + EXCLUDED.value;
  RETURN OLD;
END $$;

CREATE TRIGGER jobs_metrics_retire BEFORE DELETE ON ops.jobs FOR EACH ROW EXECUTE FUNCTION maas.metric_job_retired();

-- Get Stats (read by every scrape) selects the runs finished in its window: by index, not by a scan.
CREATE INDEX job_runs_finished_idx ON ops.job_runs (finished_at);

-- Backfill from the rows that exist (the same rules as the triggers; job runs are read live, see above). Named models: the 20 with most attempts.
INSERT INTO maas.metric_models (model)
SELECT model FROM maas.llm_calls GROUP BY model ORDER BY count(*) DESC, model LIMIT 20;

INSERT INTO maas.metric_counters (name, labels, value)
SELECT name, labels, sum(v) FROM (
  SELECT 'requests' AS name, '{}'::jsonb AS labels, count(*)::float8 AS v FROM maas.pipeline_runs
  UNION ALL
  SELECT 'finished_runs', jsonb_build_object('status', status), count(*) FROM maas.pipeline_runs
   WHERE status IN ('COMPLETED', 'FAILED') GROUP BY status
  UNION ALL
  SELECT 'completion_duration_seconds', jsonb_build_object('le', maas.metric_le(d, maas.metric_run_bounds())), 1
    FROM (SELECT greatest(extract(epoch FROM updated_at - created_at)::float8, 0) AS d
          FROM maas.pipeline_runs WHERE status = 'COMPLETED') c
  UNION ALL
  SELECT 'completion_duration_seconds_sum', '{}', greatest(extract(epoch FROM updated_at - created_at)::float8, 0)
    FROM maas.pipeline_runs WHERE status = 'COMPLETED'
  UNION ALL
  SELECT 'analyses', '{}', 1 FROM maas.pipeline_runs WHERE analysis_result IS NOT NULL
  UNION ALL
  SELECT 'analyses_context_found', '{}', 1 FROM maas.pipeline_runs
   WHERE analysis_result IS NOT NULL AND maas.metric_context_found(analysis_result)
  UNION ALL
  SELECT 'assembled_contexts', '{}', 1 FROM maas.pipeline_runs WHERE final_context_payload IS NOT NULL
  UNION ALL
  SELECT 'assembled_context_bytes', '{}', octet_length(final_context_payload) FROM maas.pipeline_runs
   WHERE final_context_payload IS NOT NULL
  UNION ALL
  SELECT x.name, x.labels, x.v FROM (
    SELECT coalesce(m.model, 'other') AS mo, maas.metric_module(c.module) AS mod, c.attempt, c.outcome,
           c.duration_ms, c.prompt_tokens, c.completion_tokens
    FROM maas.llm_calls c LEFT JOIN maas.metric_models m ON m.model = c.model) c
  CROSS JOIN LATERAL (VALUES
    ('llm_requests', jsonb_build_object('model', c.mo, 'outcome', c.outcome), 1::float8),
    ('llm_request_seconds', jsonb_build_object('model', c.mo, 'outcome', c.outcome), c.duration_ms / 1000),
    ('llm_tokens', jsonb_build_object('model', c.mo, 'kind', 'prompt'), coalesce(c.prompt_tokens, 0)),
    ('llm_tokens', jsonb_build_object('model', c.mo, 'kind', 'completion'), coalesce(c.completion_tokens, 0)),
    (CASE WHEN c.attempt = 1 THEN 'module_calls' ELSE 'module_retries' END,
     jsonb_build_object('module', c.mod), 1),
    ('module_attempt_seconds', jsonb_build_object('module', c.mod,
       'le', maas.metric_le(c.duration_ms / 1000, maas.metric_attempt_bounds())), 1),
    ('module_attempt_seconds_sum', jsonb_build_object('module', c.mod), c.duration_ms / 1000)) AS x(name, labels, v)
) all_rows
GROUP BY name, labels;
