/**
 * Issue 26 item 3 for ops.jobs: job leases (nodes/shared/jobs/lease.ts, migration 020) and Release Stale
 * with a Lease Grace, on real PostgreSQL and real processes:
 *  - a worker process (child process, test/helpers/leaseWorker.ts) killed with SIGKILL: its jobs are
 *    released by Release Stale within grace + interval of the kill (PostgreSQL drops its advisory lock when
 *    the connection closes), while a live but slow holder (sleeping longer than the grace) keeps its jobs
 *    and finishes them afterwards;
 *  - a lease connection dropped (TCP proxy down) that reconnects within the grace keeps its jobs; one that
 *    stays away longer than the grace loses them;
 *  - the lease is read from pg_locks, never taken by the checker; Lease Max and the age threshold for jobs
 *    without a lease as backstops; a job with a held lease older than the old 900 s threshold stays.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Client, type Pool } from 'pg';
import { closeJobLeases, jobLeaseFor } from '../../nodes/shared/jobs/lease';
import { claimJobs, releaseStale } from '../../nodes/shared/jobs/queue';
import type { TestDatabase } from '../helpers/db';
import { closeProxiedDatabase, setupProxiedDatabase } from '../helpers/proxiedDatabase';
import type { TcpProxy } from '../helpers/tcpProxy';

let db: TestDatabase;
let proxy: TcpProxy;
let proxied: Pool;
const children: ChildProcess[] = [];
beforeAll(async () => {
	({ db, proxy, proxied } = await setupProxiedDatabase());
});
afterAll(async () => {
	for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
	await closeJobLeases();
	await closeProxiedDatabase({ db, proxy, proxied });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function enqueue(type: string, n: number): Promise<number[]> {
	const { rows } = await db.pool.query<{ id: string }>(
		`INSERT INTO ops.jobs (job_type, payload) SELECT $1, jsonb_build_object('n', g) FROM generate_series(1, $2) g RETURNING id`,
		[type, n],
	);
	return rows.map((r) => Number(r.id));
}

async function statuses(ids: number[]): Promise<string[]> {
	const { rows } = await db.pool.query('SELECT status FROM ops.jobs WHERE id = ANY($1) ORDER BY id', [ids]);
	return rows.map((r) => r.status);
}

interface Worker {
	child: ChildProcess;
	leaseId: string;
	jobs: number[];
	/** The next JSON line it prints. */
	next(): Promise<Record<string, unknown>>;
}

/** A worker process (test/helpers/leaseWorker.ts) that claimed up to `batch` jobs of `type` under its lease. */
async function startWorker(type: string, batch: number, worker: string): Promise<Worker> {
	const child = spawn(
		process.execPath,
		['--import', 'tsx', path.join(__dirname, '..', 'helpers', 'leaseWorker.ts'), db.url, type, String(batch), worker],
		{ stdio: ['pipe', 'pipe', 'pipe'], cwd: path.join(__dirname, '..', '..') },
	);
	children.push(child);
	let stderr = '';
	child.stderr!.on('data', (c) => (stderr += c.toString()));
	const lines = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
	const next = async () => {
		const line = await Promise.race([
			lines.next(),
			new Promise<never>((_, reject) =>
				setTimeout(() => reject(new Error(`worker ${worker} printed nothing in 60 s: ${stderr}`)), 60_000),
			),
		]);
		if (line.done) throw new Error(`worker ${worker} ended: ${stderr}`);
		return JSON.parse(line.value) as Record<string, unknown>;
	};
	const first = (await next()) as { lease_id: string; jobs: Array<{ id: number }> };
	return { child, leaseId: first.lease_id, jobs: first.jobs.map((j) => j.id), next };
}

async function held(leaseId: string): Promise<boolean> {
	return (await db.pool.query('SELECT ops.job_lease_held($1) AS held', [leaseId])).rows[0].held;
}

