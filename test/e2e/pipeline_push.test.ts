/**
 * Pipeline Push (seed 001 §3 step 4, variant B) in a real n8n 2.4.8: the shipped M17 workflow (a copy on a
 * free port whose PostgreSQL credential goes through a TCP proxy, test/helpers/tcpProxy.ts) next to the
 * MaaS pipeline (M00, M10–M16, WF99) with a stand-in model; real `ws` clients (test/helpers/pushClient.ts).
 * Checked: subscribe → POST /api/query → the answer is pushed; subscribe after completion → pushed at
 * subscription; a wrong token → refused, closed, logged without the token; the push's PostgreSQL connection
 * cut while a run completes → the answer still arrives after it is back; 200 clients × 1 run each → 200
 * answers, none crossed. For the 200 the runs are inserted and completed directly in SQL (with archived_at
 * set, so M10's Archivist has nothing to do) instead of through the model pipeline, to keep the test fast.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { mintPushToken } from '../../nodes/PipelinePush/transport/token';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { bearer, mint, testSecret } from '../helpers/jwt';
import { llmCredential, normalModel } from '../helpers/maasModel';
import { ModelStandIn } from '../helpers/modelStandIn';
import { jwtCredential, mapLimit, startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
import { freePort, m17Copy, pushCredential } from '../helpers/push';
import { PushClient } from '../helpers/pushClient';
import { TcpProxy } from '../helpers/tcpProxy';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');

let db: TestDatabase;
let n8n: RunningN8n;
let proxy: TcpProxy;
let m17File: string;
let pushUrl: string;
const model = new ModelStandIn();
const JWT_SECRET = testSecret();
const PUSH_SECRET = randomBytes(32).toString('base64url');
const clients: PushClient[] = [];
const MAAS = path.join(WORKFLOWS, 'maas');

beforeAll(async () => {
	db = await setupDatabase();
	await model.up();
	model.respond = normalModel;
	proxy = new TcpProxy(db.credential.host, db.credential.port);
	await proxy.up();
	const port = await freePort();
	m17File = m17Copy(port, 'pgPushProxy');
	pushUrl = `ws://127.0.0.1:${port}/api/ws`;
	const pipeline = fs
		.readdirSync(MAAS)
		.filter((f) => /^M(00|1[0-6])_.*\.json$/.test(f))
		.map((f) => path.join(MAAS, f));
	const proxied = new URL(db.url);
	proxied.host = `127.0.0.1:${proxy.port}`;
	n8n = await startN8n(
		db.url,
		[
			path.join(WORKFLOWS, 'WF99e_catch_all.json'),
			path.join(WORKFLOWS, 'WF99_global_err_handler.json'),
			...pipeline,
			m17File,
		],
		['api/query'],
		[
			llmCredential(model.url),
			jwtCredential(JWT_SECRET),
			pushCredential(PUSH_SECRET),
			harness.postgresCredential(proxied.toString(), { id: 'pgPushProxy', name: 'Contracts PostgreSQL pgPushProxy' }),
		],
	);
	// the trigger is activated with the workflow; wait until its port answers
	const end = Date.now() + 60_000;
	for (;;) {
		try {
			(await PushClient.connect(pushUrl)).close();
			break;
		} catch (error) {
			if (Date.now() > end) throw new Error(`push port not open: ${error}\n${n8n.logs()}`);
			await new Promise((r) => setTimeout(r, 500));
		}
	}
}, 30 * 60_000);

afterAll(async () => {
	for (const c of clients) c.close();
	await n8n?.stop();
	await proxy?.down();
	await model.down();
	await db?.drop();
	if (m17File) fs.rmSync(path.dirname(m17File), { recursive: true, force: true });
});

async function client(query = ''): Promise<PushClient> {
	const c = await PushClient.connect(`${pushUrl}${query}`);
	clients.push(c);
	return c;
}

async function authed(user: string): Promise<PushClient> {
	const c = await client();
	c.auth(user, mintPushToken(user, PUSH_SECRET));
	await c.next((m) => m.type === 'authenticated', 10_000, 'authenticated');
	return c;
}

/** POST /api/query as `user`; the request_id. */
async function ask(user: string, query: string): Promise<string> {
	const res = await fetch(`${n8n.url}/webhook/api/query`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...bearer(mint(user, { secret: JWT_SECRET })) },
		body: JSON.stringify({ query }),
	});
	const json = (await res.json()) as { request_id?: string };
	assert.equal(res.status, 201, JSON.stringify(json));
	return json.request_id!;
}

async function row(id: string) {
	return (await db.pool.query('SELECT status, final_answer FROM maas.pipeline_runs WHERE id = $1', [id])).rows[0] as {
		status: string;
		final_answer: string | null;
	};
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
	const end = Date.now() + ms;
	for (;;) {
		const v = await probe();
		if (v !== undefined) return v;
		if (Date.now() > end) assert.fail(`timed out waiting for ${what}\n${n8n.logs().slice(-3000)}`);
		await new Promise((r) => setTimeout(r, 300));
	}
}

test('subscribe → POST /api/query → the answer is pushed, exactly as the seed shows', async () => {
	const c = await authed('push-user-1');
	const id = await ask('push-user-1', 'What does push mean?');
	c.subscribe(id);
	await c.next((m) => m.type === 'subscribed', 10_000, 'subscribed');
	assert.notEqual((await row(id)).status, 'COMPLETED', 'subscribed while the run was still in progress');
	const pushed = await c.answerFor(id, 90_000);
	const done = await row(id);
	assert.equal(done.status, 'COMPLETED');
	assert.deepEqual(pushed, { request_id: id, status: 'completed', answer: done.final_answer });
	assert.match(String(pushed.answer), /^Answer to: /);
}, 120_000);

