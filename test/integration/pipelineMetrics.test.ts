/**
 * Metrics → Pipeline Metrics (seed 001 §9) and the llm_calls records of Model → Generate, on real
 * PostgreSQL, with Generate calling a real HTTP stand-in model (test/helpers/usageModelStandIn.ts) through
 * the fetch sender. A scripted set of runs — one completed (its Final Responder hit a 429 first), one
 * failed (its Analyzer timed out once, its Final Responder got a 503), one still NEW — then a scrape,
 * parsed by parse-prometheus-text-format, shows exactly the counts and sums the script implies.
 * A property: hostile model names, module labels and job types stored in the database still give a
 * scrape that parses, and the parsed label values are the stored ones.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Pool } from 'pg';
import { fetchSender } from '../../nodes/KnowledgeBot/transport/http';
import { MODULES } from '../../nodes/PipelineCapture/actions/metrics/exposition';
import { pipelineMetricsOperation } from '../../nodes/PipelineCapture/actions/metrics/pipelineMetrics.operation';
import { generateOperation } from '../../nodes/PipelineCapture/actions/model/generate.operation';
import { archiveRun } from '../../nodes/PipelineCapture/actions/run/archive.operation';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { failRun } from '../../nodes/PipelineCapture/actions/run/fail.operation';
import { loadStepContext } from '../../nodes/PipelineCapture/actions/run/loadStepContext.operation';
import type { PipelineContext } from '../../nodes/PipelineCapture/actions/types';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { recordLlmCall, storableLabel } from '../../nodes/shared/llm/calls';
import { RELEASE_STALE } from '../../nodes/shared/statements/jobs';
import { replaceUnstorable } from '../../nodes/shared/sanitize';
import { setupDatabase, type TestDatabase } from '../helpers/db';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres, createDatabase } = require('../../scripts/lib/postgres');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrate } = require('../../scripts/lib/migrate');
import { parseScrape } from '../helpers/promText';
import { hostileString, PROPERTY_RUNS, propertyParams } from '../helpers/property';
import { UsageModelStandIn, type UsageReply } from '../helpers/usageModelStandIn';

let db: TestDatabase;
const model = new UsageModelStandIn();
const def = shippedDefinition();
const STEP_MODULES: Record<string, string> = {
	analysis: 'analyzer',
	assembly: 'assembler',
	response: 'final_responder',
	archive: 'archivist',
};

beforeAll(async () => {
	db = await setupDatabase();
	await model.up();
});
afterAll(async () => {
	await model.down();
	await db?.drop();
});

function deps(): PipelineContext {
	return {
		pool: db.pool,
		definition: async () => def,
		worker: 'metrics-test',
		origin: { workflow: 'metrics-test', node: 'Generate' },
		llm: async () => ({
			credential: { api: 'openai', baseUrl: model.url, apiKey: 'sk-metrics-test', model: 'default-model' },
			send: fetchSender,
		}),
	};
}

/** One step of a run: Capture, Load Step Context, Generate (replies scripted), Complete Step. */
async function step(
	runId: string,
	names: { take: string; done: string; step: 'analysis' | 'assembly' | 'response' },
	llmModel: string,
	replies: UsageReply[],
	policy: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
	const c = await capture(db.pool, def, { run_id: runId, transition: names.take, worker: 'w' });
	assert.ok(c.captured, `${names.take}: ${c.reason}`);
	const ctx = await loadStepContext(db.pool, { run_id: runId, step: names.step });
	model.script.push(...replies);
	const generated = await generateOperation.execute(deps(), {
		system: 'sys',
		input: 'in',
		model: llmModel,
		expect_json: names.step === 'analysis',
		run_id: ctx.run_id,
		step: ctx.step,
		max_retries: 3,
		backoff_base_ms: 1,
		rate_limit_wait_ms: 5,
		timeout_ms: 5_000,
		...policy,
	});
	const data = generated.data!;
	await completeStep(db.pool, def, {
		run_id: runId,
		transition: names.done,
		capture_token: c.run.capture_token,
		result: names.step === 'analysis' ? data.json : data.text,
	});
	return data;
}

