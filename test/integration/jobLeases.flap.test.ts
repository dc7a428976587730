/**
 * Issue 26 item 3, review of the job leases (nodes/shared/jobs/lease.ts, RELEASE_STALE_LEASED), on real
 * PostgreSQL:
 *  - short lease drops are never added up: a (re)acquire forgets the lease's recorded absence, and the grace
 *    is counted from greatest(absence, claim) — a job claimed after an absence was recorded gets a whole grace;
 *  - a lease whose lock vanished on the server while its connection lives (what a half-open connection or a
 *    transaction pooler looks like from here) is noticed by the probe (pid-checked) and taken again; the claim
 *    statement itself refuses to claim under a lease the server does not hold (503 JOB_LEASE_NOT_HELD);
 *  - a lease that cannot connect says why (SQLSTATE / errno in the 503's details, no message text);
 *  - a lease unused for its idle time with no claim in flight and no running job is closed (old credentials).
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Client, Pool } from 'pg';
import { ContractError } from '../../nodes/shared/errors';
import { closeJobLeases, JobLease, jobLeaseFor, LEASE_PROBE_MS } from '../../nodes/shared/jobs/lease';
import { claimJobs, finishJobs, LEASE_NOT_HELD, releaseStale } from '../../nodes/shared/jobs/queue';
import { LEASE_LOCK } from '../../nodes/shared/statements/jobs';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await closeJobLeases();
	await db?.drop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const GRACE_S = 15;
const release = () =>
	releaseStale(db.pool, { older_than_seconds: 900, limit: 100, lease_grace_seconds: GRACE_S, lease_max_seconds: 3600 });

async function enqueue(type: string, n: number): Promise<number[]> {
	const { rows } = await db.pool.query<{ id: string }>(
		`INSERT INTO ops.jobs (job_type) SELECT $1 FROM generate_series(1, $2) RETURNING id`,
		[type, n],
	);
	return rows.map((r) => Number(r.id));
}

async function held(leaseId: string): Promise<boolean> {
	return (await db.pool.query('SELECT ops.job_lease_held($1) AS held', [leaseId])).rows[0].held;
}

async function absences(leaseId: string): Promise<number> {
	return (await db.pool.query('SELECT count(*)::int AS n FROM ops.job_lease_absences WHERE lease_id = $1', [leaseId]))
		.rows[0].n;
}

/** The lease's own connection (to break it from the server side in a test). */
function clientOf(lease: JobLease): Client {
	return (lease as unknown as { client: Client }).client;
}

async function waitUntil(probe: () => Promise<boolean>, what: string, timeoutMs = 20_000) {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		if (await probe()) return;
		await sleep(100);
	}
	throw new Error(`timed out waiting for ${what}`);
}

test('two short drops are not added up: taking the lock again (LEASE_LOCK) forgets the first absence', async () => {
	const ids = await enqueue('flap', 2);
	const leaseId = 'f1000000-0000-4000-8000-000000000001';
	// the lease's process, by hand: each connection takes the lock with the lease's own statement
	const take = async () => {
		const c = new Client({ connectionString: db.url });
		await c.connect();
		assert.equal((await c.query(LEASE_LOCK, [leaseId])).rows[0].held, true);
		return c;
	};
	let holder = await take();
	await claimJobs(db.pool, { job_type: 'flap', batch_size: 2, worker: 'w' }, { lease_id: leaseId });
	// drop 1 at T: Release Stale records the absence
	await holder.end();
	await waitUntil(async () => !(await held(leaseId)), 'the lock dropped');
	assert.deepEqual(await release(), []);
	assert.equal(await absences(leaseId), 1);
	// 19 s pass while it is away (the jobs were claimed 20 s ago); it is back before any other Release Stale run
	await db.pool.query("UPDATE ops.job_lease_absences SET since = since - interval '19 s' WHERE lease_id = $1", [
		leaseId,
	]);
	await db.pool.query("UPDATE ops.jobs SET locked_at = locked_at - interval '20 s' WHERE id = ANY($1)", [ids]);
	holder = await take();
	assert.equal(await absences(leaseId), 0, 'the reacquire forgot the absence');
	// drop 2, brief: the next Release Stale must not count the grace from drop 1
	await holder.end();
	await waitUntil(async () => !(await held(leaseId)), 'the lock dropped again');
	assert.deepEqual(await release(), [], 'a sub-second absence does not release live jobs');
	const { rows } = await db.pool.query('SELECT status FROM ops.jobs WHERE id = ANY($1)', [ids]);
	assert.deepEqual(
		rows.map((r) => r.status),
		['running', 'running'],
	);
	// away for the whole grace from drop 2: released
	await db.pool.query("UPDATE ops.job_lease_absences SET since = since - interval '16 s' WHERE lease_id = $1", [
		leaseId,
	]);
	assert.deepEqual(
		(await release()).map((r) => r.reason),
		['lease', 'lease'],
	);
}, 60_000);

