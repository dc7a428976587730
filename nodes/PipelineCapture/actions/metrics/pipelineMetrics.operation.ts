/**
 * Metrics → Pipeline Metrics (seed 001 §9): the pipeline's metrics as a Prometheus scrape, computed from
 * the database only, so every n8n process (queue mode too) answers the same. Two queries sent at once:
 * PIPELINE_METRICS (shared/statements/metrics.ts, run by ./scrape.ts: the counter rollup of db/migrations/017, the unfinished runs, table sizes
 * from pg_class) and Job → Get Stats' jobStats (the ops.jobs queue per job type). The text is written by prom-client in a fresh Registry (./exposition.ts);
 * every metric (name, type, labels, unit) is listed in docs/metrics.md.
 * Input: `window_seconds` — the window Get Stats reads ops.job_runs over (1 … 2,592,000; default 3600). Since
 * migration 017 no metric shows the window figures (finished attempts are the counter contracts_job_runs_total
 * and the histogram contracts_job_run_duration_seconds); the field stays so saved workflows stay valid, and
 * a short window keeps Get Stats' read of ops.job_runs small (index job_runs_finished_idx).
 * Output: one item `{ content_type: "text/plain; version=0.0.4; charset=utf-8", text }`, for a Respond to
 * Webhook node answering with text and that Content-Type header (workflows-json/maas/M18_metrics.json).
 * Errors: 422 window_seconds; 503 database unreachable.
 */
import { fromPgError } from '../../../shared/errors';
import { jobStats, STATS_WINDOW_SECONDS } from '../../../shared/jobs/stats';
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { exposition, PROMETHEUS_CONTENT_TYPE } from './exposition';
import { scrapeFigures } from './scrape';

export const pipelineMetricsOperation: PipelineOperation = {
	value: 'pipelineMetrics',
	name: 'Pipeline Metrics',
	action: 'Get the pipeline metrics for Prometheus',
	description: 'Runs, modules, table sizes, model calls and the job queue in the Prometheus text format',
	fields: fieldsOf({ resource: 'metrics', operation: 'pipelineMetrics' }, [
		{
			displayName: 'Job Window (Seconds)',
			name: 'windowSeconds',
			type: 'number',
			default: STATS_WINDOW_SECONDS,
			// Kept as snapshotted (test/fixtures/nodeDescriptions.json): no metric shows the window since 017.
			description: 'Job runs finished this long ago or later are counted (1–2592000)',
		},
	]),
	async execute(deps, input) {
		const [figures, jobs] = await Promise.all([
			scrapeFigures(deps.pool).catch((error: unknown) => {
				throw fromPgError(error, { operation: 'select', table: 'maas.pipeline_runs' });
			}),
			jobStats(deps.pool, { window_seconds: input.window_seconds }),
		]);
		return { data: { content_type: PROMETHEUS_CONTENT_TYPE, text: await exposition(figures, jobs) }, output: 0 };
	},
};