const ANALYSIS = { take: 'CAPTURE_ANALYSIS', done: 'ANALYSIS_DONE', step: 'analysis' } as const;
const ASSEMBLY = { take: 'CAPTURE_ASSEMBLY', done: 'ASSEMBLY_DONE', step: 'assembly' } as const;
const RESPONSE = { take: 'CAPTURE_RESPONSE', done: 'RESPONSE_DONE', step: 'response' } as const;

const scrape = async () => {
	const { data } = await pipelineMetricsOperation.execute(deps(), {});
	assert.equal(data!.content_type, 'text/plain; version=0.0.4; charset=utf-8');
	return { text: String(data!.text), parsed: parseScrape(String(data!.text)) };
};

test('after a completed, a failed (timeout, 503) and a waiting run, the scrape shows the exact counts and sums', async () => {
	// The scripted contexts: their UTF-8 sizes (é is 2 bytes) give the assembled-context figures.
	const contextA = '<context>café</context>';
	const contextB = '<context>plain</context>';
	const a = await createRun(db.pool, { user_id: 'metrics-a', query: 'first' });
	const b = await createRun(db.pool, { user_id: 'metrics-b', query: 'second' });
	await createRun(db.pool, { user_id: 'metrics-c', query: 'third' });

	// Run A: Analyzer finds context; Assembler; Final Responder rate-limited once, then answers.
	await step(a.request_id, ANALYSIS, 'cheap', [
		{ text: '{"needs_context":true,"context_found":{"lsm":[1]}}', promptTokens: 10, completionTokens: 5 },
	]);
	await step(a.request_id, ASSEMBLY, 'strong', [{ text: contextA, promptTokens: 20, completionTokens: 8 }]);
	// A's time from NEW to COMPLETED, scripted: 7 s (plus the response step's own time) when it completes.
	await db.pool.query(`UPDATE maas.pipeline_runs SET created_at = now() - interval '7 seconds' WHERE id = $1`, [
		a.request_id,
	]);
	const answered = await step(a.request_id, RESPONSE, 'strong', [
		{ status: 429 },
		{ text: 'The answer.', promptTokens: 30, completionTokens: 12 },
	]);
	assert.equal(answered.attempts, 2);
	assert.equal(answered.records_lost, 0);
	// Run B: Analyzer times out once (300 ms), then answers with nothing found; Assembler; Final Responder 503 → FAILED.
	await step(
		b.request_id,
		ANALYSIS,
		'cheap',
		[{ hang: 1_500 }, { text: '{"needs_context":false,"context_found":{}}', promptTokens: 11, completionTokens: 6 }],
		{ timeout_ms: 300 },
	);
	await step(b.request_id, ASSEMBLY, 'strong', [{ text: contextB, promptTokens: 21, completionTokens: 9 }]);
	const c = await capture(db.pool, def, { run_id: b.request_id, transition: 'CAPTURE_RESPONSE', worker: 'w' });
	assert.ok(c.captured);
	model.script.push({ status: 503 });
	await assert.rejects(
		generateOperation.execute(deps(), {
			system: 's',
			input: 'i',
			model: 'strong',
			run_id: b.request_id,
			step: 'response',
			max_retries: 0,
		}),
		/failed after 1 attempts/,
	);
	await failRun(db.pool, def, { run_id: b.request_id, error: { message: 'model unavailable', kind: 'upstream' } });
	await archiveRun(db.pool, { run_id: a.request_id, summary: 'Asked first; answered.' });
	// Table rows are PostgreSQL's estimate (pg_class.reltuples): exact right after ANALYZE.
	await db.pool.query('ANALYZE maas.pipeline_runs, maas.raw_logs, maas.lsm_storage, maas.llm_calls');
	await db.pool
		.query(`INSERT INTO ops.jobs (job_type, status) VALUES ('metrics_job', 'queued'), ('metrics_job', 'queued'),
		('metrics_job', 'dead')`);

	const { parsed: m } = await scrape();
	const v = m.value;
	// Pipeline.
	assert.deepEqual(
		['NEW', 'ANALYZING', 'READY', 'RESPONDING'].map((s) => v('contracts_pipeline_runs', { status: s })),
		[1, 0, 0, 0],
	);
	assert.equal(v('contracts_pipeline_finished_runs_total', { status: 'COMPLETED' }), 1);
	assert.equal(v('contracts_pipeline_finished_runs_total', { status: 'FAILED' }), 1);
	assert.equal(v('contracts_pipeline_backlog_runs'), 1);
	assert.equal(v('contracts_pipeline_requests_total'), 3);
	assert.equal(v('contracts_pipeline_requests_last_minute'), 3);
	assert.equal(v('contracts_pipeline_failed_runs_total'), 1);
	assert.equal(v('contracts_pipeline_error_ratio'), 0.5);
	assert.ok(v('contracts_pipeline_oldest_new_age_seconds') >= 0);
	const completion = m.sample('contracts_pipeline_completion_duration_seconds');
	assert.equal(m.family('contracts_pipeline_completion_duration_seconds').type, 'HISTOGRAM');
	assert.deepEqual(
		[completion.count, completion.buckets!['5'], completion.buckets!['10'], completion.buckets!['+Inf']],
		['1', '0', '1', '1'],
	);
	assert.ok(Number(completion.sum) >= 7 && Number(completion.sum) < 9, `7 s and the response step: ${completion.sum}`);
	// Modules: one Generate call per step and run; retries: A's 429 (responder), B's timeout (analyzer).
	// The histogram counts attempts: A 1+1+2, B 2+1+1.
	for (const [module, calls, retries] of [
		['analyzer', 2, 1],
		['assembler', 2, 0],
		['final_responder', 2, 1],
		['archivist', 0, 0],
		['other', 0, 0],
	] as const) {
		assert.equal(v('contracts_pipeline_module_calls_total', { module }), calls, module);
		assert.equal(v('contracts_pipeline_module_retries_total', { module }), retries, module);
		assert.equal(v('contracts_pipeline_module_retry_ratio', { module }), calls ? retries / calls : 0, module);
		const attempts = calls + retries;
		assert.equal(m.line('contracts_pipeline_module_attempt_duration_seconds_count', { module }), attempts, module);
		assert.equal(m.line('contracts_pipeline_module_attempt_duration_seconds_bucket', { module, le: '+Inf' }), attempts);
	}
	assert.equal(m.family('contracts_pipeline_module_attempt_duration_seconds').type, 'HISTOGRAM');
	assert.equal(
		m.line('contracts_pipeline_module_attempt_duration_seconds_bucket', { module: 'analyzer', le: '0.25' }),
		2,
		'A’s analysis and B’s second attempt were quick; B’s first took the 300 ms timeout',
	);
	// Module sums: the sum of the attempts' durations, from the rows Generate wrote.
	const { rows: calls } = await db.pool.query<{ module: string; ms: number }>(
		'SELECT module, duration_ms AS ms FROM maas.llm_calls',
	);
	assert.equal(calls.length, 8, 'one row per attempt: A 1+1+2, B 2+1+1');
	const names: Record<string, string> = { analysis: 'analyzer', assembly: 'assembler', response: 'final_responder' };
	for (const step of ['analysis', 'assembly', 'response']) {
		const expected = calls.filter((c) => c.module === step).reduce((t, c) => t + c.ms / 1000, 0);
		const got = m.line('contracts_pipeline_module_attempt_duration_seconds_sum', { module: names[step] });
		assert.ok(Math.abs(got - expected) < 1e-9, `${step}: ${got} vs ${expected}`);
	}
	assert.ok(
		m.line('contracts_pipeline_module_attempt_duration_seconds_sum', { module: 'analyzer' }) >= 0.3,
		'the analyzer’s timed-out attempt counts',
	);
	assert.equal(v('contracts_pipeline_analyses_total'), 2);
	assert.equal(v('contracts_pipeline_analyses_context_found_total'), 1);
	assert.equal(v('contracts_pipeline_analysis_context_found_ratio'), 0.5);
	const bytesA = Buffer.byteLength(contextA);
	const bytesB = Buffer.byteLength(contextB);
	assert.equal(v('contracts_pipeline_assembled_contexts_total'), 2);
	assert.equal(v('contracts_pipeline_assembled_context_bytes_total'), bytesA + bytesB);
	assert.equal(v('contracts_pipeline_assembled_context_average_bytes'), (bytesA + bytesB) / 2);
	// Database: 3 queries + A's answer logged; A's summary; 8 call rows.
	for (const [table, rows] of [
		['maas.pipeline_runs', 3],
		['maas.raw_logs', 4],
		['maas.lsm_storage', 1],
		['maas.llm_calls', 8],
	] as const) {
		assert.equal(v('contracts_pipeline_table_rows', { table }), rows, table);
		assert.ok(v('contracts_pipeline_table_size_bytes', { table }) > 0, table);
	}
	// Model API per model and outcome.
	for (const [name, outcome, n] of [
		['cheap', 'ok', 2],
		['cheap', 'timeout', 1],
		['strong', 'ok', 3],
		['strong', 'rate_limited', 1],
		['strong', 'error', 1],
	] as const)
		assert.equal(v('contracts_llm_requests_total', { model: name, outcome }), n, `${name} ${outcome}`);
	assert.equal(m.family('contracts_llm_requests_total').metrics.length, 5);
	assert.equal(m.family('contracts_llm_requests_total').type, 'COUNTER');
	assert.equal(v('contracts_llm_tokens_total', { model: 'cheap', kind: 'prompt' }), 10 + 11);
	assert.equal(v('contracts_llm_tokens_total', { model: 'cheap', kind: 'completion' }), 5 + 6);
	assert.equal(v('contracts_llm_tokens_total', { model: 'strong', kind: 'prompt' }), 20 + 30 + 21);
	assert.equal(v('contracts_llm_tokens_total', { model: 'strong', kind: 'completion' }), 8 + 12 + 9);
	assert.ok(v('contracts_llm_request_duration_seconds_total', { model: 'cheap', outcome: 'timeout' }) >= 0.3);
	// Job queue (Get Stats' figures).
	assert.equal(v('contracts_jobs', { job_type: 'metrics_job', status: 'queued' }), 2);
	assert.equal(v('contracts_jobs', { job_type: 'metrics_job', status: 'dead' }), 1);
	assert.equal(v('contracts_jobs', { job_type: 'metrics_job', status: 'running' }), 0);
	assert.ok(v('contracts_job_oldest_queued_age_seconds', { job_type: 'metrics_job' }) >= 0);
	assert.equal(m.family('contracts_job_run_duration_seconds').type, 'HISTOGRAM');
});

