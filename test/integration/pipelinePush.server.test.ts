/**
 * Pipeline Push's server and listener (nodes/PipelinePush/transport/service.ts) against a real PostgreSQL
 * and real `ws` clients, without n8n (the e2e test, test/e2e/pipeline_push.test.ts, runs the node in n8n).
 * Runs are completed directly in SQL (the listener hears the real notify_pipeline_change trigger).
 * The listener and the store reach PostgreSQL through a TCP proxy (test/helpers/tcpProxy.ts) that the
 * outage test cuts.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Pool } from 'pg';
import { CLOSE_UNAUTHORIZED, MAX_LOGGED_REFUSALS, PushServer } from '../../nodes/PipelinePush/transport/server';
import { pgRunStore } from '../../nodes/PipelinePush/transport/runs';
import { startPushService, type PushService } from '../../nodes/PipelinePush/transport/service';
import { mintPushToken } from '../../nodes/PipelinePush/transport/token';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { PushClient } from '../helpers/pushClient';
import { TcpProxy } from '../helpers/tcpProxy';

const SECRET = randomBytes(32).toString('base64url');
let db: TestDatabase;
let proxy: TcpProxy;
let proxied: Pool;
let service: PushService;
let url: string;
const warnings: string[] = [];
const clients: PushClient[] = [];
const logger = { info: () => undefined, warn: (m: string) => void warnings.push(m) };

function options(port = 0) {
	const c = db.credential;
	return {
		port,
		host: '127.0.0.1',
		secret: SECRET,
		maxMessageBytes: 16 * 1024,
		maxIdsPerMessage: 5,
		maxSubscriptions: 5,
		maxConnections: 1000,
		authTimeoutMs: 5_000,
		heartbeatMs: 30_000,
		recheckMs: 60 * 60_000,
		maxBackoffMs: 500,
		listen: { host: '127.0.0.1', port: proxy.port, database: c.database, user: c.user, password: c.password },
		store: pgRunStore(() => proxied),
		logger,
	};
}

beforeAll(async () => {
	db = await setupDatabase();
	proxy = new TcpProxy(db.credential.host, db.credential.port);
	await proxy.up();
	const c = db.credential;
	proxied = new Pool({ host: '127.0.0.1', port: proxy.port, database: c.database, user: c.user, max: 4 });
	proxied.on('error', () => undefined);
	service = await startPushService(options());
	url = `ws://127.0.0.1:${service.server.port}/api/ws`;
});

afterAll(async () => {
	for (const c of clients) c.close();
	await service?.stop();
	await proxied?.end();
	await proxy?.down();
	await db?.drop();
});

async function client(query = ''): Promise<PushClient> {
	const c = await PushClient.connect(`${url}${query}`);
	clients.push(c);
	return c;
}

async function authed(user: string): Promise<PushClient> {
	const c = await client();
	c.auth(user, mintPushToken(user, SECRET));
	await c.next((m) => m.type === 'authenticated', 5000, 'authenticated');
	return c;
}

async function newRun(user: string): Promise<string> {
	const { rows } = await db.pool.query(
		"INSERT INTO maas.pipeline_runs (user_id, user_query, status) VALUES ($1, 'q', 'RESPONDING') RETURNING id::text AS id",
		[user],
	);
	return rows[0].id;
}

async function complete(id: string, answer: string): Promise<void> {
	const r = await db.pool.query(
		"UPDATE maas.pipeline_runs SET status = 'COMPLETED', final_answer = $2, updated_at = now() WHERE id = $1 AND status = 'RESPONDING'",
		[id, answer],
	);
	assert.equal(r.rowCount, 1);
}

test('subscribe, then the run completes → exactly { request_id, status: "completed", answer }, once', async () => {
	const id = await newRun('alice');
	const c = await authed('alice');
	c.subscribe(id);
	assert.deepEqual((await c.next((m) => m.type === 'subscribed')).request_ids, [id]);
	await complete(id, 'forty-two');
	assert.deepEqual(await c.answerFor(id), { request_id: id, status: 'completed', answer: 'forty-two' });
	await service.server.recheckAll();
	await new Promise((r) => setTimeout(r, 200));
	assert.equal(c.messages.filter((m) => m.request_id === id).length, 1, 'pushed once');
	assert.equal(service.server.pendingCount, 0);
});

test('a run finished before the subscription is pushed at subscription (catch-up); FAILED gives the error', async () => {
	const done = await newRun('bob');
	await complete(done, 'early');
	const failed = await newRun('bob');
	await db.pool.query(
		'UPDATE maas.pipeline_runs SET status = \'FAILED\', error = \'{"message":"model failed after 4 attempts","kind":"upstream"}\' WHERE id = $1',
		[failed],
	);
	const c = await client(`?user_id=bob&token=${mintPushToken('bob', SECRET)}&request_id=${done},${failed}`);
	assert.deepEqual(await c.answerFor(done), { request_id: done, status: 'completed', answer: 'early' });
	assert.deepEqual(await c.answerFor(failed), {
		request_id: failed,
		status: 'failed',
		error: 'model failed after 4 attempts',
	});
});

test("wrong token → UNAUTHORIZED and closed 4401; another user's run and an unknown id are refused alike; logs hold no token", async () => {
	const bad = mintPushToken('carol', randomBytes(32).toString('base64url'));
	const c = await client();
	c.auth('carol', bad);
	const refusal = await c.next((m) => m.type === 'error');
	assert.equal(refusal.code, 'UNAUTHORIZED');
	assert.equal((await c.waitClosed()).code, CLOSE_UNAUTHORIZED);
	const notMine = await newRun('dave');
	const unknown = randomUUID();
	const carol = await authed('carol');
	carol.subscribe(notMine);
	carol.subscribe(unknown);
	const refusals = [
		await carol.next((m) => m.code === 'SUBSCRIPTION_REFUSED' && m.request_ids?.[0] === notMine),
		await carol.next((m) => m.code === 'SUBSCRIPTION_REFUSED' && m.request_ids?.[0] === unknown),
	];
	assert.deepEqual(
		refusals.map((r) => ({ ...r, request_ids: undefined })),
		refusals.map((r) => ({ ...refusals[0], request_ids: undefined })),
		'same refusal for a foreign and an unknown run',
	);
	await complete(notMine, "dave's secret answer");
	await new Promise((r) => setTimeout(r, 300));
	assert.ok(!JSON.stringify(carol.messages).includes("dave's secret"), 'nothing of dave reaches carol');
	assert.ok(
		warnings.some((w) => /claiming user_id "carol"\): UNAUTHORIZED/.test(w)),
		warnings.join('\n'),
	);
	assert.ok(warnings.some((w) => /user_id "carol"\): SUBSCRIPTION_REFUSED/.test(w)));
	assert.ok(!warnings.join('\n').includes(bad) && !warnings.join('\n').includes(mintPushToken('carol', SECRET)));
	assert.ok(!warnings.join('\n').includes(SECRET));
});

test('hostile frames get refusals and the connection stays usable; over 1 MiB the frame closes it (1009)', async () => {
	const c = await authed('erin');
	const frames: (string | Buffer)[] = [
		'not json',
		'{"type":"subscribe","request_ids":[12345]}',
		'{"type":"subscribe","request_ids":["1; DROP TABLE x"]}',
		JSON.stringify({ type: 'auth', user_id: 'a\u0000b', token: 'x' }),
		'{"type":"auth","user_id":"\\ud800","token":"x"}',
		'['.repeat(1000) + ']'.repeat(1000),
		'x'.repeat(20_000),
		Buffer.from([0, 1, 2]),
		JSON.stringify({ type: 'subscribe', request_ids: Array.from({ length: 6 }, () => randomUUID()) }),
	];
	for (const f of frames) c.ws.send(f);
	await c.next(() => c.messages.filter((m) => m.type === 'error').length >= frames.length, 5000, 'all refusals');
	const codes = c.messages.filter((m) => m.type === 'error').map((m) => m.code);
	assert.deepEqual(
		codes.sort(),
		[...Array(7).fill('INVALID_MESSAGE'), 'MESSAGE_TOO_LARGE', 'TOO_MANY_SUBSCRIPTIONS'].sort(),
	);
	const id = await newRun('erin');
	c.subscribe(id);
	await complete(id, 'still here');
	assert.equal((await c.answerFor(id)).answer, 'still here');
	c.ws.send('x'.repeat(1024 * 1024 + 1));
	assert.equal((await c.waitClosed()).code, 1009);
	const again = await authed('erin');
	assert.ok(again, 'the server keeps serving');
});

test('a flood of bad frames: every one refused, at most MAX_LOGGED_REFUSALS logged per connection', async () => {
	const c = await authed('flood-user');
	const before = warnings.length;
	for (let i = 0; i < 50; i++) c.send('garbage');
	await c.next(() => c.messages.filter((m) => m.code === 'INVALID_MESSAGE').length === 50, 5000, '50 refusals');
	const logged = warnings.slice(before).filter((w) => w.includes('"flood-user"'));
	assert.equal(logged.length, MAX_LOGGED_REFUSALS);
	assert.match(logged.at(-1)!, /further refusals on this connection are not logged/);
});

test('at most maxSubscriptions pending per connection', async () => {
	const c = await authed('frank');
	const ids = await Promise.all(Array.from({ length: 6 }, () => newRun('frank')));
	c.subscribe(...ids.slice(0, 5));
	await c.next((m) => m.type === 'subscribed');
	c.subscribe(ids[5]);
	assert.equal((await c.next((m) => m.type === 'error')).code, 'TOO_MANY_SUBSCRIPTIONS');
});

test('not authenticated → NOT_AUTHENTICATED; no auth within the timeout → closed 4408', async () => {
	const c = await client();
	c.subscribe(randomUUID());
	assert.equal((await c.next((m) => m.type === 'error')).code, 'NOT_AUTHENTICATED');
	assert.equal((await c.waitClosed(8000)).code, 4408);
});

test('PostgreSQL unreachable during a wait: the run completes meanwhile, the answer arrives after reconnect', async () => {
	const id = await newRun('grace');
	const c = await authed('grace');
	c.subscribe(id);
	await c.next((m) => m.type === 'subscribed');
	const before = service.listener.connections;
	await proxy.down();
	await complete(id, 'after the outage'); // the notification is lost: the listener is disconnected
	await new Promise((r) => setTimeout(r, 1000));
	assert.equal(c.messages.filter((m) => m.request_id === id).length, 0);
	await proxy.up();
	assert.deepEqual(await c.answerFor(id, 20_000), { request_id: id, status: 'completed', answer: 'after the outage' });
	assert.ok(service.listener.connections > before, 'the listener reconnected');
});

test('a taken port is refused with a clear message; stop() frees the port', async () => {
	const taken = service.server.port;
	await assert.rejects(
		new PushServer({ ...options(taken) }).start(),
		new RegExp(`port ${taken} on 127.0.0.1 is in use`),
	);
	const spare = await new Promise<number>((resolve) => {
		const s = net.createServer().listen(0, '127.0.0.1', () => {
			const p = (s.address() as net.AddressInfo).port;
			s.close(() => resolve(p));
		});
	});
	const first = await startPushService(options(spare));
	await first.stop();
	const second = await startPushService(options(spare));
	await second.stop();
});
