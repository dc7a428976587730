/**
 * Job → Get Stats (seed 001 monitoring): the ops.jobs queue by job type, in ONE query
 * (nodes/shared/statements/jobs.ts JOB_STATS).
 * Input: `window_seconds` (1 … 2,592,000; default 3600), `job_type` (one or comma-separated; empty: every
 * registered type plus every type found in ops.jobs).
 * Output: one item per job type, sorted by job_type:
 * `{ job_type, counts: { queued, running, succeeded, failed, dead }, oldest_queued_age_seconds,
 *    oldest_due_wait_seconds, oldest_running_age_seconds, window_seconds, runs, failures, run_ms: { p50, p95 } }` —
 *  - counts: jobs per status now;
 *  - oldest_queued_age_seconds: now − created_at of the oldest queued job (null: none queued);
 *  - oldest_due_wait_seconds: how long the oldest due queued job has waited past next_run_at (null: none due);
 *  - oldest_running_age_seconds: now − locked_at of the running job claimed longest ago (null: none running);
 *  - runs / failures: attempts (ops.job_runs) finished in the last window_seconds, and of those the failed
 *    ones (run status failed, retry or dead);
 *  - run_ms: p50 / p95 of those attempts' finished_at − started_at in ms (percentile_cont; null: no run).
 * Errors: 422 (window_seconds, job_type); 503.
 */
import { jobTypeList } from '../../../shared/jobs/queue';
import { jobStats, STATS_WINDOW_SECONDS } from '../../../shared/jobs/stats';
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';

export const getStatsOperation: PipelineOperation = {
	value: 'getStats',
	name: 'Get Stats',
	action: 'Get queue stats',
	description: 'Counts per job type and status, oldest queued age, runs and failures in a window, p50/p95 run time',
	fields: fieldsOf({ resource: 'job', operation: 'getStats' }, [
		{
			displayName: 'Window (Seconds)',
			name: 'windowSeconds',
			type: 'number',
			default: STATS_WINDOW_SECONDS,
			description: 'Runs finished this long ago or later are counted (1–2592000)',
		},
		{
			displayName: 'Job Type',
			name: 'jobType',
			default: '',
			description: 'Only these job types (comma-separated); empty: every registered type and every type in ops.jobs',
		},
	]),
	async execute(deps, input) {
		const stats = await jobStats(deps.pool, {
			window_seconds: input.window_seconds,
			job_types: jobTypeList(input.job_type),
		});
		return { many: stats as unknown as Record<string, unknown>[], output: 0 };
	},
};
