/**
 * Claim Jobs' lease gate since migration 025 (issue 29 P2; docs/retry-safety.md "Jobs: claims and leases"), on
 * real PostgreSQL: ops.job_lease_held_elsewhere tries the lease's advisory lock in share mode instead of reading
 * pg_locks.
 *  - held by the lease process (another session, exclusive): true, and the caller is left holding nothing;
 *  - not held: false, and the caller's transaction holds the lock in share mode until it ends — a lease
 *    reconnecting meanwhile fails its try once, and succeeds after;
 *  - Release Stale (ops.job_lease_held) does not count that share lock as the lease held: a recorded absence
 *    is kept and the jobs are released after the grace;
 *  - the claim statement: asks through that try (under a lease not held it holds the share lock until its
 *    transaction ends); claims under a held lease; under a lease not held, claims nothing (503
 *    JOB_LEASE_NOT_HELD) and leaves no lock behind.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Client } from 'pg';
import { ContractError } from '../../nodes/shared/errors';
import { claimJobs, LEASE_NOT_HELD, releaseStale } from '../../nodes/shared/jobs/queue';
import { CLAIM_JOBS_NAMED } from '../../nodes/shared/statements/jobs';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
const clients: Client[] = [];
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
	await db?.drop();
});

async function session(): Promise<Client> {
	const client = new Client({ connectionString: db.url });
	await client.connect();
	clients.push(client);
	return client;
}

/** The advisory locks (held or requested) of `leaseId`'s key by backend `pid`, or by any backend (null): their modes. */
async function locksOf(pid: number | null, leaseId: string): Promise<string[]> {
	const { rows } = await db.pool.query<{ mode: string }>(
		`SELECT l.mode FROM pg_catalog.pg_locks l
		 WHERE ($1::int IS NULL OR l.pid = $1) AND l.locktype = 'advisory' AND l.objsubid = 1
		   AND l.classid = ((ops.job_lease_key($2) >> 32) & 4294967295)::oid
		   AND l.objid = (ops.job_lease_key($2) & 4294967295)::oid`,
		[pid, leaseId],
	);
	return rows.map((r) => r.mode);
}

const pidOf = async (c: Client) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
const elsewhere = async (c: Client, leaseId: string) =>
	(await c.query<{ held: boolean }>('SELECT ops.job_lease_held_elsewhere($1) AS held', [leaseId])).rows[0].held;
const take = async (c: Client, leaseId: string) =>
	(await c.query<{ got: boolean }>('SELECT pg_try_advisory_lock(ops.job_lease_key($1)) AS got', [leaseId])).rows[0].got;

async function enqueue(type: string, n: number): Promise<number[]> {
	const { rows } = await db.pool.query<{ id: string }>(
		'INSERT INTO ops.jobs (job_type) SELECT $1 FROM generate_series(1, $2) RETURNING id',
		[type, n],
	);
	return rows.map((r) => Number(r.id));
}

test('held by the lease process: true, and the asking session holds nothing after', async () => {
	const leaseId = 'c0250001-0000-4000-8000-000000000000';
	const holder = await session();
	const asker = await session();
	assert.equal(await take(holder, leaseId), true);
	assert.equal(await elsewhere(asker, leaseId), true);
	await asker.query('BEGIN');
	assert.equal(await elsewhere(asker, leaseId), true, 'inside a transaction too');
	assert.deepEqual(await locksOf(await pidOf(asker), leaseId), [], 'nothing taken while the lease is held');
	await asker.query('COMMIT');
	assert.deepEqual(await locksOf(await pidOf(holder), leaseId), ['ExclusiveLock'], 'the holder keeps its lock');
	const { rows } = await db.pool.query('SELECT ops.job_lease_held($1) AS held', [leaseId]);
	assert.equal(rows[0].held, true, "Release Stale's check agrees");
});

test('not held: false, a share lock until the transaction ends; a reconnecting lease fails meanwhile and takes it after', async () => {
	const leaseId = 'c0250002-0000-4000-8000-000000000000';
	const asker = await session();
	const lease = await session();
	await asker.query('BEGIN');
	assert.equal(await elsewhere(asker, leaseId), false);
	assert.deepEqual(await locksOf(await pidOf(asker), leaseId), ['ShareLock']);
	assert.equal(await take(lease, leaseId), false, 'the lease cannot take it during the asking transaction');
	const { rows } = await db.pool.query('SELECT ops.job_lease_held($1) AS held', [leaseId]);
	assert.equal(rows[0].held, false, 'a share lock is not the lease held');
	await asker.query('COMMIT');
	assert.deepEqual(await locksOf(await pidOf(asker), leaseId), [], 'released with the transaction');
	assert.equal(await take(lease, leaseId), true, 'the lease takes it once the transaction ended');
	assert.equal(await elsewhere(asker, leaseId), true);
});