test('stuck work: the age of the oldest running lock and of the oldest queued job per job type; Release Stale brings it down', async () => {
	// a job held `running` by a worker that died 20 minutes ago, a live one claimed 10 s ago, a job queued 10 minutes
	// ago; another type with only a finished job (no lock, nothing queued: both gauges absent for it)
	const { rows } = await db.pool.query(
		`INSERT INTO ops.jobs (job_type, status, attempts, locked_by, locked_at, claim_token, created_at, next_run_at, finished_at)
		 VALUES ('stuck_a', 'running', 1, 'dead-worker', now() - interval '1200 seconds', gen_random_uuid(), now() - interval '1300 seconds', now() - interval '1300 seconds', NULL),
		        ('stuck_a', 'running', 1, 'live-worker', now() - interval '10 seconds', gen_random_uuid(), now() - interval '20 seconds', now() - interval '20 seconds', NULL),
		        ('stuck_a', 'queued', 0, NULL, NULL, NULL, now() - interval '600 seconds', now() - interval '600 seconds', NULL),
		        ('stuck_b', 'succeeded', 1, NULL, NULL, NULL, now() - interval '50 seconds', now() - interval '50 seconds', now())
		 RETURNING id`,
	);
	assert.equal(rows.length, 4);
	const near = (value: number, expected: number, what: string) =>
		assert.ok(Math.abs(value - expected) < 5, `${what}: ${value}, expected about ${expected}`);
	let m = (await scrape()).parsed;
	assert.equal(m.family('contracts_job_oldest_running_age_seconds').type, 'GAUGE');
	near(m.value('contracts_job_oldest_running_age_seconds', { job_type: 'stuck_a' }), 1200, 'oldest running lock');
	near(m.value('contracts_job_oldest_queued_age_seconds', { job_type: 'stuck_a' }), 600, 'oldest queued');
	assert.equal(m.value('contracts_jobs', { job_type: 'stuck_a', status: 'running' }), 2);
	const labelsOf = (name: string) => m.family(name).metrics.map((x) => x.labels?.job_type);
	assert.ok(!labelsOf('contracts_job_oldest_running_age_seconds').includes('stuck_b'), 'absent: none running');
	assert.ok(!labelsOf('contracts_job_oldest_queued_age_seconds').includes('stuck_b'), 'absent: none queued');
	// the example alert of docs/metrics.md fires: the lock is older than WF90's Release Stale timeout (900 s)
	assert.ok(m.value('contracts_job_oldest_running_age_seconds', { job_type: 'stuck_a' }) > 900);
	// Release Stale (WF90, 900 s) puts the dead worker's job back: the lock age drops to the live one's, and the
	// released job is now the oldest queued (by created_at)
	await db.pool.query(RELEASE_STALE, [900, 100]);
	m = (await scrape()).parsed;
	near(
		m.value('contracts_job_oldest_running_age_seconds', { job_type: 'stuck_a' }),
		10,
		'oldest running lock after release',
	);
	near(
		m.value('contracts_job_oldest_queued_age_seconds', { job_type: 'stuck_a' }),
		1300,
		'oldest queued after release',
	);
	await db.pool.query("DELETE FROM ops.jobs WHERE job_type IN ('stuck_a', 'stuck_b')");
});

