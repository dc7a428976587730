/**
 * The LISTEN of the Pipeline Trigger on real PostgreSQL, with faults: its backend terminated
 * (pg_terminate_backend) mid-run, and the server "restarted" (every connection dropped and refused for a
 * while, through a TCP proxy). It reconnects, catches up, no run is left behind, and a consumer that
 * captures what it receives runs every run exactly once although events may repeat.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { PipelineListener, type PipelineEvent } from '../../nodes/shared/postgres/listener';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { TcpProxy } from '../helpers/tcpProxy';

let db: TestDatabase;
let proxy: TcpProxy;
let listener: PipelineListener;
const def = shippedDefinition();
const events: PipelineEvent[] = [];
const captures = new Map<string, number>();
const pending: Promise<unknown>[] = [];

async function until(what: string, check: () => boolean, ms = 15_000) {
	const end = Date.now() + ms;
	while (!check()) {
		if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 25));
	}
}

async function newRuns(n: number): Promise<string[]> {
	const { rows } = await db.pool.query<{ id: string }>(
		`INSERT INTO maas.pipeline_runs (user_id, user_query) SELECT 'listen-' || gen_random_uuid(), 'q' FROM generate_series(1, $1) RETURNING id`,
		[n],
	);
	return rows.map((r) => r.id);
}

beforeAll(async () => {
	db = await setupDatabase();
	const target = new URL(db.url);
	proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
	await proxy.up();
	listener = new PipelineListener(
		{
			host: '127.0.0.1',
			port: proxy.port,
			database: target.pathname.slice(1),
			user: decodeURIComponent(target.username || 'postgres'),
			password: decodeURIComponent(target.password) || undefined,
		},
		{
			initialBackoffMs: 50,
			maxBackoffMs: 400,
			statuses: ['NEW'],
			onEvents: (batch) => {
				events.push(...batch);
				for (const event of batch) {
					// The consumer: capture what arrives (as the Orchestrator's Analyzer does).
					pending.push(
						capture(db.pool, def, { run_id: event.id, transition: 'CAPTURE_ANALYSIS', worker: 'consumer' }).then(
							(c) => {
								if (c.captured) captures.set(event.id, (captures.get(event.id) ?? 0) + 1);
							},
						),
					);
				}
			},
			onError: () => undefined,
		},
	);
	await listener.start();
});

afterAll(async () => {
	await listener?.stop();
	await proxy?.down();
	await db?.drop();
});

const seen = (ids: string[]) => () => ids.every((id) => events.some((e) => e.id === id));

test('a new run is announced by NOTIFY with its status', async () => {
	const [id] = await newRuns(1);
	await until('the NOTIFY', seen([id]));
	assert.deepEqual(
		events.find((e) => e.id === id),
		{ id, status: 'NEW', operation: 'INSERT' },
	);
});

test('backend terminated mid-run: reconnects, and runs created meanwhile are caught up', async () => {
	const before = listener.connections;
	await db.pool.query('SELECT pg_terminate_backend($1)', [listener.backendPid]);
	const ids = await newRuns(5);
	await until('the reconnect', () => listener.connections > before);
	await until('every run of the gap', seen(ids));
});

test('server restart (connections dropped, then refused): reconnects with backoff and catches up', async () => {
	const before = listener.connections;
	await proxy.down();
	const ids = await newRuns(5);
	await new Promise((r) => setTimeout(r, 600));
	await proxy.up();
	await until('the reconnect', () => listener.connections > before);
	await until('every run of the outage', seen(ids));
});

test('nothing left behind, nothing run twice: every run captured exactly once', async () => {
	await Promise.all(pending);
	const { rows } = await db.pool.query<{ id: string; status: string }>(
		"SELECT id, status FROM maas.pipeline_runs WHERE user_id LIKE 'listen-%'",
	);
	assert.equal(rows.length, 11);
	assert.ok(
		rows.every((r) => r.status === 'ANALYZING'),
		JSON.stringify(rows),
	);
	assert.equal(captures.size, 11);
	assert.ok([...captures.values()].every((n) => n === 1));
});

test('an unreachable server fails start() and leaves nothing running', async () => {
	const target = new URL(db.url);
	const bad = new PipelineListener(
		{ host: '127.0.0.1', port: 1, database: target.pathname.slice(1), user: 'nobody' },
		{ onEvents: () => undefined },
	);
	await assert.rejects(bad.start());
	assert.equal(bad.connections, 0);
	await bad.stop();
});
