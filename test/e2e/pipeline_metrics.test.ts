/**
 * The shipped scrape target M18 (GET /webhook/metrics → Pipeline Capture Metrics → Pipeline Metrics →
 * Respond to Webhook) in a real n8n 2.4.8, beside the whole MaaS pipeline (M00–M16, WF99) and a stand-in
 * model on 127.0.0.1 (test/helpers/modelStandIn.ts). Checked over HTTP: the answer's status and
 * Content-Type, a text parse-prometheus-text-format reads, and — after one query the pipeline answers,
 * whose Analyzer is rate-limited once (429 with Retry-After: 1) — the exact run, module and model-call
 * figures, with every llm_calls row carrying the run's id (Generate's default Run ID / Step fields).
 * M18 asks for Header Auth (credential metricsHeaderAuth01, `Authorization: Bearer <token>` as Prometheus'
 * `authorization` setting sends it): 403 without or with a wrong token; a successful scrape is not saved
 * as an execution (saveDataSuccessExecution "none").
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { bearer, mint, testSecret } from '../helpers/jwt';
import { llmCredential, normalModel } from '../helpers/maasModel';
import { ModelStandIn } from '../helpers/modelStandIn';
import { jwtCredential, startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
import { parseScrape } from '../helpers/promText';

let db: TestDatabase;
let n8n: RunningN8n;
const model = new ModelStandIn();
const SECRET = testSecret();
const MAAS = path.join(WORKFLOWS, 'maas');
const SCRAPE_TOKEN = randomBytes(24).toString('base64url');
/** The Header Auth credential M18's Webhook references (the value Prometheus' `authorization` sends). */
const scrapeCredential = {
	id: 'metricsHeaderAuth01',
	name: 'Contracts Metrics Scrape',
	type: 'httpHeaderAuth',
	data: { name: 'Authorization', value: `Bearer ${SCRAPE_TOKEN}` },
};

beforeAll(async () => {
	db = await setupDatabase();
	await model.up();
	model.respond = normalModel;
	const maas = readdirSync(MAAS)
		// M17 (Pipeline Push: its own port and credential) has its own test, test/e2e/pipeline_push.test.ts; without
		// its credential n8n refuses to activate it (the harness publishes through n8n's REST API, which says so)
		.filter((f) => f.endsWith('.json') && f !== 'M17_push.json')
		.map((f) => path.join(MAAS, f));
	n8n = await startN8n(
		db.url,
		[path.join(WORKFLOWS, 'WF99e_catch_all.json'), path.join(WORKFLOWS, 'WF99_global_err_handler.json'), ...maas],
		// waitForWebhooks probes with GET, which would run M18: the POST-only api/query stands for all (one activation).
		['api/query'],
		[llmCredential(model.url), jwtCredential(SECRET), scrapeCredential],
	);
}, 30 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await model.down();
	await db?.drop();
});

async function scrape() {
	const res = await fetch(`${n8n.url}/webhook/metrics`, { headers: { authorization: `Bearer ${SCRAPE_TOKEN}` } });
	const text = await res.text();
	assert.equal(res.status, 200, `${text}\n${n8n.logs().slice(-3000)}`);
	return { res, text, m: parseScrape(text) };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
	const end = Date.now() + ms;
	for (;;) {
		const value = await probe();
		if (value !== undefined) return value;
		if (Date.now() > end) assert.fail(`timed out waiting for ${what}\n${n8n.logs().slice(-3000)}`);
		await new Promise((r) => setTimeout(r, 300));
	}
}

test('M18 answers GET /webhook/metrics with the Prometheus content type and a parseable text', async () => {
	const { res, text, m } = await scrape();
	// Express (n8n's server) writes the charset parameter first: the same media type and parameters.
	const [type, ...params] = String(res.headers.get('content-type'))
		.split(';')
		.map((p) => p.trim().toLowerCase());
	assert.deepEqual([type, params.sort()], ['text/plain', ['charset=utf-8', 'version=0.0.4']]);
	assert.ok(text.endsWith('\n'));
	assert.equal(m.value('contracts_pipeline_requests_total'), 0);
	assert.equal(m.value('contracts_pipeline_finished_runs_total', { status: 'COMPLETED' }), 0);
	assert.equal(m.family('contracts_pipeline_completion_duration_seconds').type, 'HISTOGRAM');
	assert.ok(m.value('contracts_pipeline_table_size_bytes', { table: 'maas.pipeline_runs' }) > 0);
});