test('llm_calls rows: the run, the module, the outcome, the status and the tokens of each attempt — no URL, key or header', async () => {
	const { rows } = await db.pool.query(
		`SELECT c.module, c.model, c.attempt, c.outcome, c.http_status, c.prompt_tokens, c.completion_tokens,
		        r.user_id, row_to_json(c)::text AS raw
		 FROM maas.llm_calls c LEFT JOIN maas.pipeline_runs r ON r.id = c.run_id ORDER BY c.id`,
	);
	assert.deepEqual(
		rows.map((r) => [
			r.user_id,
			r.module,
			r.model,
			r.attempt,
			r.outcome,
			r.http_status,
			r.prompt_tokens,
			r.completion_tokens,
		]),
		[
			['metrics-a', 'analysis', 'cheap', 1, 'ok', 200, 10, 5],
			['metrics-a', 'assembly', 'strong', 1, 'ok', 200, 20, 8],
			['metrics-a', 'response', 'strong', 1, 'rate_limited', 429, null, null],
			['metrics-a', 'response', 'strong', 2, 'ok', 200, 30, 12],
			['metrics-b', 'analysis', 'cheap', 1, 'timeout', null, null, null],
			['metrics-b', 'analysis', 'cheap', 2, 'ok', 200, 11, 6],
			['metrics-b', 'assembly', 'strong', 1, 'ok', 200, 21, 9],
			['metrics-b', 'response', 'strong', 1, 'error', 503, null, null],
		],
	);
	for (const r of rows) {
		assert.ok(!r.raw.includes('sk-metrics-test'), 'no key');
		assert.ok(!r.raw.includes(String(model.port)), 'no URL');
	}
});

