/**
 * The MaaS pipeline of seed 001 in a real n8n 2.4.8: M00 (POST /webhook/api/query), M01 (status
 * polling), M10 Orchestrator (Pipeline Trigger → M16 Dispatch → M11 Analyzer / M12 Assembler /
 * M13 Final Responder / M14 Archivist), M15 Sweep, WF99 — against a stand-in model server on 127.0.0.1.
 * Checked: a query reaches COMPLETED with the model's answer through the polling API; the Archivist's
 * signal 2 lands in lsm_storage before the same user's next run completes; after the trigger's backend
 * is terminated the next query still completes; a model that always fails ends the run FAILED after
 * the retries, with ops.errors rows and nothing stuck; bad input gets an ErrorEnvelope.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ErrorEnvelope } from '../../nodes/shared/contracts/envelope';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { ModelStandIn } from '../helpers/modelStandIn';
import { startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';

let db: TestDatabase;
let n8n: RunningN8n;
const model = new ModelStandIn();

/** The stand-in model: JSON for the Analyzer, a summary for the Archivist, text for the others. */
function normalModel(body: Record<string, unknown>) {
	const messages = body.messages as { role: string; content: string }[];
	const system = messages[0].content;
	const user = messages[1].content;
	if (body.response_format) return { text: JSON.stringify({ needs_context: false, context_type: 'none', time_scope: 'now', search_keywords: [], context_found: {} }) };
	if (/Summarise this exchange/.test(system)) return { text: `Summary: ${user.slice(0, 60)}` };
	if (/Optimise the draft/.test(system)) return { text: `<context>${user.slice(0, 200)}</context>` };
	return { text: `Answer to: ${user.slice(0, 120)}` };
}

before(
	async () => {
		db = await setupDatabase();
		await model.up();
		model.respond = normalModel;
		const maas = readdirSync(path.join(WORKFLOWS, 'maas')).filter((f) => f.endsWith('.json')).map((f) => path.join(WORKFLOWS, 'maas', f));
		n8n = await startN8n(db.url, [path.join(WORKFLOWS, 'WF99_global_err_handler.json'), ...maas], ['api/query'], [
			{ id: 'llmContracts01', name: 'Contracts LLM', type: 'contractsLlmApi', data: { api: 'openai', baseUrl: model.url, apiKey: 'sk-stand-in', model: 'stand-in' } },
		]);
	},
	{ timeout: 30 * 60_000 },
);

after(async () => {
	await n8n?.stop();
	await model.down();
	await db?.drop();
});