test('after one query (its Analyzer rate-limited once), the scrape counts the run, its modules and its model calls', async () => {
	model.script.push({ status: 429, retryAfter: 1 });
	const res = await fetch(`${n8n.url}/webhook/api/query`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...bearer(mint('metrics-user', { secret: SECRET })) },
		body: JSON.stringify({ user_id: 'metrics-user', query: 'How are the metrics computed?' }),
	});
	const body = await res.text();
	assert.equal(res.status, 201, body);
	const { request_id: id } = JSON.parse(body) as { request_id: string };
	// Completed and archived: all four model calls (Analyzer, Assembler, Final Responder, Archivist) are done.
	await until('the run archived', async () => {
		const { rows } = await db.pool.query('SELECT status, archived_at FROM maas.pipeline_runs WHERE id = $1', [id]);
		return rows[0]?.status === 'COMPLETED' && rows[0].archived_at ? true : undefined;
	});
	const { m } = await scrape();
	assert.equal(m.value('contracts_pipeline_requests_total'), 1);
	assert.equal(m.value('contracts_pipeline_finished_runs_total', { status: 'COMPLETED' }), 1);
	assert.equal(m.value('contracts_pipeline_backlog_runs'), 0);
	assert.equal(m.value('contracts_pipeline_error_ratio'), 0);
	assert.equal(m.sample('contracts_pipeline_completion_duration_seconds').count, '1');
	assert.ok(Number(m.sample('contracts_pipeline_completion_duration_seconds').sum) >= 1, 'the 429 waited 1 s');
	for (const [module, retries] of [
		['analyzer', 1],
		['assembler', 0],
		['final_responder', 0],
		['archivist', 0],
	] as const) {
		assert.equal(m.value('contracts_pipeline_module_calls_total', { module }), 1, module);
		assert.equal(m.value('contracts_pipeline_module_retries_total', { module }), retries, module);
	}
	assert.equal(m.value('contracts_llm_requests_total', { model: 'stand-in', outcome: 'ok' }), 4);
	assert.equal(m.value('contracts_llm_requests_total', { model: 'stand-in', outcome: 'rate_limited' }), 1);
	assert.equal(m.value('contracts_pipeline_analyses_total'), 1);
	assert.equal(m.value('contracts_pipeline_analyses_context_found_total'), 0, 'the stand-in finds no context');
	// Table rows are PostgreSQL's estimate (pg_class.reltuples): exact right after ANALYZE.
	await db.pool.query('ANALYZE maas.lsm_storage, maas.llm_calls');
	const { m: analysed } = await scrape();
	assert.equal(analysed.value('contracts_pipeline_table_rows', { table: 'maas.lsm_storage' }), 1);
	assert.equal(analysed.value('contracts_pipeline_table_rows', { table: 'maas.llm_calls' }), 5);
	const { rows } = await db.pool.query('SELECT DISTINCT run_id::text AS run_id FROM maas.llm_calls');
	assert.deepEqual(rows, [{ run_id: id }], "every call row names the run (Generate's default Run ID)");
});

test('M18 refuses a scrape without the header or with a wrong token (403), and saves no successful scrape', async () => {
	const attempts: Array<Record<string, string>> = [
		{},
		{ authorization: 'Bearer wrong' },
		{ authorization: SCRAPE_TOKEN },
	];
	for (const headers of attempts) {
		const res = await fetch(`${n8n.url}/webhook/metrics`, { headers });
		const text = await res.text();
		assert.equal(res.status, 403, JSON.stringify(headers));
		assert.ok(!text.includes('contracts_'), 'no metric leaks');
	}
	// n8n keeps its executions in its own SQLite file here: the workflow's settings are what decide it.
	const wf = JSON.parse(readFileSync(path.join(MAAS, 'M18_metrics.json'), 'utf8')) as {
		settings: Record<string, unknown>;
		nodes: { name: string; parameters: Record<string, unknown>; credentials?: Record<string, { id: string }> }[];
	};
	assert.equal(wf.settings.saveDataSuccessExecution, 'none');
	assert.equal(wf.settings.saveDataErrorExecution, 'all');
	const hook = wf.nodes.find((n) => n.name === 'Webhook')!;
	assert.equal(hook.parameters.authentication, 'headerAuth');
	assert.equal(hook.credentials?.httpHeaderAuth?.id, 'metricsHeaderAuth01');
});

test("M18's error output goes the MaaS way: ERR — Source → Prepare DB Error → WF99 → Respond Error", () => {
	const wf = JSON.parse(readFileSync(path.join(MAAS, 'M18_metrics.json'), 'utf8')) as {
		nodes: { name: string; type: string; typeVersion: number; onError?: string; parameters: Record<string, unknown> }[];
		connections: Record<string, { main: { node: string }[][] }>;
	};
	const node = wf.nodes.find((n) => n.name === 'Pipeline Metrics')!;
	assert.deepEqual(
		[node.type, node.typeVersion, node.onError],
		['n8n-nodes-contracts.pipelineCapture', 2, 'continueErrorOutput'],
	);
	const next = (name: string, output = 0) => wf.connections[name].main[output].map((c) => c.node);
	// typeVersion 2: the Metrics operation has one output (Done), so n8n's error output is index 1.
	assert.deepEqual(next('Pipeline Metrics', 0), ['Respond']);
	assert.deepEqual(next('Pipeline Metrics', 1), ['ERR — Source Pipeline Metrics']);
	assert.deepEqual(next('ERR — Source Pipeline Metrics'), ['Prepare DB Error']);
	assert.deepEqual(next('Prepare DB Error'), ['Call WF99']);
	assert.deepEqual(next('Call WF99'), ['Respond Error']);
});