/** Every counter and histogram sample of a scrape (name + labels → value). */
function monotonic(text: string): Map<string, number> {
	const out = new Map<string, number>();
	for (const line of text.split('\n')) {
		const hit = /^(contracts_\w+?(?:_total|_bucket|_sum|_count))(\{.*\})? (\S+)$/.exec(line);
		if (hit) out.set(`${hit[1]}${hit[2] ?? ''}`, Number(hit[3]));
	}
	return out;
}

test('counters never go down when old runs and llm_calls are deleted, and buckets do not move between attempts of one call', async () => {
	const before = await scrape();
	const counters = monotonic(before.text);
	assert.ok(counters.get('contracts_pipeline_requests_total')! >= 3);
	// Retention: every run and call record goes (raw_logs / lsm_storage keep theirs with run_id null).
	await db.pool.query('DELETE FROM maas.llm_calls; DELETE FROM maas.pipeline_runs');
	const afterDelete = monotonic((await scrape()).text);
	for (const [key, value] of counters)
		assert.ok((afterDelete.get(key) ?? 0) >= value, `${key}: ${value} → ${afterDelete.get(key)}`);
	assert.equal(afterDelete.get('contracts_pipeline_requests_total'), counters.get('contracts_pipeline_requests_total'));

	// One call, two attempts: a quick 429 (50 ms), then a slow answer (20 s). The first attempt's bucket keeps it.
	const callId = '00000000-0000-4000-8000-0000000000aa';
	const attempt = (n: number, durationMs: number, outcome: 'ok' | 'rate_limited') =>
		recordLlmCall(
			db.pool,
			callId,
			{ module: 'assembly' },
			{
				attempt: n,
				model: 'strong',
				startedAt: new Date(),
				durationMs,
				outcome,
				httpStatus: outcome === 'ok' ? 200 : 429,
				promptTokens: null,
				completionTokens: null,
			},
		);
	const bucket = (m: Map<string, number>, le: string) =>
		m.get(`contracts_pipeline_module_attempt_duration_seconds_bucket{module="assembler",le="${le}"}`) ?? 0;
	await attempt(1, 50, 'rate_limited');
	const first = monotonic((await scrape()).text);
	assert.equal(bucket(first, '0.1') - bucket(afterDelete, '0.1'), 1, 'the 50 ms attempt in le=0.1');
	await attempt(2, 20_000, 'ok');
	const second = monotonic((await scrape()).text);
	for (const le of ['0.1', '0.25', '10']) assert.equal(bucket(second, le), bucket(first, le), `le=${le} unchanged`);
	assert.equal(bucket(second, '30') - bucket(first, '30'), 1, 'the 20 s attempt in le=30');
	for (const [key, value] of first) assert.ok((second.get(key) ?? 0) >= value, key);
	assert.equal(
		(second.get('contracts_pipeline_module_retries_total{module="assembler"}') ?? 0) -
			(first.get('contracts_pipeline_module_retries_total{module="assembler"}') ?? 0),
		1,
	);
});