test('a job claimed after its lease was recorded absent gets a whole grace (greatest(since, locked_at))', async () => {
	const [id] = await enqueue('late-claim', 1);
	const leaseId = 'a1000000-0000-4000-8000-000000000001';
	const holder = new Client({ connectionString: db.url });
	await holder.connect();
	// taken with a try, as a lease process does (nothing may wait on a lease key: migration 025)
	assert.equal(
		(await holder.query('SELECT pg_try_advisory_lock(ops.job_lease_key($1)) AS got', [leaseId])).rows[0].got,
		true,
	);
	await claimJobs(db.pool, { job_type: 'late-claim', batch_size: 1, worker: 'w' }, { lease_id: leaseId });
	await holder.end();
	await waitUntil(async () => !(await held(leaseId)), 'the lock dropped');
	// an absence recorded a minute ago (a race with a reconnect, or a stale row), the job claimed just now
	await db.pool.query(
		"INSERT INTO ops.job_lease_absences (lease_id, since) VALUES ($1, now() - interval '60 s') ON CONFLICT (lease_id) DO UPDATE SET since = EXCLUDED.since",
		[leaseId],
	);
	assert.deepEqual(await release(), [], 'claimed less than the grace ago: kept');
	await db.pool.query("UPDATE ops.jobs SET locked_at = now() - interval '16 s' WHERE id = $1", [id]);
	assert.deepEqual(
		(await release()).map((r) => [Number(r.id), r.reason]),
		[[id, 'lease']],
		'absent and claimed longer than the grace ago: released',
	);
}, 30_000);

test('a lock that vanished on the server while the lease connection lives: the claim refuses (503) and the probe takes it again', async () => {
	await enqueue('vanished', 2);
	const lease = jobLeaseFor(db.pool);
	const leaseId = await lease.ready();
	const before = lease.acquired;
	// the lock goes (as behind a transaction pooler, or a session the server ended that this end still sees)
	await clientOf(lease).query('SELECT pg_advisory_unlock_all()');
	assert.equal(await held(leaseId), false);
	await assert.rejects(
		claimJobs(db.pool, { job_type: 'vanished', batch_size: 2, worker: 'w' }, { lease_id: leaseId }),
		(error: unknown) =>
			error instanceof ContractError &&
			error.statusCode === 503 &&
			error.retryable &&
			(error.details as { code?: string }).code === LEASE_NOT_HELD,
	);
	const { rows } = await db.pool.query(
		"SELECT count(*)::int AS n FROM ops.jobs WHERE job_type = 'vanished' AND status = 'queued'",
	);
	assert.equal(rows[0].n, 2, 'nothing claimed under a lease the server does not hold');
	// a Release Stale sees it absent; the probe (every LEASE_PROBE_MS) notices, reconnects, takes the lock again
	// and forgets that absence
	assert.deepEqual(await release(), []);
	assert.equal(await absences(leaseId), 0, 'no running job under it yet: nothing recorded');
	await db.pool.query('INSERT INTO ops.job_lease_absences (lease_id) VALUES ($1)', [leaseId]);
	const started = Date.now();
	await waitUntil(async () => lease.acquired > before && (await held(leaseId)), 'the probe retook the lock');
	console.log(`lock retaken ${Date.now() - started} ms after it vanished (probe every ${LEASE_PROBE_MS} ms)`);
	assert.equal(lease.lastCause, 'LOCK_NOT_HELD');
	assert.equal(await absences(leaseId), 0, 'the reacquire forgot the absence');
	const claimed = await claimJobs(db.pool, { job_type: 'vanished', batch_size: 2, worker: 'w' }, { lease_id: leaseId });
	assert.equal(claimed.length, 2);
	await closeJobLeases();
}, 30_000);

test('a lease that cannot connect gives its cause (SQLSTATE / errno, no message text) in the 503', async () => {
	const target = new URL(db.url);
	const cases: Array<[Pool, string]> = [
		[
			new Pool({ host: '127.0.0.1', port: Number(target.port || 5432), user: 'postgres', database: 'no_such_db_26' }),
			'3D000',
		],
		[new Pool({ host: '127.0.0.1', port: 1, user: 'postgres', database: 'x' }), 'ECONNREFUSED'],
	];
	for (const [pool, cause] of cases) {
		try {
			await assert.rejects(jobLeaseFor(pool).ready(1500), (error: unknown) => {
				assert.ok(error instanceof ContractError);
				assert.equal(error.statusCode, 503);
				assert.deepEqual(error.details, { code: 'JOB_LEASE_UNAVAILABLE', cause });
				assert.ok(!error.message.includes('no_such_db_26'));
				return true;
			});
		} finally {
			await pool.end();
		}
	}
	await closeJobLeases();
}, 30_000);

test('a lease unused for its idle time, with no claim in flight and no running job, is closed; one with a running job or a claim in flight is kept', async () => {
	await enqueue('idle', 1);
	const lease = new JobLease({ connectionString: db.url }, { probeMs: 200, idleCloseMs: 600 });
	try {
		const [job] = await lease.use((leaseId) =>
			claimJobs(db.pool, { job_type: 'idle', batch_size: 1, worker: 'w' }, { lease_id: leaseId }),
		);
		const leaseId = lease.id;
		// a claim in flight for longer than the idle time: kept
		await lease.use(() => sleep(1500));
		assert.equal(lease.isClosed, false);
		// unused, but a job runs under it: kept
		await sleep(1500);
		assert.equal(lease.isClosed, false, 'a running job keeps its lease');
		assert.equal(await held(leaseId), true);
		const [done] = await finishJobs(db.pool, [
			{ job_id: job.id, worker: 'w', success: true, claim_token: job.claim_token },
		]);
		assert.ok(!(done instanceof Error));
		// no running job left: closed at a probe after the idle time, its lock gone
		await waitUntil(async () => lease.isClosed, 'the idle lease closed', 5_000);
		assert.equal(lease.lastCause, 'IDLE_CLOSED');
		await waitUntil(async () => !(await held(leaseId)), 'its lock gone');
	} finally {
		await lease.close();
	}
}, 30_000);
