/**
 * Issue 26 item 2: processors run outside the step's transaction, so a pool shared with them cannot be
 * starved. 20 concurrent Complete Steps whose processors query PostgreSQL through the same credential and
 * pool (the shipped default: poolConfig, 10 connections, 5 s connect timeout): all finish, no pool timeout,
 * each processor ran once and saw the run unlocked. The same for 20 concurrent Fails (FAIL processors) and
 * 20 concurrent Archives (ARCHIVE processors). Real PostgreSQL.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Pool } from 'pg';
import { archiveRun } from '../../nodes/PipelineCapture/actions/run/archive.operation';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { failRun } from '../../nodes/PipelineCapture/actions/run/fail.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { poolConfig } from '../../nodes/shared/postgres/pool';
import { WorkflowDefinition } from '../../nodes/shared/stateMachine';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
let pool: Pool;
beforeAll(async () => {
	db = await setupDatabase();
	const url = new URL(db.url);
	// the credential as a user fills it in, maxConnections left empty: the shipped default pool
	pool = new Pool(
		poolConfig({
			host: url.hostname,
			port: Number(url.port || 5432),
			database: url.pathname.slice(1),
			user: decodeURIComponent(url.username || 'postgres'),
			password: decodeURIComponent(url.password),
			ssl: 'disable',
		} as Parameters<typeof poolConfig>[0]),
	);
	// as getPool does for the shipped pool (nodes/shared/postgres/pool.ts): an idle client's lost connection is
	// handled, not an uncaught exception (CI saw "terminating connection due to administrator command" here)
	pool.on('error', () => undefined);
});
afterAll(async () => {
	await pool?.end();
	await db?.drop();
});

test('20 concurrent Complete Steps, processors querying through the same default pool: all finish, no pool timeout', async () => {
	assert.equal(pool.options.max, 10, 'the shipped default pool size');
	const base = structuredClone(shippedDefinition()) as unknown as {
		states: Record<string, { transitions: { name: string; processors?: unknown[] }[] }>;
	};
	base.states.ANALYZING.transitions.find((t) => t.name === 'ANALYSIS_DONE')!.processors = [
		{ type: 'EXTERNAL', name: 'enrich', executionMode: 'SYNC', config: { calculationNodesTags: 'enrich' } },
	];
	const def = WorkflowDefinition.parse(base);
	const runs = [];
	for (let i = 0; i < 20; i++) {
		const { rows } = await pool.query<{ id: string }>(
			`INSERT INTO maas.pipeline_runs (user_id, user_query) VALUES ($1, 'q') RETURNING id`,
			[`pool-${i}-${Math.random()}`],
		);
		const c = await capture(pool, def, { run_id: rows[0].id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
		runs.push({ id: rows[0].id, token: c.run.capture_token as string });
	}
	const seen = new Map<string, number>();
	let lockedSeen = 0;
	// each processor holds one of the pool's connections for 1.5 s (a slow sub-workflow query), and checks the
	// run's row is not locked by its own step; 20 × 1.5 s over 10 connections ≈ 3 s < the 5 s connect timeout,
	// whereas a step that held a connection while its processor waited for another would starve the pool
	const runProcessor = async (_p: unknown, _t: unknown, entity: unknown) => {
		const id = (entity as { id: string }).id;
		const client = await pool.connect();
		try {
			await client.query('BEGIN');
			const locked = await client.query('SELECT 1 FROM maas.pipeline_runs WHERE id = $1 FOR UPDATE NOWAIT', [id]).then(
				() => false,
				(e: { code?: string }) => e.code === '55P03',
			);
			if (locked) lockedSeen++;
			await client.query('ROLLBACK');
			await client.query('SELECT pg_sleep(1.5)');
		} finally {
			client.release();
		}
		seen.set(id, (seen.get(id) ?? 0) + 1);
		return { success: true };
	};
	const started = Date.now();
	const results = await Promise.allSettled(
		runs.map((r) =>
			completeStep(
				pool,
				def,
				{ run_id: r.id, transition: 'ANALYSIS_DONE', capture_token: r.token, result: { n: r.id } },
				{ runProcessor },
			),
		),
	);
	const ms = Date.now() - started;
	const failures = results
		.filter((r) => r.status === 'rejected')
		.map((r) => String((r as PromiseRejectedResult).reason));
	console.log(
		`20 concurrent Complete Steps over a ${pool.options.max}-connection pool: ${ms} ms, failures ${failures.length}`,
	);
	assert.deepEqual(failures, [], 'no pool timeout, no error');
	assert.ok(results.every((r) => r.status === 'fulfilled' && r.value.status === 'ANALYZED'));
	assert.deepEqual([...seen.values()], Array(20).fill(1), 'each processor ran once');
	assert.equal(lockedSeen, 0, 'no processor found its run locked by its own step');
	const { rows } = await db.pool.query<{ n: number }>(
		`SELECT count(*)::int AS n FROM maas.pipeline_runs WHERE id = ANY($1::uuid[]) AND status = 'ANALYZED'`,
		[runs.map((r) => r.id)],
	);
	assert.equal(rows[0].n, 20);
}, 60_000);

/**
 * A processor that holds one of the pool's connections for 1.5 s (a slow sub-workflow query) and checks the
 * run's row is not locked by its own operation; `seen` counts its runs per run id.
 */
