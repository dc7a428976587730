/** Queue stats (seed 001 monitoring): one query over ops.jobs and ops.job_runs, see JOB_STATS. */
import type { Pool } from 'pg';
import { fromPgError } from '../errors';
import { positiveInt } from './queue';
import { JOB_TYPE_LIST } from './registry';
import { JOB_STATS } from '../statements/jobs';

/** Default window of the run figures: the last hour. */
export const STATS_WINDOW_SECONDS = 3600;

/** One job type's figures (numbers; null where there is nothing to measure). */
export interface JobTypeStats {
	job_type: string;
	/** Jobs per status now. */
	counts: { queued: number; running: number; succeeded: number; failed: number; dead: number };
	/** now − created_at of the oldest queued job, seconds (null: none queued). */
	oldest_queued_age_seconds: number | null;
	/** How long the oldest due queued job has waited past its next_run_at, seconds (null: none due). */
	oldest_due_wait_seconds: number | null;
	/**
	 * now − locked_at of the running job claimed longest ago, seconds (null: none running): a job held
	 * `running` by a dead worker grows it until Release Stale puts the job back.
	 */
	oldest_running_age_seconds: number | null;
	/** Attempts (ops.job_runs) finished in the window. */
	window_seconds: number;
	runs: number;
	/** Of those, attempts that failed (run status failed, retry or dead). */
	failures: number;
	/** p50 / p95 of those attempts' run time (finished_at − started_at), ms (null: no run). */
	run_ms: { p50: number | null; p95: number | null };
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/**
 * Stats of every registered job type and every type found in ops.jobs (or only `jobTypes`), by job_type.
 * @param windowSeconds 1 … 30 days (422 naming `window_seconds` otherwise)
 * @throws ContractError 422; 503/500 db
 */
export async function jobStats(
	pool: Pool,
	input: { window_seconds?: unknown; job_types?: string[] | null },
): Promise<JobTypeStats[]> {
	const window = positiveInt(input.window_seconds ?? STATS_WINDOW_SECONDS, 'window_seconds', 86_400 * 30);
	let rows: Record<string, unknown>[];
	try {
		rows = (
			await pool.query(JOB_STATS, [
				window,
				JOB_TYPE_LIST,
				input.job_types && input.job_types.length > 0 ? input.job_types : null,
			])
		).rows;
	} catch (error) {
		throw fromPgError(error, { operation: 'select', table: 'ops.jobs' });
	}
	return rows.map((r) => ({
		job_type: String(r.job_type),
		counts: {
			queued: Number(r.queued),
			running: Number(r.running),
			succeeded: Number(r.succeeded),
			failed: Number(r.failed),
			dead: Number(r.dead),
		},
		oldest_queued_age_seconds: num(r.oldest_queued_age_seconds),
		oldest_due_wait_seconds: num(r.oldest_due_wait_seconds),
		oldest_running_age_seconds: num(r.oldest_running_age_seconds),
		window_seconds: window,
		runs: Number(r.runs),
		failures: Number(r.failures),
		run_ms: { p50: num(r.p50_ms), p95: num(r.p95_ms) },
	}));
}