test('subscribe after completion → the answer is pushed at subscription; the query-string form is off by default', async () => {
	const id = await ask('push-user-2', 'Answer me later');
	const done = await until('completion', async () => {
		const r = await row(id);
		return r.status === 'COMPLETED' ? r : undefined;
	});
	const byUrl = await client(
		`?user_id=push-user-2&token=${mintPushToken('push-user-2', PUSH_SECRET)}&request_id=${id}`,
	);
	assert.match((await byUrl.next((m) => m.type === 'error')).message!, /Allow Token in URL/);
	const c = await authed('push-user-2');
	c.subscribe(id);
	assert.deepEqual(await c.answerFor(id), { request_id: id, status: 'completed', answer: done.final_answer });
}, 120_000);

test("a wrong token → UNAUTHORIZED and closed (4401); logged by n8n without the token; another user's run refused", async () => {
	const wrong = mintPushToken('push-user-3', randomBytes(32).toString('base64url'));
	const c = await client();
	c.auth('push-user-3', wrong);
	const refusal = await c.next((m) => m.type === 'error');
	assert.deepEqual([refusal.code, refusal.message], ['UNAUTHORIZED', 'token: not valid for this user_id']);
	assert.equal((await c.waitClosed()).code, 4401);
	const other = await authed('push-user-4');
	const notHers = (
		await db.pool.query("SELECT id::text AS id FROM maas.pipeline_runs WHERE user_id = 'push-user-1' LIMIT 1")
	).rows[0].id as string;
	other.subscribe(notHers);
	assert.equal((await other.next((m) => m.type === 'error')).code, 'SUBSCRIPTION_REFUSED');
	await until(
		"the refusals in n8n's log",
		async () =>
			/Pipeline Push: refused .*UNAUTHORIZED/.test(n8n.transcript()) &&
			/Pipeline Push: refused .*SUBSCRIPTION_REFUSED/.test(n8n.transcript())
				? true
				: undefined,
		20_000,
	);
	assert.ok(!n8n.transcript().includes(wrong), 'the token is not logged');
	assert.ok(!n8n.transcript().includes(PUSH_SECRET), 'the secret is not logged');
});

test("the push's PostgreSQL connection is cut while the run completes → the answer still arrives after it is back", async () => {
	const c = await authed('push-user-5');
	const id = await ask('push-user-5', 'Will this survive an outage?');
	c.subscribe(id);
	await c.next((m) => m.type === 'subscribed', 10_000, 'subscribed');
	const backend = async () =>
		(
			await db.pool.query(
				"SELECT array_agg(pid) AS pids FROM pg_stat_activity WHERE application_name = 'n8n-nodes-contracts pipeline push' AND datname = current_database()",
			)
		).rows[0].pids as number[] | null;
	const before = await backend();
	assert.equal(before?.length, 1, 'the push listens on its own connection');
	await proxy.down();
	try {
		await until('completion during the outage', async () =>
			(await row(id)).status === 'COMPLETED' ? true : undefined,
		);
		// long enough for reconnect attempts to fail (backoff from 0.5 s)
		await new Promise((r) => setTimeout(r, 3000));
		assert.equal(c.messages.filter((m) => m.request_id === id).length, 0, 'nothing pushed while cut off');
	} finally {
		await proxy.up();
	}
	const done = await row(id);
	assert.deepEqual(await c.answerFor(id, 90_000), { request_id: id, status: 'completed', answer: done.final_answer });
	const after = await backend();
	assert.ok(after?.length === 1 && after[0] !== before![0], `a new LISTEN connection (${before} → ${after})`);
}, 180_000);

test('200 clients × 1 run each → 200 answers, each to its own client only', async () => {
	const users = Array.from({ length: 200 }, (_, i) => `push-crowd-${i}`);
	const { rows } = await db.pool.query(
		`INSERT INTO maas.pipeline_runs (user_id, user_query, status)
		 SELECT u, 'crowd question', 'RESPONDING' FROM unnest($1::text[]) AS u RETURNING id::text AS id, user_id`,
		[users],
	);
	const runOf = new Map(rows.map((r: { id: string; user_id: string }) => [r.user_id, r.id]));
	const crowd = await mapLimit(users, 20, async (user) => {
		const c = await authed(user);
		c.subscribe(runOf.get(user)!);
		await c.next((m) => m.type === 'subscribed', 30_000, 'subscribed');
		return c;
	});
	// completed directly in SQL (archived_at set: M10's Archivist skips them), one statement per run
	await mapLimit(users, 10, async (user) =>
		db.pool.query(
			"UPDATE maas.pipeline_runs SET status = 'COMPLETED', final_answer = $2, archived_at = now(), updated_at = now() WHERE id = $1 AND status = 'RESPONDING'",
			[runOf.get(user), `answer for ${user}`],
		),
	);
	await Promise.all(
		crowd.map(async (c, i) => {
			const id = runOf.get(users[i])!;
			assert.deepEqual(await c.answerFor(id, 120_000), {
				request_id: id,
				status: 'completed',
				answer: `answer for ${users[i]}`,
			});
		}),
	);
	await new Promise((r) => setTimeout(r, 500));
	crowd.forEach((c, i) => {
		const answers = c.messages.filter((m) => m.type === undefined);
		assert.equal(answers.length, 1, `${users[i]} got ${JSON.stringify(answers)}`);
	});
}, 300_000);
