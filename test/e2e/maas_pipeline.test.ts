/**
 * The MaaS entry points in a real n8n 2.4.8 (seed 001 steps 0 and 4): M00 (POST /webhook/api/query →
 * Create Run) and M01 (GET /webhook/api/query/status?id=… → Get Status), with WF99 for their errors,
 * and the Pipeline Trigger running inside n8n (a test workflow: Pipeline Trigger → Capture): a new run
 * is captured through LISTEN, and again after the trigger's backend is terminated.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ErrorEnvelope } from '../../nodes/shared/contracts/envelope';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';

let db: TestDatabase;
let n8n: RunningN8n;

before(
	async () => {
		db = await setupDatabase();
		n8n = await startN8n(
			db.url,
			[
				path.join(WORKFLOWS, 'WF99_global_err_handler.json'),
				path.join(WORKFLOWS, 'maas', 'M00_request_handler.json'),
				path.join(WORKFLOWS, 'maas', 'M01_query_status.json'),
				path.join(__dirname, 'workflows', 'test_pipeline_trigger.json'),
			],
			['api/query'],
		);
	},
	{ timeout: 30 * 60_000 },
);

after(async () => {
	await n8n?.stop();
	await db?.drop();
});

async function ask(body: unknown) {
	const res = await fetch(`${n8n.url}/webhook/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
	return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function status(id: string) {
	const res = await fetch(`${n8n.url}/webhook/api/query/status?id=${encodeURIComponent(id)}`);
	return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function statusInDb(id: string): Promise<string> {
	const { rows } = await db.pool.query('SELECT status FROM maas.pipeline_runs WHERE id = $1', [id]);
	return rows[0]?.status;
}

async function until(what: string, check: () => Promise<boolean>, ms = 30_000) {
	const end = Date.now() + ms;
	while (!(await check())) {
		if (Date.now() > end) assert.fail(`timed out waiting for ${what}\n${n8n.logs().slice(-3000)}`);
		await new Promise((r) => setTimeout(r, 200));
	}
}

test('POST /api/query → 201 { request_id, status: "processing" }; the run and its raw_logs row exist', async () => {
	const res = await ask({ user_id: 'user-1', query: 'Summarise my week' });
	assert.equal(res.status, 201);
	assert.equal(res.json.status, 'processing');
	const { rows } = await db.pool.query('SELECT r.user_query, l.message_type FROM maas.pipeline_runs r JOIN maas.raw_logs l ON l.run_id = r.id WHERE r.id = $1', [res.json.request_id]);
	assert.deepEqual(rows, [{ user_query: 'Summarise my week', message_type: 'user_query' }]);
});

test('the Pipeline Trigger inside n8n hears the new run and the Capture takes it (NEW → ANALYZING)', async () => {
	const { json } = await ask({ user_id: 'user-2', query: 'q' });
	await until('the capture', async () => (await statusInDb(json.request_id as string)) === 'ANALYZING');
});

test('after the trigger\'s backend is terminated, it reconnects and the next run is still captured', async () => {
	const { rows } = await db.pool.query(
		"SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = 'n8n-nodes-contracts pipeline trigger' AND datname = current_database()",
	);
	assert.ok(rows.length >= 1, 'the trigger has its own connection');
	const { json } = await ask({ user_id: 'user-3', query: 'q' });
	await until('the capture after reconnect', async () => (await statusInDb(json.request_id as string)) === 'ANALYZING');
});

test('GET /api/query/status: processing, then completed with the answer; unknown id → 404 ErrorEnvelope', async () => {
	const { json } = await ask({ user_id: 'user-4', query: 'q' });
	const id = json.request_id as string;
	assert.deepEqual((await status(id)).json, { request_id: id, status: 'processing' });
	await db.pool.query("UPDATE maas.pipeline_runs SET status = 'COMPLETED', final_answer = 'Done.' WHERE id = $1", [id]);
	assert.deepEqual((await status(id)).json, { request_id: id, status: 'completed', answer: 'Done.' });
	const missing = await status('6f1c2d3e-0000-4000-8000-000000000000');
	assert.equal(missing.status, 404);
	assert.equal(ErrorEnvelope.parse(missing.json).error.kind, 'not_found');
});

test('POST /api/query without a query → 422 ErrorEnvelope naming the field, one ops.errors row', async () => {
	const res = await ask({ user_id: 'user-5' });
	assert.equal(res.status, 422);
	const envelope = ErrorEnvelope.parse(res.json);
	assert.equal((envelope.error.details.node_details as Record<string, unknown>).field, 'query');
	const { rows } = await db.pool.query('SELECT node FROM ops.errors WHERE correlation_id = $1', [envelope.meta.correlation.correlation_id]);
	assert.deepEqual(rows, [{ node: 'Create Run' }]);
});
