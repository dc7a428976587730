/**
 * The Prometheus exposition of Metrics → Pipeline Metrics (seed 001 §9; every metric is listed in
 * docs/metrics.md): the figures of PIPELINE_METRICS (./sql.ts) and Job → Get Stats (jobStats) put in a
 * fresh prom-client Registry per scrape — no metric state outlives the call, so every n8n process
 * (queue mode too) answers the same for the same database. Counters and gauges are prom-client
 * Counter / Gauge objects; a histogram whose buckets PostgreSQL counted is a metric object whose `get()`
 * returns them (prom-client's collector interface), so prom-client writes every line and escapes every
 * label value (backslash, double quote, line feed).
 */
import { Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { JobTypeStats } from '../../../shared/jobs/stats';
import { MODULE_DURATION_BUCKETS, RUN_DURATION_BUCKETS } from './sql';

/** Content type of the text: Prometheus text format 0.0.4. */
export const PROMETHEUS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** The pipeline_runs statuses (db/migrations/003), each reported even at 0. */
export const RUN_STATUSES = [
	'NEW',
	'ANALYZING',
	'ANALYZED',
	'ASSEMBLING',
	'READY',
	'RESPONDING',
	'COMPLETED',
	'FAILED',
] as const;

/** Cumulative bucket counts (one per bound, in bound order), sum and count of a histogram. */
export interface HistogramFigures {
	buckets: number[];
	sum: number;
	count: number;
}

/** The row PIPELINE_METRICS returns. */
export interface PipelineFigures {
	statuses: Record<string, number>;
	runs: {
		total: number;
		last_minute: number;
		oldest_new_age: number | null;
		analyses: number;
		context_found: number;
		contexts: number;
		context_bytes: number;
	};
	run_duration: HistogramFigures;
	/** Per module: Generate calls (the histogram's count), retried attempts, call-time sum (s) and buckets. */
	modules: Array<Omit<HistogramFigures, 'count'> & { module: string; calls: number; retries: number }>;
	models: Array<{
		model: string;
		outcome: string;
		attempts: number;
		prompt_tokens: number;
		completion_tokens: number;
		seconds: number;
	}>;
	tables: Array<{ table: string; rows: number; bytes: number }>;
}

const PREFIX = 'contracts_pipeline_';

/** A histogram metric object over buckets counted elsewhere (prom-client's `get()` collector shape). */
function sqlHistogram(
	registry: Registry,
	name: string,
	help: string,
	bounds: number[],
	series: Array<{ labels: Record<string, string>; figures: HistogramFigures }>,
): void {
	const metric = {
		name,
		help,
		type: 'histogram',
		aggregator: 'sum',
		get: async () => ({
			name,
			help,
			type: 'histogram',
			aggregator: 'sum',
			values: series.flatMap(({ labels, figures }) => [
				...bounds.map((le, i) => ({
					metricName: `${name}_bucket`,
					labels: { ...labels, le },
					value: Number(figures.buckets[i] ?? 0),
				})),
				{ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: Number(figures.count) },
				{ metricName: `${name}_sum`, labels, value: Number(figures.sum) },
				{ metricName: `${name}_count`, labels, value: Number(figures.count) },
			]),
		}),
	};
	registry.registerMetric(metric as unknown as Metric<string>);
}

/** A gauge (or counter) with one value per label set, registered in `registry` only. */
function series(
	registry: Registry,
	kind: 'gauge' | 'counter',
	name: string,
	help: string,
	labelNames: string[],
	values: Array<[Record<string, string>, number]>,
): void {
	if (kind === 'counter') {
		const counter = new Counter({ name, help, labelNames, registers: [registry] });
		for (const [labels, value] of values) counter.inc(labels, value);
	} else {
		const gauge = new Gauge({ name, help, labelNames, registers: [registry] });
		for (const [labels, value] of values) gauge.set(labels, value);
	}
}

const ratio = (part: number, whole: number) => (whole > 0 ? part / whole : 0);

/** The pipeline, module, database and model-API metrics (docs/metrics.md). */
function pipelineMetrics(registry: Registry, f: PipelineFigures): void {
	const status = (s: string) => Number(f.statuses[s] ?? 0);
	const known = new Set<string>(RUN_STATUSES);
	series(
		registry,
		'gauge',
		`${PREFIX}runs`,
		'Pipeline runs per status now (maas.pipeline_runs)',
		['status'],
		[
			...RUN_STATUSES.map((s): [Record<string, string>, number] => [{ status: s }, status(s)]),
			...Object.keys(f.statuses)
				.filter((s) => !known.has(s))
				.map((s): [Record<string, string>, number] => [{ status: s }, status(s)]),
		],
	);
	series(registry, 'gauge', `${PREFIX}backlog_runs`, 'Runs waiting in NEW', [], [[{}, status('NEW')]]);
	if (f.runs.oldest_new_age !== null)
		series(
			registry,
			'gauge',
			`${PREFIX}oldest_new_age_seconds`,
			'Age of the oldest run in NEW',
			[],
			[[{}, Number(f.runs.oldest_new_age)]],
		);
	series(
		registry,
		'counter',
		`${PREFIX}requests_total`,
		'Requests accepted (rows of maas.pipeline_runs)',
		[],
		[[{}, Number(f.runs.total)]],
	);
	series(
		registry,
		'gauge',
		`${PREFIX}requests_last_minute`,
		'Requests accepted in the last 60 seconds',
		[],
		[[{}, Number(f.runs.last_minute)]],
	);
	series(registry, 'counter', `${PREFIX}failed_runs_total`, 'Runs in FAILED', [], [[{}, status('FAILED')]]);
	series(
		registry,
		'gauge',
		`${PREFIX}error_ratio`,
		'FAILED / (COMPLETED + FAILED) over the runs in the table (0 when none finished)',
		[],
		[[{}, ratio(status('FAILED'), status('FAILED') + status('COMPLETED'))]],
	);
	sqlHistogram(
		registry,
		`${PREFIX}completion_duration_seconds`,
		'Time from NEW (created_at) to COMPLETED (updated_at) of the completed runs',
		RUN_DURATION_BUCKETS,
		[{ labels: {}, figures: f.run_duration }],
	);
	sqlHistogram(
		registry,
		`${PREFIX}module_duration_seconds`,
		'Model time of one Generate call per module: first attempt start to last attempt end, retry waits included',
		MODULE_DURATION_BUCKETS,
		f.modules.map((m) => ({ labels: { module: m.module }, figures: { ...m, count: m.calls } })),
	);
	const byModule = (pick: (m: PipelineFigures['modules'][number]) => number) =>
		f.modules.map((m): [Record<string, string>, number] => [{ module: m.module }, pick(m)]);
	series(
		registry,
		'counter',
		`${PREFIX}module_calls_total`,
		'Generate calls per module',
		['module'],
		byModule((m) => Number(m.calls)),
	);
	series(
		registry,
		'counter',
		`${PREFIX}module_retries_total`,
		'Retried attempts (attempts beyond the first) of Generate calls per module',
		['module'],
		byModule((m) => Number(m.retries)),
	);
	series(
		registry,
		'gauge',
		`${PREFIX}module_retry_ratio`,
		'Retries per Generate call per module (module_retries_total / module_calls_total)',
		['module'],
		byModule((m) => ratio(Number(m.retries), Number(m.calls))),
	);
	series(
		registry,
		'counter',
		`${PREFIX}analyses_total`,
		'Runs with an analysis result',
		[],
		[[{}, Number(f.runs.analyses)]],
	);
	series(
		registry,
		'counter',
		`${PREFIX}analyses_context_found_total`,
		'Analyses whose context_found is non-empty',
		[],
		[[{}, Number(f.runs.context_found)]],
	);
	series(
		registry,
		'gauge',
		`${PREFIX}analysis_context_found_ratio`,
		'Share of analyses that found context (0 when none)',
		[],
		[[{}, ratio(Number(f.runs.context_found), Number(f.runs.analyses))]],
	);
	series(
		registry,
		'gauge',
		`${PREFIX}assembled_context_average_bytes`,
		'Average size of final_context_payload over the runs that have one, UTF-8 bytes (0 when none)',
		[],
		[[{}, ratio(Number(f.runs.context_bytes), Number(f.runs.contexts))]],
	);
	series(
		registry,
		'counter',
		`${PREFIX}assembled_contexts_total`,
		'Runs with an assembled context',
		[],
		[[{}, Number(f.runs.contexts)]],
	);
	series(
		registry,
		'counter',
		`${PREFIX}assembled_context_bytes_total`,
		'UTF-8 bytes of all assembled contexts',
		[],
		[[{}, Number(f.runs.context_bytes)]],
	);
	const tables = (pick: (t: PipelineFigures['tables'][number]) => number) =>
		f.tables.map((t): [Record<string, string>, number] => [{ table: t.table }, pick(t)]);
	series(
		registry,
		'gauge',
		`${PREFIX}table_size_bytes`,
		'Total size of the table with its indexes and TOAST',
		['table'],
		tables((t) => Number(t.bytes)),
	);
	series(
		registry,
		'gauge',
		`${PREFIX}table_rows`,
		'Rows in the table (exact count)',
		['table'],
		tables((t) => Number(t.rows)),
	);
	const models = (pick: (m: PipelineFigures['models'][number]) => number) =>
		f.models.map((m): [Record<string, string>, number] => [{ model: m.model, outcome: m.outcome }, pick(m)]);
	series(
		registry,
		'counter',
		'contracts_llm_requests_total',
		'HTTP attempts of Model → Generate per model and outcome (ok, rate_limited = HTTP 429, timeout, error)',
		['model', 'outcome'],
		models((m) => Number(m.attempts)),
	);
	series(
		registry,
		'counter',
		'contracts_llm_request_duration_seconds_total',
		'Wall time of those attempts per model and outcome',
		['model', 'outcome'],
		models((m) => Number(m.seconds)),
	);
	const tokens = f.models.flatMap(
		(m): Array<[Record<string, string>, number]> => [
			[{ model: m.model, kind: 'prompt' }, Number(m.prompt_tokens)],
			[{ model: m.model, kind: 'completion' }, Number(m.completion_tokens)],
		],
	);
	series(
		registry,
		'counter',
		'contracts_llm_tokens_total',
		'Tokens the provider reported per model and kind (prompt, completion)',
		['model', 'kind'],
		tokens,
	);
}

/** The job queue metrics from Job → Get Stats' figures (nodes/shared/jobs/stats.ts). */
function jobMetrics(registry: Registry, jobs: JobTypeStats[]): void {
	const statuses = ['queued', 'running', 'succeeded', 'failed', 'dead'] as const;
	series(
		registry,
		'gauge',
		'contracts_jobs',
		'Jobs (ops.jobs) per job type and status now',
		['job_type', 'status'],
		jobs.flatMap((j) =>
			statuses.map((s): [Record<string, string>, number] => [{ job_type: j.job_type, status: s }, j.counts[s]]),
		),
	);
	const present = (pick: (j: JobTypeStats) => number | null) =>
		jobs
			.filter((j) => pick(j) !== null)
			.map((j): [Record<string, string>, number] => [{ job_type: j.job_type }, pick(j)!]);
	series(
		registry,
		'gauge',
		'contracts_job_oldest_queued_age_seconds',
		'Age of the oldest queued job per job type (absent: none queued)',
		['job_type'],
		present((j) => j.oldest_queued_age_seconds),
	);
	series(
		registry,
		'gauge',
		'contracts_job_oldest_due_wait_seconds',
		'How long the oldest due queued job has waited past next_run_at (absent: none due)',
		['job_type'],
		present((j) => j.oldest_due_wait_seconds),
	);
	const window = jobs[0]?.window_seconds;
	series(
		registry,
		'gauge',
		'contracts_job_window_runs',
		`Job attempts (ops.job_runs) finished in the last window_seconds (${window ?? 'n/a'} s)`,
		['job_type'],
		jobs.map((j) => [{ job_type: j.job_type }, j.runs]),
	);
	series(
		registry,
		'gauge',
		'contracts_job_window_failures',
		'Of those, attempts that failed (status failed, retry or dead)',
		['job_type'],
		jobs.map((j) => [{ job_type: j.job_type }, j.failures]),
	);
	series(
		registry,
		'gauge',
		'contracts_job_window_run_duration_seconds',
		'p50 / p95 run time of those attempts (absent: no run)',
		['job_type', 'quantile'],
		jobs.flatMap((j) =>
			(['0.5', '0.95'] as const)
				.map((q): [Record<string, string>, number | null] => [
					{ job_type: j.job_type, quantile: q },
					q === '0.5' ? j.run_ms.p50 : j.run_ms.p95,
				])
				.filter((v): v is [Record<string, string>, number] => v[1] !== null)
				.map(([labels, ms]): [Record<string, string>, number] => [labels, ms / 1000]),
		),
	);
}

/**
 * The Prometheus text of one scrape, built in a new Registry.
 * @returns the exposition text (text format 0.0.4, ends with a line feed)
 */
export async function exposition(figures: PipelineFigures, jobs: JobTypeStats[]): Promise<string> {
	const registry = new Registry();
	pipelineMetrics(registry, figures);
	jobMetrics(registry, jobs);
	return await registry.metrics();
}