async function ask(body: unknown) {
	const res = await fetch(`${n8n.url}/webhook/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
	return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function poll(id: string) {
	const res = await fetch(`${n8n.url}/webhook/api/query/status?id=${encodeURIComponent(id)}`);
	return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
	const end = Date.now() + ms;
	for (;;) {
		const value = await probe();
		if (value !== undefined) return value;
		if (Date.now() > end) {
			const { rows } = await db.pool.query('SELECT id, user_id, status, previous_transition, archived_at FROM maas.pipeline_runs ORDER BY created_at');
			assert.fail(`timed out waiting for ${what}\nruns: ${JSON.stringify(rows)}\n${n8n.logs().slice(-3000)}`);
		}
		await new Promise((r) => setTimeout(r, 300));
	}
}

const finished = (id: string) => async () => {
	const { json } = await poll(id);
	return json.status === 'processing' ? undefined : json;
};

test('POST /api/query → 201 processing, then the polling API answers completed with the model\'s answer', async () => {
	const asked = await ask({ user_id: 'user-1', query: 'What is compare-and-swap?' });
	assert.equal(asked.status, 201);
	assert.equal(asked.json.status, 'processing');
	const id = asked.json.request_id as string;
	assert.deepEqual((await poll(id)).json.status, 'processing');
	const done = await until('completion', finished(id));
	assert.equal(done.status, 'completed', JSON.stringify(done));
	assert.match(String(done.answer), /^Answer to: <context>## Element 1: query\nWhat is compare-and-swap\?/);
	const viaPath = await fetch(`${n8n.url}/webhook/5e0c1a9e-7d1f-4c1a-9f00-00000000a01d/api/query/${id}/status`);
	assert.deepEqual(await viaPath.json(), done, 'the /api/query/:id/status form answers the same');
	const { rows } = await db.pool.query('SELECT analysis_result, draft_context IS NOT NULL AS drafted, final_context_payload IS NOT NULL AS payload FROM maas.pipeline_runs WHERE id = $1', [id]);
	assert.deepEqual(rows[0], { analysis_result: { needs_context: false, context_type: 'none', time_scope: 'now', search_keywords: [], context_found: {} }, drafted: true, payload: true });
});

test('Archivist: signal 2 lands in lsm_storage; the same user\'s next run waits for it, then completes with that memory', async () => {
	const first = (await ask({ user_id: 'user-2', query: 'first question' })).json.request_id as string;
	const second = (await ask({ user_id: 'user-2', query: 'second question' })).json.request_id as string;
	await until('both completed', async () => {
		const a = await finished(first)();
		const b = await finished(second)();
		return a && b ? true : undefined;
	});
	const { rows } = await db.pool.query(
		`SELECT r.id, r.archived_at, l.created_at AS lsm_at, r.updated_at
		 FROM maas.pipeline_runs r LEFT JOIN maas.lsm_storage l ON l.run_id = r.id WHERE r.user_id = 'user-2' ORDER BY r.created_at`,
	);
	assert.ok(rows[0].lsm_at, 'the first run was summarised into lsm_storage');
	const { rows: started } = await db.pool.query(
		"SELECT min(l.created_at) AS analysed FROM maas.raw_logs l WHERE l.run_id = $1 AND l.message_type = 'assistant_response'",
		[second],
	);
	assert.ok(new Date(rows[0].lsm_at) <= new Date(started[0].analysed), 'the second run answered only after signal 2 of the first');
	const ctx = await db.pool.query("SELECT draft_context FROM maas.pipeline_runs WHERE id = $1", [second]);
	assert.match(ctx.rows[0].draft_context, /\[memory \] Summary: Q: first question/);
});

test('after the trigger\'s backend is terminated, the next query still completes (reconnect + catch-up)', async () => {
	const { rows } = await db.pool.query(
		"SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = 'n8n-nodes-contracts pipeline trigger' AND datname = current_database()",
	);
	assert.ok(rows.length >= 1, 'the trigger has its own connection');
	const id = (await ask({ user_id: 'user-3', query: 'after the outage' })).json.request_id as string;
	assert.equal((await until('completion after reconnect', finished(id))).status, 'completed');
});

test('a model that always fails: the run ends FAILED after the retries, ops.errors records it, nothing stuck', { timeout: 120_000 }, async () => {
	model.respond = () => ({ status: 503 });
	try {
		const id = (await ask({ user_id: 'user-4', query: 'doomed' })).json.request_id as string;
		const done = await until('the failure', finished(id), 90_000);
		assert.equal(done.status, 'failed');
		assert.match(String(done.error), /failed after 4 attempts/);
		// The error rows of this run (the Archivist of an earlier run may fail on the same model too).
		const { rows } = await db.pool.query("SELECT node, kind, retryable FROM ops.errors WHERE details->'ctx'->>'run_id' = $1", [id]);
		assert.deepEqual(rows, [{ node: 'Generate', kind: 'upstream', retryable: true }]);
		const stuck = await db.pool.query("SELECT count(*)::int AS n FROM maas.pipeline_runs WHERE status IN ('ANALYZING', 'ASSEMBLING', 'RESPONDING')");
		assert.equal(stuck.rows[0].n, 0);
	} finally {
		model.respond = normalModel;
	}
});

test('bad input: no query → 422 ErrorEnvelope naming the field (one ops.errors row); unknown id → 404', async () => {
	const res = await ask({ user_id: 'user-5' });
	assert.equal(res.status, 422);
	const envelope = ErrorEnvelope.parse(res.json);
	assert.equal((envelope.error.details.node_details as Record<string, unknown>).field, 'query');
	const { rows } = await db.pool.query('SELECT node FROM ops.errors WHERE correlation_id = $1', [envelope.meta.correlation.correlation_id]);
	assert.deepEqual(rows, [{ node: 'Create Run' }]);
	const missing = await poll('6f1c2d3e-0000-4000-8000-000000000000');
	assert.equal(missing.status, 404);
	assert.equal(ErrorEnvelope.parse(missing.json).error.kind, 'not_found');
});