test('Release Stale keeps counting a lease absent while a claim holds its lock in share mode', async () => {
	const leaseId = 'c0250003-0000-4000-8000-000000000000';
	const holder = await session();
	assert.equal(await take(holder, leaseId), true);
	const [id] = await enqueue('gate-absent', 1);
	const claimed = await claimJobs(
		db.pool,
		{ job_type: 'gate-absent', batch_size: 1, worker: 'w' },
		{ lease_id: leaseId },
	);
	assert.deepEqual(
		claimed.map((j) => Number(j.id)),
		[id],
		'claimed under a held lease',
	);
	await holder.end(); // the lease process dies
	const options = { older_than_seconds: 900, limit: 10, lease_grace_seconds: 15, lease_max_seconds: 3600 };
	assert.deepEqual(await releaseStale(db.pool, options), [], 'absence recorded, within the grace');
	// a claim statement of a process that still believes it holds the lease, in flight across Release Stale runs
	const asker = await session();
	await asker.query('BEGIN');
	assert.equal(await elsewhere(asker, leaseId), false);
	await db.pool.query("UPDATE ops.job_lease_absences SET since = since - interval '16 s' WHERE lease_id = $1", [
		leaseId,
	]);
	await db.pool.query("UPDATE ops.jobs SET locked_at = locked_at - interval '16 s' WHERE id = $1", [id]);
	const released = await releaseStale(db.pool, options);
	await asker.query('COMMIT');
	assert.deepEqual(
		released.map((r) => [Number(r.id), r.reason]),
		[[id, 'lease']],
		'the share lock did not reset the absence: released after the grace',
	);
});

test('the claim statement itself asks through the share-mode try: under a lease not held it holds ShareLock until its transaction ends', async () => {
	const leaseId = 'c0250005-0000-4000-8000-000000000000';
	await enqueue('gate-statement', 1);
	const claimer = await session();
	await claimer.query('BEGIN');
	const { rows } = await claimer.query({
		...CLAIM_JOBS_NAMED,
		values: [['gate-statement'], 1, 'w', null, leaseId, 30],
	});
	assert.deepEqual(
		rows.map((r) => [r.id, r.lease_lost]),
		[[null, true]],
		'nothing claimed: one row of NULLs with lease_lost',
	);
	// the former gate (a read of pg_locks) took no lock at all
	assert.deepEqual(await locksOf(await pidOf(claimer), leaseId), ['ShareLock']);
	await claimer.query('COMMIT');
	assert.deepEqual(await locksOf(await pidOf(claimer), leaseId), []);
});

test('the claim statement: nothing claimed under a lease not held (503), and no lock left behind', async () => {
	const leaseId = 'c0250004-0000-4000-8000-000000000000';
	await enqueue('gate-claim', 2);
	await assert.rejects(
		claimJobs(db.pool, { job_type: 'gate-claim', batch_size: 2, worker: 'w' }, { lease_id: leaseId, claim_key: 'k1' }),
		(error: unknown) =>
			error instanceof ContractError &&
			error.statusCode === 503 &&
			(error.details as { code?: string }).code === LEASE_NOT_HELD,
	);
	const { rows } = await db.pool.query<{ n: number }>(
		"SELECT count(*)::int AS n FROM ops.jobs WHERE job_type = 'gate-claim' AND status = 'queued'",
	);
	assert.deepEqual({ n: rows[0].n, locks: (await locksOf(null, leaseId)).length }, { n: 2, locks: 0 });
	const lease = await session();
	assert.equal(await take(lease, leaseId), true, 'the lease can be taken right after');
	const claimed = await claimJobs(
		db.pool,
		{ job_type: 'gate-claim', batch_size: 2, worker: 'w' },
		{ lease_id: leaseId, claim_key: 'k2' },
	);
	assert.equal(claimed.length, 2, 'held now: claimed');
});
