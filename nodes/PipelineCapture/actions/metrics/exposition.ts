/**
 * The Prometheus exposition of Metrics → Pipeline Metrics (seed 001 §9; every metric is listed in
 * docs/metrics.md): the figures of PIPELINE_METRICS (shared/statements/metrics.ts, read by ./scrape.ts) and Job → Get Stats (jobStats) put in a
 * fresh prom-client Registry per scrape — no metric state outlives the call, so every n8n process
 * (queue mode too) answers the same for the same database. Counters and gauges are prom-client
 * Counter / Gauge objects; a histogram whose buckets PostgreSQL counted is a metric object whose `get()`
 * returns them (prom-client's collector interface), so prom-client writes every line and escapes every
 * label value (backslash, double quote, line feed).
 */
import { Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { JobTypeStats } from '../../../shared/jobs/stats';
import { RUN_STATUS } from '../../../shared/statements/pipelineRuns';
import { JOB_RUN_BUCKETS, MODULE_DURATION_BUCKETS, RUN_DURATION_BUCKETS } from './buckets';

/** Content type of the text: Prometheus text format 0.0.4. */
export const PROMETHEUS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** The pipeline_runs statuses not finished yet (db/migrations/003), each reported even at 0. */
export const ACTIVE_STATUSES = [
	RUN_STATUS.NEW,
	RUN_STATUS.ANALYZING,
	RUN_STATUS.ANALYZED,
	RUN_STATUS.ASSEMBLING,
	RUN_STATUS.READY,
	RUN_STATUS.RESPONDING,
] as const;
/** The finished statuses, counted by contracts_pipeline_finished_runs_total. */
export const FINISHED_STATUSES = [RUN_STATUS.COMPLETED, RUN_STATUS.FAILED] as const;
/** The module label values (db/migrations/017 maas.metric_module): the four steps, anything else `other`. */
export const MODULES = ['analyzer', 'assembler', 'final_responder', 'archivist', 'other'] as const;

/** Cumulative bucket counts (one per bound, in bound order), sum and count of a histogram. */
export interface HistogramFigures {
	buckets: number[];
	sum: number;
	count: number;
}

/** One rollup figure: maas.metric_counters summed over its shards. */
export interface CounterFigure {
	name: string;
	labels: Record<string, string>;
	value: number;
}

/** The row PIPELINE_METRICS returns. */
export interface PipelineFigures {
	counters: CounterFigure[];
	/** Runs per status not finished yet (absent: 0). */
	statuses: Record<string, number>;
	runs: { oldest_new_age: number | null; last_minute: number };
	/** rows: pg_class.reltuples (an estimate; null before the table was first analysed). */
	tables: Array<{ table: string; rows: number | null; bytes: number }>;
}

const PREFIX = 'contracts_pipeline_';

type Labels = Record<string, string>;

/** A histogram metric object over buckets counted elsewhere (prom-client's `get()` collector shape). */
function sqlHistogram(
	registry: Registry,
	name: string,
	help: string,
	bounds: number[],
	series: Array<{ labels: Labels; figures: HistogramFigures }>,
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
	values: Array<[Labels, number]>,
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

/** The rollup's figures by name. */
class Rollup {
	constructor(private readonly counters: CounterFigure[]) {}
	/** Every label set of `name` with its value. */
	all(name: string): Array<[Labels, number]> {
		return this.counters.filter((c) => c.name === name).map((c) => [{ ...c.labels }, Number(c.value)]);
	}
	/** The value of `name` at exactly `labels` (0 when absent). */
	one(name: string, labels: Labels = {}): number {
		const key = JSON.stringify(Object.entries(labels).sort());
		const hit = this.counters.find((c) => c.name === name && JSON.stringify(Object.entries(c.labels).sort()) === key);
		return hit ? Number(hit.value) : 0;
	}
	/** `name` for each of `values` of label `label` (0 when absent). */
	each(name: string, label: string, values: readonly string[]): Array<[Labels, number]> {
		return values.map((v) => [{ [label]: v }, this.one(name, { [label]: v })]);
	}
	/**
	 * A histogram from non-cumulative rows `name{…, le}` (le: the smallest bound ≥ the value, or +Inf)
	 * and `name_sum{…}`, per label set of `groups` (label values of the one grouping label).
	 */
	histogram(
		name: string,
		bounds: number[],
		groups: Array<Labels>,
	): Array<{ labels: Labels; figures: HistogramFigures }> {
		return groups.map((labels) => {
			const rows = this.all(name).filter(([l]) => Object.entries(labels).every(([k, v]) => l[k] === v));
			const at = (le: string) => rows.filter(([l]) => l.le === le).reduce((t, [, n]) => t + n, 0);
			let running = 0;
			const buckets = bounds.map((b) => (running += at(String(b))));
			const count = rows.reduce((t, [, n]) => t + n, 0);
			return { labels, figures: { buckets, sum: this.one(`${name}_sum`, labels), count } };
		});
	}
}

/** The pipeline, module, database and model-API metrics (docs/metrics.md). */
function pipelineMetrics(registry: Registry, f: PipelineFigures, r: Rollup): void {
	const status = (s: string) => Number(f.statuses[s] ?? 0);
	const known = new Set<string>(ACTIVE_STATUSES);
	series(
		registry,
		'gauge',
		`${PREFIX}runs`,
		'Pipeline runs per status not finished yet, now (maas.pipeline_runs)',
		['status'],
		[
			...ACTIVE_STATUSES.map((s): [Labels, number] => [{ status: s }, status(s)]),
			...Object.keys(f.statuses)
				.filter((s) => !known.has(s))
				.map((s): [Labels, number] => [{ status: s }, status(s)]),
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
		'Requests accepted (runs created)',
		[],
		[[{}, r.one('requests')]],
	);
	series(
		registry,
		'gauge',
		`${PREFIX}requests_last_minute`,
		'Requests accepted in the last 60 seconds (runs still in the table)',
		[],
		[[{}, Number(f.runs.last_minute)]],
	);
	series(
		registry,
		'counter',
		`${PREFIX}finished_runs_total`,
		'Runs that reached COMPLETED or FAILED, per status',
		['status'],
		r.each('finished_runs', 'status', FINISHED_STATUSES),
	);
	const failed = r.one('finished_runs', { status: 'FAILED' });
	const completed = r.one('finished_runs', { status: 'COMPLETED' });
	series(registry, 'counter', `${PREFIX}failed_runs_total`, 'Runs that reached FAILED', [], [[{}, failed]]);
	series(
		registry,
		'gauge',
		`${PREFIX}error_ratio`,
		'FAILED / (COMPLETED + FAILED) since the counters began (0 when none finished)',
		[],
		[[{}, ratio(failed, failed + completed)]],
	);
	sqlHistogram(
		registry,
		`${PREFIX}completion_duration_seconds`,
		'Time from NEW (created_at) to COMPLETED (updated_at when it completed)',
		RUN_DURATION_BUCKETS,
		r.histogram('completion_duration_seconds', RUN_DURATION_BUCKETS, [{}]),
	);
	const modules = MODULES.map((module) => ({ module }));
	sqlHistogram(
		registry,
		`${PREFIX}module_attempt_duration_seconds`,
		'Wall time of one model HTTP attempt of Model → Generate per module (retry waits not included)',
		MODULE_DURATION_BUCKETS,
		r.histogram('module_attempt_seconds', MODULE_DURATION_BUCKETS, modules),
	);
	const calls = r.each('module_calls', 'module', MODULES);
	const retries = r.each('module_retries', 'module', MODULES);
	series(
		registry,
		'counter',
		`${PREFIX}module_calls_total`,
		'Generate calls (first attempts) per module',
		['module'],
		calls,
	);
	series(
		registry,
		'counter',
		`${PREFIX}module_retries_total`,
		'Retried attempts (attempts beyond the first) of Generate calls per module',
		['module'],
		retries,
	);
	series(
		registry,
		'gauge',
		`${PREFIX}module_retry_ratio`,
		'Retries per Generate call per module (module_retries_total / module_calls_total)',
		['module'],
		calls.map(([labels, n], i): [Labels, number] => [labels, ratio(retries[i][1], n)]),
	);
	const analyses = r.one('analyses');
	const found = r.one('analyses_context_found');
	series(registry, 'counter', `${PREFIX}analyses_total`, 'Analyses stored (analysis_result set)', [], [[{}, analyses]]);
	series(
		registry,
		'counter',
		`${PREFIX}analyses_context_found_total`,
		'Analyses whose context_found is non-empty',
		[],
		[[{}, found]],
	);
	series(
		registry,
		'gauge',
		`${PREFIX}analysis_context_found_ratio`,
		'Share of analyses that found context since the counters began (0 when none)',
		[],
		[[{}, ratio(found, analyses)]],
	);
	const contexts = r.one('assembled_contexts');
	const bytes = r.one('assembled_context_bytes');
	series(
		registry,
		'gauge',
		`${PREFIX}assembled_context_average_bytes`,
		'Average size of an assembled context (final_context_payload) since the counters began, UTF-8 bytes (0 when none)',
		[],
		[[{}, ratio(bytes, contexts)]],
	);
	series(registry, 'counter', `${PREFIX}assembled_contexts_total`, 'Assembled contexts stored', [], [[{}, contexts]]);
	series(
		registry,
		'counter',
		`${PREFIX}assembled_context_bytes_total`,
		'UTF-8 bytes of all assembled contexts',
		[],
		[[{}, bytes]],
	);
	series(
		registry,
		'gauge',
		`${PREFIX}table_size_bytes`,
		'Total size of the table with its indexes and TOAST',
		['table'],
		f.tables.map((t): [Labels, number] => [{ table: t.table }, Number(t.bytes)]),
	);
	series(
		registry,
		'gauge',
		`${PREFIX}table_rows`,
		'Rows in the table, PostgreSQL’s estimate (pg_class.reltuples; absent before the first ANALYZE)',
		['table'],
		f.tables.filter((t) => t.rows !== null).map((t): [Labels, number] => [{ table: t.table }, Number(t.rows)]),
	);
	series(
		registry,
		'counter',
		'contracts_llm_requests_total',
		'HTTP attempts of Model → Generate per model (20 named, the rest other) and outcome (ok, rate_limited = HTTP 429, timeout, error)',
		['model', 'outcome'],
		r.all('llm_requests'),
	);
	series(
		registry,
		'counter',
		'contracts_llm_request_duration_seconds_total',
		'Wall time of those attempts per model and outcome',
		['model', 'outcome'],
		r.all('llm_request_seconds'),
	);
	series(
		registry,
		'counter',
		'contracts_llm_tokens_total',
		'Tokens the provider reported per model and kind (prompt, completion)',
		['model', 'kind'],
		r.all('llm_tokens'),
	);
}

/**
 * The job queue metrics: the queue now from Job → Get Stats' figures (nodes/shared/jobs/stats.ts), the
 * finished attempts from the rollup (db/migrations/017).
 */
function jobMetrics(registry: Registry, jobs: JobTypeStats[], r: Rollup): void {
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
		'contracts_job_oldest_running_age_seconds',
		'Age of the oldest running lock per job type: now − locked_at of the job claimed longest ago (absent: none running)',
		['job_type'],
		present((j) => j.oldest_running_age_seconds),
	);
	series(
		registry,
		'gauge',
		'contracts_job_oldest_due_wait_seconds',
		'How long the oldest due queued job has waited past next_run_at (absent: none due)',
		['job_type'],
		present((j) => j.oldest_due_wait_seconds),
	);
	series(
		registry,
		'counter',
		'contracts_job_runs_total',
		'Job attempts (ops.job_runs) finished, per job type and run status (succeeded, failed, retry, dead)',
		['job_type', 'status'],
		r.all('job_runs'),
	);
	const types = [...new Set(r.all('job_run_seconds').map(([l]) => l.job_type))].sort();
	sqlHistogram(
		registry,
		'contracts_job_run_duration_seconds',
		'Run time (finished_at − started_at) of the finished job attempts per job type',
		JOB_RUN_BUCKETS,
		r.histogram(
			'job_run_seconds',
			JOB_RUN_BUCKETS,
			types.map((job_type) => ({ job_type })),
		),
	);
}

/**
 * The Prometheus text of one scrape, built in a new Registry.
 * @returns the exposition text (text format 0.0.4, ends with a line feed)
 */
export async function exposition(figures: PipelineFigures, jobs: JobTypeStats[]): Promise<string> {
	const registry = new Registry();
	const rollup = new Rollup(figures.counters);
	pipelineMetrics(registry, figures, rollup);
	jobMetrics(registry, jobs, rollup);
	return await registry.metrics();
}