test('a worker process killed with SIGKILL: its jobs are released within grace + interval; a live holder sleeping longer than the grace keeps its jobs', async () => {
	await enqueue('lease-kill', 6);
	const victim = await startWorker('lease-kill', 3, 'victim');
	const slow = await startWorker('lease-kill', 3, 'slow');
	assert.equal(victim.jobs.length, 3);
	assert.equal(slow.jobs.length, 3);
	assert.ok((await held(victim.leaseId)) && (await held(slow.leaseId)), 'both leases held');
	const GRACE_S = 10; // the smallest Lease Grace Release Stale takes
	const INTERVAL_MS = 500;
	const release = () =>
		releaseStale(db.pool, {
			older_than_seconds: 900,
			limit: 100,
			lease_grace_seconds: GRACE_S,
			lease_max_seconds: 3600,
		});
	// before the kill: nothing is released however often Release Stale runs, for longer than the grace
	for (let i = 0; i < 6; i++) {
		assert.deepEqual(await release(), []);
		await sleep(INTERVAL_MS);
	}
	victim.child.kill('SIGKILL');
	const killedAt = Date.now();
	const released: Array<Record<string, unknown>> = [];
	while (released.length < 3 && Date.now() - killedAt < 30_000) {
		released.push(...(await release()));
		if (released.length < 3) await sleep(INTERVAL_MS);
	}
	const after = (Date.now() - killedAt) / 1000;
	console.log(
		`killed worker's 3 jobs released ${after.toFixed(1)} s after SIGKILL (grace ${GRACE_S} s, every ${INTERVAL_MS} ms)`,
	);
	assert.deepEqual(
		released.map((r) => [Number(r.id), r.status, r.reason]).sort(),
		victim.jobs.map((id) => [id, 'queued', 'lease']).sort(),
		'exactly the dead worker jobs, by lease',
	);
	assert.ok(after <= GRACE_S + INTERVAL_MS / 1000 + 2, `released ${after} s after the kill`);
	const runs = await db.pool.query(
		"SELECT status, error->>'message' AS message FROM ops.job_runs WHERE job_id = ANY($1)",
		[victim.jobs],
	);
	assert.deepEqual(
		runs.rows.map((r) => `${r.status}: ${r.message}`),
		Array(3).fill('retry: lease lost'),
	);
	// the slow holder has held its jobs for longer than the grace (and keeps holding them): never released
	for (let i = 0; i < GRACE_S * 2 + 2; i++) {
		assert.deepEqual(await release(), []);
		await sleep(INTERVAL_MS);
	}
	assert.deepEqual(await statuses(slow.jobs), ['running', 'running', 'running']);
	slow.child.stdin!.write('finish\n');
	assert.deepEqual(await slow.next(), { finished: 3 });
	assert.deepEqual(await statuses(slow.jobs), ['succeeded', 'succeeded', 'succeeded']);
	// its lease ended with it: no absence row left behind once no job runs under it
	await release();
	assert.equal((await db.pool.query('SELECT count(*)::int AS n FROM ops.job_lease_absences')).rows[0].n, 0);
}, 120_000);

