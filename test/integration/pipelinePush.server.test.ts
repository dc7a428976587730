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
import type { ITriggerFunctions } from 'n8n-workflow';
import {
	CLOSE_MESSAGE_TOO_BIG,
	CLOSE_POLICY_VIOLATION,
	CLOSE_UNAUTHORIZED,
	MAX_BUFFERED_BYTES,
	MAX_LOGGED_REFUSALS,
	MAX_RATE_LIMITED_FRAMES,
	MESSAGE_BURST,
	PushServer,
	type PushServerOptions,
} from '../../nodes/PipelinePush/transport/server';
import { PipelineListener, type PipelineEvent } from '../../nodes/shared/postgres/listener';
import type { PushedAnswer } from '../../nodes/PipelinePush/transport/runs';
import { pgRunStore } from '../../nodes/PipelinePush/transport/runs';
import { startPushService, type PushService } from '../../nodes/PipelinePush/transport/service';
import {
	DEFAULT_MAX_TOKEN_LIFETIME_SECONDS,
	MAX_TOKEN_LIFETIME_LIMIT_SECONDS,
	mintPushToken,
} from '../../nodes/PipelinePush/transport/token';
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
		messageBurst: 10_000,
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
	const c = await authed('bob');
	c.subscribe(done, failed);
	assert.deepEqual(await c.answerFor(done), { request_id: done, status: 'completed', answer: 'early' });
	assert.deepEqual(await c.answerFor(failed), {
		request_id: failed,
		status: 'failed',
		error: 'a service this request depends on failed (status 500); the correlation_id identifies it in the error log',
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

test('hostile frames get refusals and the connection stays usable; a frame over Max Message Size closes it (1009), unanswered', async () => {
	const c = await authed('erin');
	const frames: (string | Buffer)[] = [
		'not json',
		'{"type":"subscribe","request_ids":[12345]}',
		'{"type":"subscribe","request_ids":["1; DROP TABLE x"]}',
		JSON.stringify({ type: 'auth', user_id: 'a\u0000b', token: 'x' }),
		'{"type":"auth","user_id":"\\ud800","token":"x"}',
		'['.repeat(1000) + ']'.repeat(1000),
		'x'.repeat(16 * 1024), // exactly Max Message Size: read, and refused as not JSON
		Buffer.from([0, 1, 2]),
		JSON.stringify({ type: 'subscribe', request_ids: Array.from({ length: 6 }, () => randomUUID()) }),
	];
	for (const f of frames) c.ws.send(f);
	await c.next(() => c.messages.filter((m) => m.type === 'error').length >= frames.length, 5000, 'all refusals');
	const codes = c.messages.filter((m) => m.type === 'error').map((m) => m.code);
	assert.deepEqual(codes.sort(), [...Array(8).fill('INVALID_MESSAGE'), 'TOO_MANY_SUBSCRIPTIONS'].sort());
	const id = await newRun('erin');
	c.subscribe(id);
	await complete(id, 'still here');
	assert.equal((await c.answerFor(id)).answer, 'still here');
	const answered = c.messages.length;
	c.ws.send('x'.repeat(16 * 1024 + 1));
	assert.equal((await c.waitClosed()).code, CLOSE_MESSAGE_TOO_BIG);
	assert.equal(c.messages.length, answered, 'an oversize frame is not answered');
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
	assert.match(logged.at(-1)!, /further malformed-message refusals on this connection are counted, not logged/);
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

// ---- security review findings (H1–H3, M4, M5, F7, L9, L12): each test failed before its fix ----

/** A PushServer of its own on a free port, with `extra` options; stopped by the caller. */
async function ownServer(extra: Partial<PushServerOptions> = {}): Promise<{ server: PushServer; url: string }> {
	const server = new PushServer({ ...options(0), ...extra });
	await server.start();
	return { server, url: `ws://127.0.0.1:${server.port}/api/ws` };
}

async function ownAuthed(base: string, user: string): Promise<PushClient> {
	const c = await PushClient.connect(base);
	clients.push(c);
	c.auth(user, mintPushToken(user, SECRET));
	await c.next((m) => m.type === 'authenticated', 5000, 'authenticated');
	return c;
}

/** The HTTP status of a refused upgrade (null when the upgrade succeeded). */
function upgradeStatus(target: string): Promise<number | null> {
	return PushClient.connect(target).then(
		(c) => {
			clients.push(c);
			return null;
		},
		(error: Error) => Number(/Unexpected server response: (\d+)/.exec(error.message)?.[1] ?? -1),
	);
}

function halfSentRequest(port: number): Promise<net.Socket> {
	return new Promise((resolve) => {
		const socket = net.connect(port, '127.0.0.1', () => {
			socket.write('GET /api/ws HTTP/1.1\r\nHost: x\r\n'); // headers never finished
			resolve(socket);
		});
		socket.on('error', () => undefined);
		socket.resume(); // read what the server answers (a 408), so its close is seen
	});
}

test('H2: stop() resolves within a few seconds despite a half-sent HTTP request and an open client; the port is free', async () => {
	const { server, url: own } = await ownServer();
	const port = server.port;
	const half = await halfSentRequest(port);
	const open = await ownAuthed(own, 'stop-user');
	const t0 = Date.now();
	await server.stop();
	const took = Date.now() - t0;
	console.log(`stop() took ${took} ms`);
	assert.ok(took < 4000, `stop() took ${took} ms`);
	assert.ok([1001, 1006].includes((await open.waitClosed(2000)).code));
	await new Promise((r) => setTimeout(r, 100));
	assert.ok(half.destroyed || half.readableEnded, 'the half-sent request socket is closed');
	half.destroy();
	await new Promise<void>((resolve, reject) => {
		const again = net.createServer().once('error', reject);
		again.listen(port, '127.0.0.1', () => again.close(() => resolve()));
	});
});

test('H3: unauthenticated sessions and all sessions are capped before the upgrade (HTTP 503); slow headers are cut', async () => {
	const { server, url: own } = await ownServer({ maxConnections: 3, maxUnauthenticated: 2, handshakeTimeoutMs: 1000 });
	try {
		const a = await PushClient.connect(own);
		const b = await PushClient.connect(own);
		clients.push(a, b);
		assert.equal(await upgradeStatus(own), 503, 'a third unauthenticated connection is refused');
		a.auth('slots', mintPushToken('slots', SECRET));
		await a.next((m) => m.type === 'authenticated');
		assert.equal(await upgradeStatus(own), null, 'a slot freed by authentication');
		assert.deepEqual(server.connectionCount, { open: 3, unauthenticated: 2 });
		assert.equal(await upgradeStatus(own), 503, 'Max Connections reached');
		const half = await halfSentRequest(server.port);
		const t0 = Date.now();
		await new Promise((r) => half.once('close', r));
		console.log(`half-sent request closed after ${Date.now() - t0} ms`);
		assert.ok(Date.now() - t0 < 4000);
	} finally {
		await server.stop();
	}
});

test('H1: a client that does not read is terminated once more than MAX_BUFFERED_BYTES are unsent', async () => {
	const { server, url: own } = await ownServer();
	try {
		const id = await newRun('slow-reader');
		await complete(id, 'A'.repeat(400_000));
		const c = await ownAuthed(own, 'slow-reader');
		const socket = (c.ws as unknown as { _socket: net.Socket })._socket;
		socket.pause(); // the client stops reading; every resubscribe replays 400 KB
		const before = warnings.length;
		for (let i = 0; i < 18 && server.connectionCount.open > 0; i++) {
			c.subscribe(id);
			await new Promise((r) => setTimeout(r, 100));
		}
		const deadline = Date.now() + 5000;
		while (server.connectionCount.open > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
		assert.equal(server.connectionCount.open, 0, 'the connection was terminated');
		assert.ok(
			warnings.slice(before).some((w) => w.includes(`more than ${MAX_BUFFERED_BYTES} bytes unsent`)),
			warnings.slice(before).join('\n'),
		);
		socket.resume();
		assert.equal((await c.waitClosed(5000)).code, 1006);
	} finally {
		await server.stop();
	}
});

test('H1: more than MESSAGE_BURST messages at once: the rest dropped with one RATE_LIMITED answer; the connection stays open', async () => {
	const { server, url: own } = await ownServer({ messageBurst: undefined, messagesPerSecond: undefined });
	try {
		const c = await ownAuthed(own, 'rate-user');
		const t0 = Date.now();
		for (let i = 0; i < MESSAGE_BURST + 10; i++) c.send('x');
		await c.next((m) => m.code === 'RATE_LIMITED', 5000, 'RATE_LIMITED');
		await new Promise((r) => setTimeout(r, 300));
		const limited = c.messages.filter((m) => m.code === 'RATE_LIMITED').length;
		const invalid = c.messages.filter((m) => m.code === 'INVALID_MESSAGE').length;
		// the burst (the `auth` took one token) is answered; the 11 frames over it get one RATE_LIMITED (one
		// per 200 ms refill interval at 5/s: a second only if the frames took that long to arrive)
		assert.ok(invalid >= MESSAGE_BURST - 1 && invalid <= MESSAGE_BURST, `INVALID_MESSAGE ${invalid}`);
		assert.ok(limited >= 1 && limited <= 1 + Math.floor((Date.now() - t0) / 200), `RATE_LIMITED ${limited}`);
		assert.equal(c.closed, undefined, '11 over the limit is far from MAX_RATE_LIMITED_FRAMES in a row');
		const id = await newRun('rate-user');
		c.subscribe(id);
		assert.deepEqual((await c.next((m) => m.type === 'subscribed')).request_ids, [id]);
	} finally {
		await server.stop();
	}
});

test('M2: a flood of 100,000 empty frames on an unauthenticated connection gets a bounded number of answers and is closed 1008', async () => {
	const { server, url: own } = await ownServer({ messageBurst: undefined, messagesPerSecond: undefined });
	try {
		const c = await PushClient.connect(own);
		clients.push(c);
		const before = warnings.length;
		const t0 = Date.now();
		const cpu0 = process.cpuUsage();
		for (let i = 0; i < 100_000; i++) c.ws.send('');
		const closed = await c.waitClosed(10_000);
		const ms = Date.now() - t0;
		const cpu = process.cpuUsage(cpu0);
		const codes = c.messages.map((m) => m.code);
		const count = (code: string) => codes.filter((x) => x === code).length;
		console.log(
			`flood: 100000 empty frames → ${c.messages.length} answers (${count('INVALID_MESSAGE')} INVALID_MESSAGE, ${count('RATE_LIMITED')} RATE_LIMITED), closed ${closed.code} "${closed.reason}" after ${ms} ms; test process CPU ${Math.round((cpu.user + cpu.system) / 1000)} ms (client and server)`,
		);
		assert.deepEqual(closed, { code: CLOSE_POLICY_VIOLATION, reason: 'rate limit' });
		// the burst is answered (not JSON), then at most one RATE_LIMITED per 200 ms, then the close
		assert.ok(
			count('INVALID_MESSAGE') >= MESSAGE_BURST && count('INVALID_MESSAGE') <= MESSAGE_BURST + Math.floor(ms / 200),
		);
		assert.ok(count('RATE_LIMITED') >= 1 && count('RATE_LIMITED') <= 1 + Math.floor(ms / 200), codes.join());
		assert.equal(c.messages.length, count('INVALID_MESSAGE') + count('RATE_LIMITED'));
		assert.ok(
			warnings
				.slice(before)
				.some((w) =>
					w.includes(
						`closed the connection from 127.0.0.1: 1008: ${MAX_RATE_LIMITED_FRAMES} messages in a row over the rate limit`,
					),
				),
			warnings.slice(before).join('\n'),
		);
		assert.ok(warnings.length - before <= MAX_LOGGED_REFUSALS + 2, `${warnings.length - before} log lines`);
		// the server goes on serving
		assert.ok(await ownAuthed(own, 'after-flood'));
		assert.equal(server.connectionCount.open, 1);
	} finally {
		await server.stop();
	}
});

test('oversize frames are never answered: a frame header over Max Message Size closes the connection (1009) before its payload; small frames at 10/s stay within the limit', async () => {
	const { server, url: own } = await ownServer({ messageBurst: undefined, messagesPerSecond: undefined });
	try {
		const big = await ownAuthed(own, 'big-user');
		const small = await ownAuthed(own, 'small-user');
		const before = warnings.length;
		// a masked text frame header announcing 1 MiB, and no payload: ws must not wait for (buffer) it
		const header = Buffer.alloc(14);
		header[0] = 0x81; // FIN, text
		header[1] = 0x80 | 127; // masked, 64-bit length
		header.writeBigUInt64BE(BigInt(1024 * 1024), 2);
		randomBytes(4).copy(header, 10);
		const answered = big.messages.length;
		const t0 = Date.now();
		(big.ws as unknown as { _socket: net.Socket })._socket.write(header);
		const closed = await big.waitClosed(5000);
		console.log(`1 MiB frame header without payload: closed ${closed.code} after ${Date.now() - t0} ms`);
		assert.equal(closed.code, CLOSE_MESSAGE_TOO_BIG);
		assert.equal(big.messages.length, answered, 'no answer to an oversize frame');
		assert.ok(
			warnings.slice(before).some((w) => w.includes('(user_id "big-user"): 1009: a message over 16384 bytes')),
			warnings.slice(before).join('\n'),
		);
		// a whole 1 MB frame from the ws client: the same
		const whole = await ownAuthed(own, 'big-user');
		whole.send('x'.repeat(1_000_000));
		assert.equal((await whole.waitClosed(5000)).code, CLOSE_MESSAGE_TOO_BIG);
		assert.equal(whole.messages.filter((m) => m.type === 'error').length, 0);
		for (let i = 0; i < 30; i++) {
			small.send('x'.repeat(100));
			await new Promise((r) => setTimeout(r, 100));
		}
		await small.next(() => small.messages.filter((m) => m.type === 'error').length >= 30, 10_000, '30 answers');
		const errors = small.messages.filter((m) => m.type === 'error');
		// small frames at this pace stay within the limit (burst 20, 5/s: 30 in 3 s)
		assert.equal(errors.filter((m) => m.code === 'RATE_LIMITED').length, 0);
		assert.equal(small.messages.filter((m) => m.code === 'INVALID_MESSAGE').length, 30);
		const id = await newRun('small-user');
		small.subscribe(id);
		assert.deepEqual((await small.next((m) => m.type === 'subscribed')).request_ids, [id]);
	} finally {
		await server.stop();
	}
});

test('token expiry: an expired or too long-lived token is refused 4401; a connection closes when its token expires unless re-authenticated', async () => {
	const { server, url: own } = await ownServer({ clockSkewSeconds: 0, maxTokenLifetimeSeconds: 3600 });
	try {
		const expired = await PushClient.connect(own);
		clients.push(expired);
		expired.auth('exp-user', mintPushToken('exp-user', SECRET, { expiresInSeconds: 60, now: Date.now() - 120_000 }));
		assert.match((await expired.next((m) => m.type === 'error')).message!, /^token: expired/);
		assert.equal((await expired.waitClosed()).code, CLOSE_UNAUTHORIZED);
		const long = await PushClient.connect(own);
		clients.push(long);
		long.auth('exp-user', mintPushToken('exp-user', SECRET, { expiresInSeconds: 7200 }));
		assert.match((await long.next((m) => m.type === 'error')).message!, /Max Token Lifetime/);
		assert.equal((await long.waitClosed()).code, CLOSE_UNAUTHORIZED);
		// a token valid for 1 s: the connection is closed when it expires
		const short = await PushClient.connect(own);
		const renewed = await PushClient.connect(own);
		clients.push(short, renewed);
		const t0 = Date.now();
		for (const c of [short, renewed]) {
			c.auth('exp-user', mintPushToken('exp-user', SECRET, { expiresInSeconds: 1 }));
			const ok = await c.next((m) => m.type === 'authenticated');
			assert.equal(typeof ok.expires_at, 'number');
		}
		renewed.auth('exp-user', mintPushToken('exp-user', SECRET, { expiresInSeconds: 60 }));
		await renewed.next((m) => m.type === 'authenticated' && (m.expires_at as number) > Date.now() / 1000 + 30);
		const closed = await short.waitClosed(5000);
		console.log(`closed ${Date.now() - t0} ms after a 1 s token: ${closed.code} ${closed.reason}`);
		assert.deepEqual(closed, { code: CLOSE_UNAUTHORIZED, reason: 'token expired' });
		await new Promise((r) => setTimeout(r, 1000));
		assert.equal(renewed.closed, undefined, 'a fresh token keeps the connection');
		const id = await newRun('exp-user');
		renewed.subscribe(id);
		assert.deepEqual((await renewed.next((m) => m.type === 'subscribed')).request_ids, [id]);
	} finally {
		await server.stop();
	}
});

// the source node, by its .ts file: "PipelinePush.node" alone would resolve to the codex .json beside it
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { PipelinePush } =
	require('../../nodes/PipelinePush/PipelinePush.node.ts') as typeof import('../../nodes/PipelinePush/PipelinePush.node');

/** A trigger context for the Pipeline Push node on a free port, with `options`; info lines go to `infos`. */
function pushNodeContext(options: Record<string, unknown>, infos: string[]): ITriggerFunctions {
	return {
		getCredentials: async (name: string) => (name === 'postgresContractsApi' ? db.credential : { secret: SECRET }),
		getNodeParameter: (name: string, fallback: unknown) =>
			name === 'port' ? 0 : name === 'options' ? options : fallback,
		getMode: () => 'trigger',
		getNode: () => ({ name: 'Pipeline Push', type: 'n8n-nodes-contracts.pipelinePush' }),
		logger: { info: (m: string) => infos.push(m), warn: logger.warn, debug: () => undefined, error: logger.warn },
		emit: () => undefined,
		helpers: { returnJsonArray: (x: unknown) => x },
	} as unknown as ITriggerFunctions;
}

test('L1: the node with Max Token Lifetime NaN, non-numeric or empty enforces the default (1 day), never "every expiry"', async () => {
	for (const bad of [NaN, 'abc', '', null]) {
		const infos: string[] = [];
		const running = await new PipelinePush().trigger.call(pushNodeContext({ maxTokenLifetimeSeconds: bad }, infos));
		try {
			const port = /serving ws:\/\/127\.0\.0\.1:(\d+)\/api\/ws/.exec(infos.join('\n'))?.[1];
			assert.ok(port, infos.join('\n'));
			const c = await PushClient.connect(`ws://127.0.0.1:${port}/api/ws`);
			clients.push(c);
			c.auth('life-user', mintPushToken('life-user', SECRET, { expiresInSeconds: MAX_TOKEN_LIFETIME_LIMIT_SECONDS }));
			const refusal = await c.next((m) => m.type === 'error');
			assert.equal(refusal.code, 'UNAUTHORIZED', String(bad));
			assert.equal(
				refusal.message,
				`token: lives longer than this server's Max Token Lifetime (${DEFAULT_MAX_TOKEN_LIFETIME_SECONDS} s)`,
			);
			assert.equal((await c.waitClosed()).code, CLOSE_UNAUTHORIZED);
			const ok = await PushClient.connect(`ws://127.0.0.1:${port}/api/ws`);
			clients.push(ok);
			ok.auth('life-user', mintPushToken('life-user', SECRET, { expiresInSeconds: 3600 }));
			await ok.next((m) => m.type === 'authenticated');
		} finally {
			await running.closeFunction?.();
		}
	}
});

test('the query-string form is off by default (refused, naming the option); Allow Token in URL turns it on', async () => {
	const id = await newRun('query-user');
	await complete(id, 'by url');
	const query = `?user_id=query-user&token=${mintPushToken('query-user', SECRET)}&request_id=${id}`;
	const off = await client(query);
	const refusal = await off.next((m) => m.type === 'error');
	assert.equal(refusal.code, 'INVALID_MESSAGE');
	assert.match(refusal.message!, /Allow Token in URL/);
	await new Promise((r) => setTimeout(r, 300));
	assert.equal(off.messages.filter((m) => m.type === 'authenticated' || m.request_id === id).length, 0);
	const { server, url: own } = await ownServer({ allowQueryToken: true });
	try {
		const on = await PushClient.connect(`${own}${query}`);
		clients.push(on);
		assert.deepEqual(await on.answerFor(id), { request_id: id, status: 'completed', answer: 'by url' });
	} finally {
		await server.stop();
	}
});

test('M4 + L9: one ownership query per new id and connection; a foreign id subscribed twice at once is never acknowledged', async () => {
	let queries = 0;
	const real = pgRunStore(() => proxied);
	const { server, url: own } = await ownServer({
		store: { owned: (ids, user) => (queries++, real.owned(ids, user)), finished: real.finished },
	});
	try {
		const mine = await newRun('m4-user');
		const foreign = await newRun('someone-else');
		const c = await ownAuthed(own, 'm4-user');
		for (let i = 0; i < 5; i++) c.subscribe(mine);
		await c.next(() => c.messages.filter((m) => m.type === 'subscribed').length === 5, 5000, '5 acks');
		assert.equal(queries, 1, 'one owned() query for five subscribes of one id');
		c.subscribe(foreign);
		c.subscribe(foreign);
		await c.next(() => c.messages.filter((m) => m.code === 'SUBSCRIPTION_REFUSED').length === 2, 5000, '2 refusals');
		await new Promise((r) => setTimeout(r, 200));
		assert.ok(
			!c.messages.some((m) => m.type === 'subscribed' && m.request_ids?.includes(foreign)),
			JSON.stringify(c.messages),
		);
		assert.equal(server.pendingCount, 1);
	} finally {
		await server.stop();
	}
});

test('M5: resubscribing replays the answer, but onDelivered (Emit Deliveries) runs once per request id and connection', async () => {
	const delivered: PushedAnswer[] = [];
	const { server, url: own } = await ownServer({ onDelivered: (answer) => void delivered.push(answer) });
	try {
		const id = await newRun('m5-user');
		await complete(id, 'once');
		const c = await ownAuthed(own, 'm5-user');
		for (let i = 0; i < 3; i++) {
			c.subscribe(id);
			await c.next(() => c.messages.filter((m) => m.request_id === id).length === i + 1, 5000, `answer ${i + 1}`);
		}
		assert.equal(delivered.length, 1);
	} finally {
		await server.stop();
	}
});

test('F7: every UNAUTHORIZED / SUBSCRIPTION_REFUSED is logged with its ids, beyond the cap of malformed messages; a count line at close', async () => {
	const { server, url: own } = await ownServer();
	try {
		const c = await ownAuthed(own, 'probe-user');
		const before = warnings.length;
		for (let i = 0; i < MAX_LOGGED_REFUSALS + 5; i++) c.send('junk');
		const probes = Array.from({ length: 30 }, () => randomUUID());
		for (const id of probes) c.subscribe(id);
		c.auth('another-user', 'x');
		await c.next(() => c.messages.filter((m) => m.code === 'SUBSCRIPTION_REFUSED').length === 30, 10_000, 'refusals');
		await c.next((m) => m.code === 'UNAUTHORIZED', 5000, 'UNAUTHORIZED');
		const logged = warnings.slice(before);
		for (const id of probes)
			assert.ok(
				logged.some((w) => w.includes('SUBSCRIPTION_REFUSED') && w.includes(id)),
				`probe ${id} logged`,
			);
		assert.ok(logged.some((w) => w.includes('UNAUTHORIZED')));
		c.close();
		const deadline = Date.now() + 3000;
		while (!warnings.slice(before).some((w) => /closed; 5 more refusals were answered but not logged/.test(w))) {
			assert.ok(Date.now() < deadline, warnings.slice(before).join('\n'));
			await new Promise((r) => setTimeout(r, 20));
		}
	} finally {
		await server.stop();
	}
});

test('F6: unknown field names chosen by the client never reach the log or the refusal', async () => {
	const { server, url: own } = await ownServer();
	try {
		const c = await PushClient.connect(own);
		clients.push(c);
		const before = warnings.length;
		const key = 'x\n2026-11-24T06:00:00Z [error] FORGED LINE';
		c.send(JSON.stringify({ type: 'auth', user_id: 'mallory', token: 'abc', [key]: 1 }));
		const refusal = await c.next((m) => m.type === 'error');
		assert.equal(refusal.code, 'INVALID_MESSAGE');
		assert.ok(!String(refusal.message).includes('FORGED'));
		const logged = warnings.slice(before);
		assert.ok(logged.length > 0);
		assert.ok(
			logged.every((w) => !w.includes('FORGED') && !w.includes('\n')),
			logged.join('\n---\n'),
		);
	} finally {
		await server.stop();
	}
});

test('L12: the listener catch-up pages through every matching run (more than one page); a null NOTIFY payload is ignored', async () => {
	const ids: string[] = [];
	for (let i = 0; i < 7; i++) ids.push(await newRun(`l12-${i}`));
	await db.pool.query("UPDATE maas.pipeline_runs SET status = 'NEW' WHERE id = ANY($1::uuid[])", [ids]);
	const seen: PipelineEvent[] = [];
	const errors: Error[] = [];
	const c = db.credential;
	const listener = new PipelineListener(
		{ host: c.host, port: c.port, database: c.database, user: c.user, password: c.password },
		{
			channel: 'l12_channel',
			statuses: ['NEW'],
			waitingStatuses: ['NEW'],
			catchUpLimit: 3,
			onEvents: (events) => void seen.push(...events),
			onError: (error) => void errors.push(error),
		},
	);
	await listener.start();
	try {
		const caught = new Set(seen.map((e) => e.id));
		for (const id of ids) assert.ok(caught.has(id), `run ${id} caught up`);
		for (const payload of ['null', '42', '{"id":1}'])
			await db.pool.query("SELECT pg_notify('l12_channel', $1)", [payload]);
		await new Promise((r) => setTimeout(r, 300));
		assert.deepEqual(errors, []);
	} finally {
		await listener.stop();
		await db.pool.query("UPDATE maas.pipeline_runs SET status = 'FAILED' WHERE id = ANY($1::uuid[])", [ids]);
	}
});
