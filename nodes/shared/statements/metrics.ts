/**
 * The statements of the Prometheus figures kept in the database (db/migrations/017): the counter rollup
 * maas.metric_counters (triggers add to it in the transaction of the event), the view
 * maas.metric_job_runs_live and the model labels maas.metric_models, as named texts. Bind parameters only.
 * User: Pipeline Capture's Metrics → Pipeline Metrics (seed 001 §9; PipelineCapture/actions/metrics/scrape.ts
 * runs PIPELINE_METRICS, ./exposition.ts there writes the text). Every metric is listed in docs/metrics.md.
 */
import { RUN_STATUS } from './pipelineRuns';

/**
 * The tables whose size is reported (seed 001 §9 "database", plus the call records of migration 016):
 * PIPELINE_METRICS' $1.
 */
export const SIZED_TABLES = ['maas.pipeline_runs', 'maas.raw_logs', 'maas.lsm_storage', 'maas.llm_calls'] as const;

/**
 * The one query of Metrics → Pipeline Metrics (seed 001 §9), one row of jsonb columns (numbers stay
 * numbers); writes nothing. Its cost does not grow with the history:
 * - counters and histograms come from the rollup maas.metric_counters (db/migrations/017), which
 *   triggers add to in the same transaction as the event and nothing subtracts from — so deleting old
 *   pipeline_runs / llm_calls (retention) never lowers a counter. One row per name, label set and shard.
 *   Job attempts are the exception (no trigger on the queue's hot path): the finished ops.job_runs that
 *   exist (view maas.metric_job_runs_live, one pass over them) plus what the rollup keeps of deleted jobs.
 * - gauges: the runs not finished yet per status (the partial index pipeline_runs_status_idx), the oldest
 *   NEW run, the runs created in the last minute (through pipeline_runs_changed_idx: updated_at ≥
 *   created_at), and table sizes from pg_class (reltuples is PostgreSQL's estimate, kept by ANALYZE and
 *   autovacuum; null before the table was first analysed) and pg_total_relation_size.
 * $1: the tables whose size is reported (SIZED_TABLES, text[]).
 * Columns (PipelineFigures of PipelineCapture/actions/metrics/exposition.ts): counters (jsonb array of
 * `{ name, labels, value }`, summed over shards), statuses (jsonb object status → runs not finished),
 * runs (jsonb `{ oldest_new_age: seconds | null, last_minute }`), tables (jsonb array of
 * `{ table, rows: estimate | null, bytes }`, in the order of $1).
 */
export const PIPELINE_METRICS = `
SELECT
  (SELECT coalesce(jsonb_agg(jsonb_build_object('name', name, 'labels', labels, 'value', value)), '[]'::jsonb)
     FROM (SELECT name, labels, sum(value)::float8 AS value
           FROM (SELECT name, labels, value FROM maas.metric_counters
                 UNION ALL SELECT name, labels, value FROM maas.metric_job_runs_live) a
           GROUP BY name, labels) c
  ) AS counters,
  (SELECT coalesce(jsonb_object_agg(status, n), '{}'::jsonb)
     FROM (SELECT status, count(*)::bigint AS n FROM maas.pipeline_runs
           WHERE status NOT IN ('${RUN_STATUS.COMPLETED}', '${RUN_STATUS.FAILED}') GROUP BY status) s
  ) AS statuses,
  jsonb_build_object(
    'oldest_new_age', (SELECT extract(epoch FROM now() - min(created_at))::float8
                       FROM maas.pipeline_runs WHERE status = '${RUN_STATUS.NEW}'),
    'last_minute', (SELECT count(*)::bigint FROM maas.pipeline_runs
                    WHERE updated_at > now() - interval '1 minute' AND created_at > now() - interval '1 minute')
  ) AS runs,
  (SELECT jsonb_agg(jsonb_build_object(
            'table', t.name,
            'rows', CASE WHEN c.reltuples < 0 THEN NULL ELSE c.reltuples::float8 END,
            'bytes', pg_total_relation_size(c.oid)) ORDER BY t.i)
     FROM unnest($1::text[]) WITH ORDINALITY AS t(name, i) JOIN pg_class c ON c.oid = t.name::regclass
  ) AS tables`;