test('a lease connection dropped and back within the grace keeps its jobs; away longer than the grace, they are released', async () => {
	const ids = await enqueue('lease-drop', 2);
	const lease = jobLeaseFor(proxied);
	const leaseId = await lease.ready();
	const claimed = await claimJobs(
		db.pool,
		{ job_type: 'lease-drop', batch_size: 2, worker: 'w' },
		{ lease_id: leaseId },
	);
	assert.equal(claimed.length, 2);
	const GRACE_S = 10; // the smallest Lease Grace Release Stale takes
	const release = () => releaseStale(db.pool, { older_than_seconds: 900, limit: 100, lease_grace_seconds: GRACE_S });
	// a short cut: the proxy drops the connection and refuses new ones for 1 s
	await proxy.down();
	const cutAt = Date.now();
	await waitUntil(async () => !(await held(leaseId)), 'the server dropped the lease lock');
	assert.deepEqual(await release(), [], 'absent, but not for the grace yet');
	assert.equal((await db.pool.query('SELECT count(*)::int AS n FROM ops.job_lease_absences')).rows[0].n, 1);
	await sleep(1000);
	await proxy.up();
	await waitUntil(async () => lease.held && (await held(leaseId)), 'the lease taken again');
	console.log(`lease back ${Date.now() - cutAt} ms after the cut (acquired ${lease.acquired} times)`);
	assert.equal(lease.acquired, 2);
	await sleep(Math.max(0, cutAt + GRACE_S * 1000 + 500 - Date.now()));
	assert.deepEqual(await release(), [], 'held again: nothing released after the grace');
	assert.equal((await db.pool.query('SELECT count(*)::int AS n FROM ops.job_lease_absences')).rows[0].n, 0);
	assert.deepEqual(await statuses(ids), ['running', 'running']);
	// a long cut: away for longer than the grace → released
	await proxy.down();
	await waitUntil(async () => !(await held(leaseId)), 'the server dropped the lease lock');
	assert.deepEqual(await release(), []);
	await sleep(GRACE_S * 1000 + 200);
	const released = await release();
	await proxy.up();
	assert.deepEqual(released.map((r) => [Number(r.id), r.reason]).sort(), ids.map((id) => [id, 'lease']).sort());
	await waitUntil(async () => lease.held, 'the lease back after the long cut');
}, 60_000);

test('the checker reads pg_locks and never takes the lock; Lease Max and the age threshold are backstops; a held lease keeps a job older than 900 s', async () => {
	const [old, hung, unleased, young] = await enqueue('lease-backstop', 4);
	const lease = jobLeaseFor(db.pool);
	const leaseId = await lease.ready();
	await claimJobs(db.pool, { job_type: 'lease-backstop', batch_size: 4, worker: 'w' }, { lease_id: leaseId });
	// a step running for 20 min under a held lease; one for 2 h (past Lease Max 3600); one without lease for 20 min
	await db.pool.query(
		`UPDATE ops.jobs SET locked_at = now() - CASE id WHEN $1 THEN interval '20 min' WHEN $2 THEN interval '2 hours' WHEN $3 THEN interval '20 min' ELSE interval '0' END,
		        lease_id = CASE WHEN id = $3 THEN NULL ELSE lease_id END
		 WHERE id = ANY($4)`,
		[old, hung, unleased, [old, hung, unleased, young]],
	);
	const released = await releaseStale(db.pool, {
		older_than_seconds: 900,
		limit: 100,
		lease_grace_seconds: 30,
		lease_max_seconds: 3600,
	});
	assert.deepEqual(
		released.map((r) => [Number(r.id), r.reason]).sort(),
		[
			[hung, 'lease_max'],
			[unleased, 'age'],
		].sort(),
	);
	assert.deepEqual(await statuses([old, young]), ['running', 'running'], 'held lease: kept past 900 s');
	// without a Lease Grace, Release Stale is as before: by age only, leases or not
	const byAge = await releaseStale(db.pool, { older_than_seconds: 900, limit: 100 });
	assert.deepEqual(
		byAge.map((r) => Number(r.id)),
		[old],
	);
	assert.equal(byAge[0].reason, undefined);
	// another session cannot take a held lease; the checker did not hold it after its statement either
	const other = new Client({ connectionString: db.url });
	await other.connect();
	try {
		const key = 'SELECT pg_try_advisory_lock(ops.job_lease_key($1)) AS got';
		assert.equal((await other.query(key, [leaseId])).rows[0].got, false, 'the lease process holds it');
		await lease.close();
		await waitUntil(async () => !(await held(leaseId)), 'the lock gone with the lease connection');
		assert.equal((await other.query(key, [leaseId])).rows[0].got, true, 'free once the lease ended');
	} finally {
		await other.end();
	}
	await closeJobLeases();
}, 60_000);

async function waitUntil(probe: () => Promise<boolean>, what: string, timeoutMs = 15_000) {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		if (await probe()) return;
		await sleep(100);
	}
	throw new Error(`timed out waiting for ${what}`);
}
