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
 * $1: the tables whose size is reported (SIZED_TABLES).
 */

/** Bounds of the NEW → COMPLETED histogram, seconds; db/migrations/017 maas.metric_run_bounds() holds the same. */
import type { Pool } from 'pg';
import type { PipelineFigures } from './exposition';
import { inTransaction } from '../../../shared/postgres/transaction';

export const RUN_DURATION_BUCKETS = [0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600];
/** Bounds of the per-attempt model-time histogram, seconds; 017 maas.metric_attempt_bounds() holds the same. */
export const MODULE_DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Bounds of the job-attempt run-time histogram, seconds; 017 maas.metric_job_bounds() holds the same. */
export const JOB_RUN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** The tables whose size is reported (seed 001 §9 "database", plus the call records of migration 016). */
export const SIZED_TABLES = ['maas.pipeline_runs', 'maas.raw_logs', 'maas.lsm_storage', 'maas.llm_calls'] as const;

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
           WHERE status NOT IN ('COMPLETED', 'FAILED') GROUP BY status) s
  ) AS statuses,
  jsonb_build_object(
    'oldest_new_age', (SELECT extract(epoch FROM now() - min(created_at))::float8
                       FROM maas.pipeline_runs WHERE status = 'NEW'),
    'last_minute', (SELECT count(*)::bigint FROM maas.pipeline_runs
                    WHERE updated_at > now() - interval '1 minute' AND created_at > now() - interval '1 minute')
  ) AS runs,
  (SELECT jsonb_agg(jsonb_build_object(
            'table', t.name,
            'rows', CASE WHEN c.reltuples < 0 THEN NULL ELSE c.reltuples::float8 END,
            'bytes', pg_total_relation_size(c.oid)) ORDER BY t.i)
     FROM unnest($1::text[]) WITH ORDINALITY AS t(name, i) JOIN pg_class c ON c.oid = t.name::regclass
  ) AS tables`;

/**
 * Runs PIPELINE_METRICS in a read-only transaction with JIT off (`SET LOCAL jit = off`: a scrape is a
 * short query; compiling it cost more than running it).
 * @returns the row (PipelineFigures of ./exposition.ts) @throws the pg error
 */
export async function scrapeFigures(pool: Pool): Promise<PipelineFigures> {
	// inTransaction: the checked-out client's 'error' event (connection terminated mid-scrape) is handled
	return inTransaction(pool, async (client) => {
		await client.query('SET TRANSACTION READ ONLY');
		await client.query('SET LOCAL jit = off');
		const { rows } = await client.query(PIPELINE_METRICS, [SIZED_TABLES]);
		return rows[0] as PipelineFigures;
	});
}