test('job attempts count once when they finish, by type and status, with their run time; deleting jobs keeps them', async () => {
	const { rows } = await db.pool.query<{ id: string }>(
		`INSERT INTO ops.jobs (job_type, status) VALUES ('metrics_runs', 'running'), ('metrics_runs', 'dead') RETURNING id`,
	);
	const [a, b] = rows.map((r) => r.id);
	// A: claimed (running, open), then finished after 2 s; B: recorded finished at once (dead, 40 ms).
	const { rows: open } = await db.pool.query<{ id: string }>(
		`INSERT INTO ops.job_runs (job_id, attempt, status, started_at) VALUES ($1, 1, 'running', now() - interval '2 seconds') RETURNING id`,
		[a],
	);
	const mid = (await scrape()).text;
	assert.ok(!/^contracts_job_run\w*\{job_type="metrics_runs"/m.test(mid), 'an open attempt is not counted');
	await db.pool.query(`UPDATE ops.job_runs SET status = 'succeeded', finished_at = now() WHERE id = $1`, [open[0].id]);
	await db.pool.query(`UPDATE ops.job_runs SET status = 'succeeded' WHERE id = $1`, [open[0].id]); // no second count
	await db.pool.query(
		`INSERT INTO ops.job_runs (job_id, attempt, status, started_at, finished_at)
		 VALUES ($1, 1, 'dead', now() - interval '40 milliseconds', now())`,
		[b],
	);
	const count = async () => {
		const { parsed: p } = await scrape();
		return [
			p.value('contracts_job_runs_total', { job_type: 'metrics_runs', status: 'succeeded' }),
			p.value('contracts_job_runs_total', { job_type: 'metrics_runs', status: 'dead' }),
			p.line('contracts_job_run_duration_seconds_bucket', { job_type: 'metrics_runs', le: '0.05' }),
			p.line('contracts_job_run_duration_seconds_bucket', { job_type: 'metrics_runs', le: '1' }),
			p.line('contracts_job_run_duration_seconds_bucket', { job_type: 'metrics_runs', le: '2.5' }),
			p.line('contracts_job_run_duration_seconds_count', { job_type: 'metrics_runs' }),
		];
	};
	assert.deepEqual(await count(), [1, 1, 1, 1, 2, 2]);
	await db.pool.query(`DELETE FROM ops.jobs WHERE job_type = 'metrics_runs'`); // its runs go with it (cascade)
	assert.deepEqual(await count(), [1, 1, 1, 1, 2, 2], 'retention does not lower them');
});

test('Generate without a run id or step records the Workflow Label as the module and a null run', async () => {
	model.script.push({ text: 'free', promptTokens: 1, completionTokens: 1 });
	const out = await generateOperation.execute(deps(), {
		system: 's',
		input: 'i',
		model: 'cheap',
		run_id: 'not-a-uuid',
	});
	const { rows } = await db.pool.query('SELECT run_id, module, outcome FROM maas.llm_calls WHERE call_id = $1', [
		out.data!.call_id,
	]);
	assert.deepEqual(rows, [{ run_id: null, module: 'metrics-test', outcome: 'ok' }]);
});

test('Pipeline Metrics refuses a bad job window with 422 naming window_seconds', async () => {
	await assert.rejects(
		pipelineMetricsOperation.execute(deps(), { window_seconds: -1 }),
		(e: { statusCode?: number; message?: string }) => e.statusCode === 422 && /window_seconds/.test(String(e.message)),
	);
});

test('property: hostile model names, module labels and job types in the database still give a parseable scrape', async () => {
	// Model names and module labels of any size (cut to MAX_LABEL_LENGTH when stored); job types as long as
	// ops.jobs can hold (its jobs_due_idx btree index takes at most 2704 bytes: 600 code points × 4 bytes fit).
	const label = fc.oneof(hostileString(64), fc.string({ unit: 'binary', minLength: 5_000, maxLength: 20_000 }));
	const jobType = fc.oneof(hostileString(64), fc.string({ unit: 'binary', minLength: 300, maxLength: 600 }));
	await fc.assert(
		fc.asyncProperty(label, label, jobType, async (modelName, module, type) => {
			await db.pool.query(
				'DELETE FROM maas.llm_calls; DELETE FROM ops.jobs; DELETE FROM maas.metric_counters; DELETE FROM maas.metric_models',
			);
			await recordLlmCall(
				db.pool,
				'00000000-0000-4000-8000-000000000001',
				{ module },
				{
					attempt: 1,
					model: modelName,
					startedAt: new Date(),
					durationMs: 12,
					outcome: 'ok',
					httpStatus: 200,
					promptTokens: 3,
					completionTokens: 4,
				},
			);
			// PostgreSQL text cannot hold NUL or a lone surrogate: what a job type can be once stored.
			const storedType = replaceUnstorable(type).text;
			await db.pool.query(`INSERT INTO ops.jobs (job_type) VALUES ($1)`, [storedType]);
			const { parsed } = await scrape();
			const stored = storableLabel(modelName);
			assert.equal(parsed.value('contracts_llm_requests_total', { model: stored, outcome: 'ok' }), 1);
			assert.equal(parsed.value('contracts_llm_tokens_total', { model: stored, kind: 'completion' }), 4);
			assert.equal(parsed.value('contracts_jobs', { job_type: storedType, status: 'queued' }), 1);
			// Module labels are one of the fixed five whatever the stored label.
			const modules = parsed.family('contracts_pipeline_module_calls_total').metrics.map((s) => s.labels?.module);
			assert.deepEqual(modules.sort(), [...MODULES].sort());
			const storedModule = storableLabel(module);
			const expected = Object.hasOwn(STEP_MODULES, storedModule) ? STEP_MODULES[storedModule] : 'other';
			assert.equal(parsed.value('contracts_pipeline_module_calls_total', { module: expected }), 1);
		}),
		propertyParams('pipeline metrics: hostile labels', {
			endOnFailure: true,
			// database writes and a scrape per run: 200, fewer when PROPERTY_RUNS asks for fewer
			numRuns: Math.min(200, PROPERTY_RUNS),
		}),
	);
});

test('model labels: the first 20 models get their own label, later ones count as other, and no counter moves between them', async () => {
	await db.pool.query('DELETE FROM maas.metric_counters; DELETE FROM maas.metric_models; DELETE FROM maas.llm_calls');
	const call = (model: string) =>
		recordLlmCall(
			db.pool,
			randomUUID(),
			{ module: 'analysis' },
			{
				attempt: 1,
				model,
				startedAt: new Date(),
				durationMs: 5,
				outcome: 'ok',
				httpStatus: 200,
				promptTokens: 1,
				completionTokens: 1,
			},
		);
	for (let i = 0; i < 25; i++) await call(`model-${i}`);
	await call('model-3');
	await call('model-24');
	const { parsed } = await scrape();
	const models = parsed.family('contracts_llm_requests_total').metrics.map((s) => s.labels?.model);
	assert.equal(models.length, 21, '20 named + other');
	assert.equal(parsed.value('contracts_llm_requests_total', { model: 'model-3', outcome: 'ok' }), 2);
	assert.equal(
		parsed.value('contracts_llm_requests_total', { model: 'other', outcome: 'ok' }),
		6,
		'model-20 … 24, and 24 again',
	);
	assert.equal(parsed.value('contracts_llm_tokens_total', { model: 'other', kind: 'prompt' }), 6);
});

test('migration 017 backfills the rollup from the rows that exist before it', async () => {
	const server = await resolvePostgres();
	const old = await createDatabase(server.url);
	const dir = mkdtempSync(join(tmpdir(), 'migrations-016-'));
	const pool = new Pool({ connectionString: old.url });
	try {
		const all = join(__dirname, '../../db/migrations');
		for (const f of readdirSync(all).filter((f) => f < '017')) copyFileSync(join(all, f), join(dir, f));
		await migrate(old.url, { dir });
		await pool.query(`INSERT INTO maas.pipeline_runs (user_id, user_query, status, created_at, updated_at, analysis_result, final_context_payload)
			VALUES ('u', 'q', 'COMPLETED', now() - interval '3 seconds', now(), '{"context_found":[1]}', 'ctx'),
			       ('u', 'q', 'FAILED', now(), now(), '{"context_found":[]}', NULL), ('u', 'q', 'NEW', now(), now(), NULL, NULL)`);
		await pool.query(`INSERT INTO maas.llm_calls (call_id, attempt, module, model, started_at, duration_ms, outcome, prompt_tokens, completion_tokens)
			VALUES ('00000000-0000-4000-8000-000000000001', 1, 'analysis', 'cheap', now(), 200, 'rate_limited', NULL, NULL),
			       ('00000000-0000-4000-8000-000000000001', 2, 'analysis', 'cheap', now(), 4000, 'ok', 7, 3),
			       ('00000000-0000-4000-8000-000000000002', 1, 'summarise', 'strong', now(), 50, 'ok', 1, 1)`);
		await migrate(old.url);
		const { rows } = await pool.query(
			`SELECT name, labels, sum(value)::float8 AS v FROM maas.metric_counters GROUP BY 1, 2 ORDER BY 1, 2::text`,
		);
		const got = new Map(rows.map((r) => [`${r.name}${JSON.stringify(r.labels)}`, r.v]));
		for (const [key, value] of [
			['requests{}', 3],
			['finished_runs{"status":"COMPLETED"}', 1],
			['finished_runs{"status":"FAILED"}', 1],
			['completion_duration_seconds{"le":"5"}', 1],
			['analyses{}', 2],
			['analyses_context_found{}', 1],
			['assembled_contexts{}', 1],
			['assembled_context_bytes{}', 3],
			['llm_requests{"model":"cheap","outcome":"ok"}', 1],
			['llm_requests{"model":"cheap","outcome":"rate_limited"}', 1],
			['llm_tokens{"kind":"prompt","model":"cheap"}', 7],
			['module_calls{"module":"analyzer"}', 1],
			['module_retries{"module":"analyzer"}', 1],
			['module_calls{"module":"other"}', 1],
			['module_attempt_seconds{"le":"0.25","module":"analyzer"}', 1],
			['module_attempt_seconds{"le":"5","module":"analyzer"}', 1],
		] as const)
			assert.equal(got.get(key), value, key);
		assert.ok(Math.abs(got.get('completion_duration_seconds_sum{}') - 3) < 0.01);
		// After the backfill, the triggers go on from there.
		await pool.query(`INSERT INTO maas.pipeline_runs (user_id, user_query) VALUES ('u', 'q')`);
		const { rows: r2 } = await pool.query(
			`SELECT sum(value)::float8 AS v FROM maas.metric_counters WHERE name = 'requests'`,
		);
		assert.equal(r2[0].v, 4);
	} finally {
		await pool.end();
		await old.drop();
		await server.stop();
		rmSync(dir, { recursive: true, force: true });
	}
});