function slowQueryProcessor() {
	const seen = new Map<string, number>();
	const locked = { n: 0 };
	const runProcessor = async (_p: unknown, _t: unknown, entity: unknown) => {
		const id = (entity as { id: string }).id;
		const client = await pool.connect();
		try {
			await client.query('BEGIN');
			const held = await client.query('SELECT 1 FROM maas.pipeline_runs WHERE id = $1 FOR UPDATE NOWAIT', [id]).then(
				() => false,
				(e: { code?: string }) => e.code === '55P03',
			);
			if (held) locked.n++;
			await client.query('ROLLBACK');
			await client.query('SELECT pg_sleep(1.5)');
		} finally {
			client.release();
		}
		seen.set(id, (seen.get(id) ?? 0) + 1);
		return { success: true };
	};
	return { seen, locked, runProcessor };
}

type States = Record<
	string,
	{ transitions?: { name: string; next?: string; manual?: boolean; processors?: unknown[] }[] }
>;
const SLOW = [{ type: 'EXTERNAL', name: 'audit', executionMode: 'SYNC', config: { calculationNodesTags: 'audit' } }];

async function capturedRuns(n: number, prefix: string) {
	const ids: string[] = [];
	for (let i = 0; i < n; i++) {
		const { rows } = await pool.query<{ id: string }>(
			`INSERT INTO maas.pipeline_runs (user_id, user_query) VALUES ($1, 'q') RETURNING id`,
			[`${prefix}-${i}-${Math.random()}`],
		);
		await capture(pool, shippedDefinition(), { run_id: rows[0].id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
		ids.push(rows[0].id);
	}
	return ids;
}

function report(what: string, results: PromiseSettledResult<unknown>[], ms: number) {
	const failures = results
		.filter((r) => r.status === 'rejected')
		.map((r) => String((r as PromiseRejectedResult).reason));
	console.log(
		`20 concurrent ${what} over a ${pool.options.max}-connection pool: ${ms} ms, failures ${failures.length}`,
	);
	return failures;
}

test('20 concurrent Fails, FAIL processors querying through the same default pool: all finish, no pool timeout', async () => {
	const base = structuredClone(shippedDefinition()) as unknown as { states: States };
	for (const state of Object.values(base.states))
		for (const t of state.transitions ?? []) if (t.name === 'FAIL') t.processors = SLOW;
	const def = WorkflowDefinition.parse(base);
	const ids = await capturedRuns(20, 'fail-pool');
	const p = slowQueryProcessor();
	const started = Date.now();
	const results = await Promise.allSettled(
		ids.map((id, i) => failRun(pool, def, { run_id: id, error: { message: 'stop' }, call_key: `k-${i}` }, p)),
	);
	const failures = report('Fails', results, Date.now() - started);
	assert.deepEqual(failures, [], 'no pool timeout, no error');
	assert.deepEqual([...p.seen.values()], Array(20).fill(1), 'each processor ran once');
	assert.equal(p.locked.n, 0, 'no processor found its run locked by its own Fail');
	const { rows } = await db.pool.query<{ n: number }>(
		`SELECT count(*)::int AS n FROM maas.pipeline_runs WHERE id = ANY($1::uuid[]) AND status = 'FAILED'`,
		[ids],
	);
	assert.equal(rows[0].n, 20);
}, 60_000);

test('20 concurrent Archives, ARCHIVE processors querying through the same default pool: all finish, no pool timeout', async () => {
	const base = structuredClone(shippedDefinition()) as unknown as { states: States };
	base.states.COMPLETED = { transitions: [{ name: 'ARCHIVE', next: 'COMPLETED', manual: true, processors: SLOW }] };
	const def = WorkflowDefinition.parse(base);
	const ids = await capturedRuns(20, 'archive-pool');
	// straight to COMPLETED (the steps are not what this test measures)
	await pool.query(
		`UPDATE maas.pipeline_runs SET status = 'COMPLETED', capture_token = NULL, final_answer = 'a' WHERE id = ANY($1::uuid[])`,
		[ids],
	);
	const p = slowQueryProcessor();
	const started = Date.now();
	const results = await Promise.allSettled(ids.map((id) => archiveRun(pool, { run_id: id, summary: 's' }, def, p)));
	const failures = report('Archives', results, Date.now() - started);
	assert.deepEqual(failures, [], 'no pool timeout, no error');
	assert.deepEqual([...p.seen.values()], Array(20).fill(1), 'each processor ran once');
	assert.equal(p.locked.n, 0, 'no processor found its run locked by its own Archive');
	const { rows } = await db.pool.query<{ n: number }>(
		`SELECT count(*)::int AS n FROM maas.pipeline_runs WHERE id = ANY($1::uuid[]) AND archived_at IS NOT NULL`,
		[ids],
	);
	assert.equal(rows[0].n, 20);
}, 60_000);
