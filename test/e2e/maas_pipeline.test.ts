/**
 * The MaaS pipeline of seed 001 in a real n8n 2.4.8: M00 (POST /webhook/api/query), M01 (status
 * polling), M10 Orchestrator (Pipeline Trigger → M16 Dispatch → M11 Analyzer / M12 Assembler /
 * M13 Final Responder / M14 Archivist), M15 Sweep, WF99 — against a stand-in model server on 127.0.0.1.
 * Checked: a query reaches COMPLETED with the model's answer through the polling API; the Archivist's
 * signal 2 lands in lsm_storage before the same user's next run completes; after the trigger's backend
 * is terminated the next query still completes; a model that always fails ends the run FAILED after
 * the retries, with ops.errors rows and nothing stuck; bad input gets the ErrorEnvelope's public part only
 * (issue 25: PublicError, its details in the ops.errors row its correlation_id finds).
 * Issue 11: M00/M01's Webhooks use JWT Auth; every call carries a token for its user (test/helpers/jwt.ts,
 * a secret per run) and the run's owner is the token's sub. Without a token, or with an expired /
 * wrongly signed one, n8n refuses the call and no row is written; a body user_id ≠ sub → 403 + one
 * ops.errors row; another user's run polls as 404, shaped exactly like an unknown id; no token appears
 * in ops.errors or n8n's log.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { PublicError } from '../../nodes/shared/contracts/envelope';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { failingModel, llmCredential, normalModel } from '../helpers/maasModel';
import { ModelStandIn } from '../helpers/modelStandIn';
import { assertNoTokenLeaked, bearer, mint, testSecret, unsigned, type MintOptions } from '../helpers/jwt';
import { jwtCredential, startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
import { shippedWebhooks } from '../helpers/webhooks';

let db: TestDatabase;
let n8n: RunningN8n;
const model = new ModelStandIn();
const SECRET = testSecret();
/** Every token minted in this file, for the final scan. */
const minted = new Set<string>();
function token(sub: string, options: Partial<MintOptions> = {}): string {
	const t = mint(sub, { secret: SECRET, ...options });
	minted.add(t);
	return t;
}
const MAAS = path.join(WORKFLOWS, 'maas');
/** The status-polling webhook whose path carries the id (n8n serves it under its webhookId). */
const PATH_ID_HOOK = '5e0c1a9e-7d1f-4c1a-9f00-00000000a01d';

beforeAll(async () => {
	db = await setupDatabase();
	await model.up();
	model.respond = normalModel;
	const maas = readdirSync(MAAS)
		// M17 (Pipeline Push: its own port and credential) has its own test, test/e2e/pipeline_push.test.ts
		.filter((f) => f.endsWith('.json') && f !== 'M17_push.json')
		.map((f) => path.join(MAAS, f));
	n8n = await startN8n(
		db.url,
		[path.join(WORKFLOWS, 'WF99e_catch_all.json'), path.join(WORKFLOWS, 'WF99_global_err_handler.json'), ...maas],
		['api/query'],
		[llmCredential(model.url), jwtCredential(SECRET)],
	);
}, 30 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await model.down();
	await db?.drop();
});

/** The owner of each run this file started (request_id → user), so polling uses the owner's token. */
const owners = new Map<string, string>();

async function answer(res: Response) {
	const text = await res.text();
	let json: Record<string, unknown> = {};
	try {
		json = JSON.parse(text) as Record<string, unknown>;
	} catch {
		// n8n's own refusals may be plain text
	}
	return { status: res.status, text, json };
}

/** POST /api/query as `user` (a token for that sub; `auth` overrides: another token, or null for none). */
async function ask(user: string, body: unknown, auth: string | null = token(user)) {
	const res = await fetch(`${n8n.url}/webhook/api/query`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...(auth === null ? {} : bearer(auth)) },
		body: JSON.stringify(body),
	});
	const out = await answer(res);
	if (typeof out.json.request_id === 'string') owners.set(out.json.request_id, user);
	return out;
}

/** GET the status of `id` as its owner (or with `auth`: another token, or null for none). */
async function poll(id: string, auth: string | null = token(owners.get(id) ?? 'nobody')) {
	const res = await fetch(`${n8n.url}/webhook/api/query/status?id=${encodeURIComponent(id)}`, {
		headers: auth === null ? {} : bearer(auth),
	});
	return answer(res);
}

const count = async (table: string) =>
	(await db.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
	const end = Date.now() + ms;
	for (;;) {
		const value = await probe();
		if (value !== undefined) return value;
		if (Date.now() > end) {
			const { rows } = await db.pool.query(
				'SELECT id, user_id, status, previous_transition, archived_at FROM maas.pipeline_runs ORDER BY created_at',
			);
			assert.fail(`timed out waiting for ${what}\nruns: ${JSON.stringify(rows)}\n${n8n.logs().slice(-3000)}`);
		}
		await new Promise((r) => setTimeout(r, 300));
	}
}

const finished = (id: string) => async () => {
	const { json } = await poll(id);
	return json.status === 'processing' ? undefined : json;
};

test("POST /api/query → 201 processing, then the polling API answers completed with the model's answer", async () => {
	const asked = await ask('user-1', { user_id: 'user-1', query: 'What is compare-and-swap?' });
	assert.equal(asked.status, 201);
	assert.equal(asked.json.status, 'processing');
	const id = asked.json.request_id as string;
	assert.deepEqual((await poll(id)).json.status, 'processing');
	const done = await until('completion', finished(id));
	assert.equal(done.status, 'completed', JSON.stringify(done));
	assert.match(String(done.answer), /^Answer to: <context>## Element 1: query\nWhat is compare-and-swap\?/);
	const viaPath = await fetch(`${n8n.url}/webhook/${PATH_ID_HOOK}/api/query/${id}/status`, {
		headers: bearer(token('user-1')),
	});
	assert.deepEqual(await viaPath.json(), done, 'the /api/query/:id/status form answers the same');
	const { rows } = await db.pool.query(
		'SELECT analysis_result, draft_context IS NOT NULL AS drafted, final_context_payload IS NOT NULL AS payload FROM maas.pipeline_runs WHERE id = $1',
		[id],
	);
	assert.deepEqual(rows[0], {
		analysis_result: {
			needs_context: false,
			context_type: 'none',
			time_scope: 'now',
			search_keywords: [],
			context_found: {},
		},
		drafted: true,
		payload: true,
	});
});

test("Archivist: signal 2 lands in lsm_storage; the same user's next run waits for it, then completes with that memory", async () => {
	const first = (await ask('user-2', { user_id: 'user-2', query: 'first question' })).json.request_id as string;
	const second = (await ask('user-2', { query: 'second question' })).json.request_id as string;
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
	assert.ok(
		new Date(rows[0].lsm_at) <= new Date(started[0].analysed),
		'the second run answered only after signal 2 of the first',
	);
	const ctx = await db.pool.query('SELECT draft_context FROM maas.pipeline_runs WHERE id = $1', [second]);
	assert.match(ctx.rows[0].draft_context, /\[memory \] Summary: Q: first question/);
});

test("after the trigger's backend is terminated, the next query still completes (reconnect + catch-up)", async () => {
	const { rows } = await db.pool.query(
		"SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = 'n8n-nodes-contracts pipeline trigger' AND datname = current_database()",
	);
	assert.ok(rows.length >= 1, 'the trigger has its own connection');
	const id = (await ask('user-3', { query: 'after the outage' })).json.request_id as string;
	assert.equal((await until('completion after reconnect', finished(id))).status, 'completed');
});

test('a model that always fails: the run ends FAILED after the retries, ops.errors records it, nothing stuck', async () => {
	model.respond = failingModel;
	try {
		const id = (await ask('user-4', { user_id: 'user-4', query: 'doomed' })).json.request_id as string;
		const done = await until('the failure', finished(id), 90_000);
		assert.equal(done.status, 'failed');
		// the caller reads the public text only (issue 25 §4); the model's message stays in ops.errors
		assert.match(String(done.error), /^a service this request depends on failed \(status 5\d\d\); the correlation_id/);
		assert.doesNotMatch(String(done.error), /attempts|Generate|model/);
		// The error rows of this run (the Archivist of an earlier run may fail on the same model too).
		const { rows } = await db.pool.query(
			"SELECT node, kind, retryable FROM ops.errors WHERE details->'ctx'->>'run_id' = $1",
			[id],
		);
		assert.deepEqual(rows, [{ node: 'Generate', kind: 'upstream', retryable: true }]);
		// the run's error is built from WF99's public answer field by field (Fail Error, no object literal: seed 002 §3.1)
		const stored = (await db.pool.query('SELECT error FROM maas.pipeline_runs WHERE id = $1', [id])).rows[0].error;
		assert.equal(stored.message, done.error);
		const logged = await db.pool.query('SELECT message FROM ops.errors WHERE correlation_id::text = $1', [
			stored.correlation_id,
		]);
		assert.match(String(logged.rows[0]?.message), /failed after 4 attempts/, 'ops.errors keeps the real message');
		assert.equal(stored.kind, 'upstream');
		assert.equal(typeof stored.status_code, 'number');
		assert.ok(stored.status_code >= 500, `status_code ${stored.status_code}`);
		assert.match(String(stored.correlation_id), /^[0-9a-f-]{36}$/);
		const stuck = await db.pool.query(
			"SELECT count(*)::int AS n FROM maas.pipeline_runs WHERE status IN ('ANALYZING', 'ASSEMBLING', 'RESPONDING')",
		);
		assert.equal(stuck.rows[0].n, 0);
	} finally {
		model.respond = normalModel;
	}
}, 120_000);

test('bad input: no query → 422 public answer naming the field (one ops.errors row); unknown id → 404', async () => {
	const res = await ask('user-5', { user_id: 'user-5' });
	assert.equal(res.status, 422);
	const answer = publicAnswer(res);
	assert.deepEqual([answer.kind, answer.field], ['validation', 'query']);
	const { rows } = await db.pool.query(
		"SELECT node, details->'node_details'->>'field' AS field, details->'input' IS NOT NULL AS has_input FROM ops.errors WHERE correlation_id = $1",
		[answer.correlation_id],
	);
	assert.deepEqual(rows, [{ node: 'Create Run', field: 'query', has_input: true }]);
	const missing = await poll('6f1c2d3e-0000-4000-8000-000000000000', token('user-5'));
	assert.equal(missing.status, 404);
	assert.equal(publicAnswer(missing).kind, 'not_found');
});

test('every Webhook of M00 and M01 uses JWT Auth with the Contracts Webhook JWT credential', () => {
	const hooks = shippedWebhooks(['M00_request_handler.json', 'M01_query_status.json'].map((f) => path.join(MAAS, f)));
	assert.equal(hooks.length, 3);
	for (const h of hooks)
		assert.deepEqual([h.authentication, h.jwtCredentialId], ['jwtAuth', 'jwtContracts01'], `${h.file} ${h.node}`);
});

test("no token: every M00/M01 webhook answers n8n's 401; no pipeline_runs or ops.errors row", async () => {
	const runs = await count('maas.pipeline_runs');
	const errors = await count('ops.errors');
	const hooks = shippedWebhooks(['M00_request_handler.json', 'M01_query_status.json'].map((f) => path.join(MAAS, f)));
	for (const h of hooks) {
		const res = await fetch(
			`${n8n.url}/webhook/${h.urlPath}${h.method === 'GET' ? '?id=6f1c2d3e-0000-4000-8000-000000000000' : ''}`,
			{
				method: h.method,
				headers: { 'content-type': 'application/json' },
				body: h.method === 'GET' ? undefined : JSON.stringify({ user_id: 'user-6', query: 'free ride?' }),
			},
		);
		assert.equal(res.status, 401, `${h.method} ${h.urlPath}: ${await res.text()}`);
	}
	assert.deepEqual([await count('maas.pipeline_runs'), await count('ops.errors')], [runs, errors]);
});

test("an expired, wrongly signed or unsigned token → n8n's 403 on POST /api/query and GET status; no rows", async () => {
	const id = (await ask('user-7', { query: 'mine' })).json.request_id as string;
	assert.ok(id);
	const runs = await count('maas.pipeline_runs');
	const errors = await count('ops.errors');
	for (const bad of [
		token('user-7', { expiresIn: -30 }),
		token('user-7', { secret: testSecret() }),
		unsigned('user-7'),
	]) {
		minted.add(bad);
		const asked = await ask('user-7', { query: 'again' }, bad);
		assert.equal(asked.status, 403, asked.text);
		const polled = await poll(id, bad);
		assert.equal(polled.status, 403, polled.text);
		assert.ok(!asked.text.includes(bad) && !polled.text.includes(bad), 'the answer does not echo the token');
	}
	assert.deepEqual([await count('maas.pipeline_runs'), await count('ops.errors')], [runs, errors]);
});

test("a body user_id ≠ the token's sub → 403 public answer (IDENTITY_MISMATCH in its one ops.errors row), no run", async () => {
	const runs = await count('maas.pipeline_runs');
	const errors = await count('ops.errors');
	const res = await ask('user-8', { user_id: 'user-9', query: "on someone else's account" });
	assert.equal(res.status, 403, res.text);
	const answer = publicAnswer(res, ['user-9', "on someone else's account"]);
	assert.equal(answer.kind, 'auth');
	const { rows } = await db.pool.query(
		"SELECT node, kind, status_code, details->'node_details'->>'code' AS code FROM ops.errors WHERE correlation_id = $1",
		[answer.correlation_id],
	);
	assert.deepEqual(rows, [{ node: 'Create Run', kind: 'auth', status_code: 403, code: 'IDENTITY_MISMATCH' }]);
	assert.deepEqual([await count('maas.pipeline_runs'), await count('ops.errors')], [runs, errors + 1]);
});

/**
 * A refusal's answer (issue 25 §4): a strict PublicError, no details/_internal/input/meta, nothing of the
 * request (`sent`: the body's values, the token) echoed.
 */
function publicAnswer(res: { json: unknown; text: string }, sent: string[] = []): PublicError {
	const answer = PublicError.parse(res.json);
	for (const key of ['details', '_internal', 'input', 'error', 'meta', 'data'])
		assert.ok(!(key in (res.json as object)), `the answer carries ${key}: ${res.text}`);
	for (const value of [...sent, 'jwtPayload', 'webhookUrl', 'headers'])
		assert.ok(!res.text.includes(value), `the answer carries ${value}: ${res.text}`);
	return answer;
}

/** An envelope with the queried id replaced and per-call values (correlation, times, ids of the call) removed. */
function shape(json: Record<string, unknown>, id: string): unknown {
	const PER_CALL =
		/^(ts|correlation_id|execution_id|timestamp|occurred_at|received_at|started_at|created_at|duration_ms|trace_id|span_id|error_id)$/;
	const walk = (v: unknown): unknown => {
		if (typeof v === 'string') return v.split(id).join('<id>');
		if (Array.isArray(v)) return v.map(walk);
		if (v && typeof v === 'object')
			return Object.fromEntries(
				Object.entries(v)
					.filter(([k]) => !PER_CALL.test(k))
					.map(([k, x]) => [k, walk(x)]),
			);
		return v;
	};
	return walk(json);
}

test("polling B's run with A's token → 404, shaped exactly like an unknown id (both forms of the status URL)", async () => {
	const bRun = (await ask('user-B', { query: "B's secret question" })).json.request_id as string;
	assert.equal((await poll(bRun)).status, 200, 'B polls her own run');
	const tokenA = token('user-A');
	const asA = await poll(bRun, tokenA);
	assert.equal(asA.status, 404, asA.text);
	const unknownId = '6f1c2d3e-0000-4000-8000-00000000abcd';
	const unknown = await poll(unknownId, tokenA);
	assert.equal(unknown.status, 404);
	assert.equal(publicAnswer(asA, ["B's secret question"]).kind, 'not_found');
	assert.deepEqual(shape(asA.json, bRun), shape(unknown.json, unknownId));
	assert.ok(!asA.text.includes("B's secret question"));
	const viaPath = await fetch(`${n8n.url}/webhook/${PATH_ID_HOOK}/api/query/${bRun}/status`, {
		headers: bearer(token('user-A')),
	});
	assert.equal(viaPath.status, 404);
});

test("no token used in this file appears in any ops.errors row or in n8n's log", async () => {
	await assertNoTokenLeaked(db.pool, n8n.transcript(), minted);
});
