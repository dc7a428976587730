/**
 * Issue 26 item 1 for Claim Jobs: a TCP proxy between Claim Jobs and the real PostgreSQL forwards the claim
 * and cuts the connection as soon as the server starts to answer (the claim committed, the caller gets 503);
 * the caller then retries as n8n's Retry On Fail would (same worker, same call key). Asserted: the retry
 * gets exactly the jobs the first call claimed (same claim_token and run_id, `replayed: true`), nothing
 * new is claimed and nothing is stranded; another key, another worker, no key, or a key older than the
 * replay window claims normally; jobs of that claim that ended meanwhile are not handed out again.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Client, type Pool } from 'pg';
import { ContractError } from '../../nodes/shared/errors';
import { claimJobs, CLAIM_REPLAY_WINDOW_SECONDS, finishJobs } from '../../nodes/shared/jobs/queue';
import { CLAIM_JOBS_NAMED } from '../../nodes/shared/statements/jobs';
import type { TestDatabase } from '../helpers/db';
import { closeProxiedDatabase, setupProxiedDatabase } from '../helpers/proxiedDatabase';
import type { TcpProxy } from '../helpers/tcpProxy';

let db: TestDatabase;
let proxy: TcpProxy;
let proxied: Pool;
beforeAll(async () => {
	({ db, proxy, proxied } = await setupProxiedDatabase());
});
afterAll(() => closeProxiedDatabase({ db, proxy, proxied }));

/** A marker only Claim Jobs' requests carry: its prepared statement's name (in its Parse and in every Bind). */
const CLAIM_MARKER = CLAIM_JOBS_NAMED.name;

async function enqueue(type: string, n: number): Promise<number[]> {
	const { rows } = await db.pool.query<{ id: string }>(
		`INSERT INTO ops.jobs (job_type, payload) SELECT $1, jsonb_build_object('n', g) FROM generate_series(1, $2) g RETURNING id`,
		[type, n],
	);
	return rows.map((r) => Number(r.id));
}

async function jobs(type: string) {
	return (
		await db.pool.query(
			`SELECT j.id::int, j.status, j.attempts, j.locked_by, j.claim_token::text, j.run_id::text,
			        (SELECT count(*)::int FROM ops.job_runs r WHERE r.job_id = j.id) AS runs
			 FROM ops.jobs j WHERE job_type = $1 ORDER BY id`,
			[type],
		)
	).rows;
}

/** `call` with the reply of its first request containing `marker` dropped: it must fail with 503. */
async function withLostReply<T>(marker: string, call: () => Promise<T>): Promise<void> {
	const before = proxy.dropped;
	proxy.dropReplyTo(marker);
	await assert.rejects(call(), (e: ContractError) => e.statusCode === 503 && e.retryable === true);
	assert.equal(proxy.dropped, before + 1, 'the reply was dropped');
}

const key = (execution: string) => JSON.stringify(['instance', 'WF90', execution, 'Claim Jobs', 0, 0]);

test('reply lost after COMMIT: the retry (same worker, same key) gets the same jobs, tokens and runs, replayed; nothing new claimed, nothing stranded', async () => {
	const ids = await enqueue('lr-claim', 5);
	const call = () =>
		claimJobs(proxied, { job_type: 'lr-claim', batch_size: 3, worker: 'wf90-7' }, { claim_key: key('7') });
	await withLostReply(CLAIM_MARKER, call);
	const committed = (await jobs('lr-claim')).filter((j) => j.status === 'running');
	assert.deepEqual(
		committed.map((j) => j.id),
		ids.slice(0, 3),
		'the first call committed its claim of 3 jobs',
	);
	const retry = await call();
	assert.deepEqual(
		retry.map((j) => [Number(j.id), j.claim_token, j.replayed]),
		committed.map((j) => [j.id, j.claim_token, true]),
		'the retry answers with the jobs and claim tokens the first call took',
	);
	assert.deepEqual(
		retry.map((j) => [Number(j.id), String(j.run_id)]),
		committed.map((j) => [j.id, j.run_id]),
		'the run ids the first call reserved (read before the retry)',
	);
	assert.ok(
		retry.every((j) => !('claim_key' in j) && !('lease_id' in j)),
		'the bookkeeping is not in the output',
	);
	const after = await jobs('lr-claim');
	assert.deepEqual(
		after.map((j) => [j.status, j.attempts, j.runs]),
		[...Array(3).fill(['running', 1, 0]), ...Array(2).fill(['queued', 0, 0])],
		'one attempt per claimed job (its run is written when it ends, migration 026); the other two still queued',
	);
	// the replayed tokens finish the jobs: nothing stranded
	const done = await finishJobs(
		db.pool,
		retry.map((j) => ({ job_id: j.id, worker: 'wf90-7', success: true, claim_token: j.claim_token })),
	);
	assert.deepEqual(
		done.map((d) => (d instanceof ContractError ? d.statusCode : d.status)),
		['succeeded', 'succeeded', 'succeeded'],
	);
	const written = await db.pool.query(
		'SELECT job_id::int, id::text, status FROM ops.job_runs WHERE job_id = ANY($1) ORDER BY job_id, id',
		[ids],
	);
	assert.deepEqual(
		written.rows.map((r) => [r.job_id, r.id, r.status]),
		retry.map((j) => [Number(j.id), String(j.run_id), 'succeeded']),
		'one run per job, under the run id the first call reserved',
	);
	// a later retry with that key finds no running job of it: it claims what is due, as a new call
	const later = await call();
	assert.deepEqual(
		later.map((j) => [Number(j.id), j.replayed]),
		ids.slice(3).map((id) => [id, undefined]),
	);
});

test('only the same worker with the same key, within the window, is answered as a replay; jobs of that claim that ended are not handed out again', async () => {
	const ids = await enqueue('lr-other', 8);
	const first = await claimJobs(
		db.pool,
		{ job_type: 'lr-other', batch_size: 2, worker: 'wf90-1' },
		{ claim_key: key('1') },
	);
	assert.deepEqual(
		first.map((j) => Number(j.id)),
		ids.slice(0, 2),
	);
	// another key, same worker → new jobs
	const otherKey = await claimJobs(
		db.pool,
		{ job_type: 'lr-other', batch_size: 2, worker: 'wf90-1' },
		{ claim_key: key('2') },
	);
	assert.deepEqual(
		otherKey.map((j) => [Number(j.id), j.replayed]),
		ids.slice(2, 4).map((id) => [id, undefined]),
	);
	// same key, another worker → new jobs
	const otherWorker = await claimJobs(
		db.pool,
		{ job_type: 'lr-other', batch_size: 1, worker: 'wf90-9' },
		{ claim_key: key('1') },
	);
	assert.deepEqual(
		otherWorker.map((j) => Number(j.id)),
		[ids[4]],
	);
	// no key → no replay
	const keyless = await claimJobs(db.pool, { job_type: 'lr-other', batch_size: 1, worker: 'wf90-1' });
	assert.deepEqual(
		keyless.map((j) => Number(j.id)),
		[ids[5]],
	);
	// one job of the first claim finished: the replay returns only the one still running under it
	await finishJobs(db.pool, [{ job_id: first[0].id, worker: 'wf90-1', success: true }]);
	const replay = await claimJobs(
		db.pool,
		{ job_type: 'lr-other', batch_size: 2, worker: 'wf90-1' },
		{ claim_key: key('1') },
	);
	assert.deepEqual(
		replay.map((j) => [Number(j.id), j.claim_token, j.replayed]),
		[[ids[1], first[1].claim_token, true]],
	);
	// past the replay window: the same key claims anew
	await db.pool.query(`UPDATE ops.jobs SET locked_at = now() - make_interval(secs => $2::float8 + 5) WHERE id = $1`, [
		ids[1],
		CLAIM_REPLAY_WINDOW_SECONDS,
	]);
	const stale = await claimJobs(
		db.pool,
		{ job_type: 'lr-other', batch_size: 2, worker: 'wf90-1' },
		{ claim_key: key('1') },
	);
	assert.deepEqual(
		stale.map((j) => [Number(j.id), j.replayed]),
		ids.slice(6, 8).map((id) => [id, undefined]),
	);
	const all = await jobs('lr-other');
	assert.ok(
		all.every((j) => j.attempts <= 1 && j.runs <= 1),
		`no job claimed twice: ${JSON.stringify(all)}`,
	);
});

test('a replay moves the jobs to the lease the retry gives (the retrying process holds them from then on)', async () => {
	const [id] = await enqueue('lr-lease', 1);
	const lease1 = '11111111-1111-4111-8111-111111111111';
	const lease2 = '22222222-2222-4222-8222-222222222222';
	// both processes hold their leases (a claim under a lease the server does not hold claims nothing)
	const holder = new Client({ connectionString: db.url });
	await holder.connect();
	// a lease process takes its lock with a try (nothing may wait on a lease key: migration 025)
	for (const lease of [lease1, lease2])
		assert.equal(
			(await holder.query('SELECT pg_try_advisory_lock(ops.job_lease_key($1)) AS got', [lease])).rows[0].got,
			true,
		);
	try {
		await claimJobs(
			db.pool,
			{ job_type: 'lr-lease', batch_size: 1, worker: 'w' },
			{ claim_key: key('L'), lease_id: lease1 },
		);
		const [replayed] = await claimJobs(
			db.pool,
			{ job_type: 'lr-lease', batch_size: 1, worker: 'w' },
			{ claim_key: key('L'), lease_id: lease2 },
		);
		assert.equal(Number(replayed.id), id);
		assert.equal(replayed.replayed, true);
		const { rows } = await db.pool.query('SELECT lease_id::text FROM ops.jobs WHERE id = $1', [id]);
		assert.equal(rows[0].lease_id, lease2);
	} finally {
		await holder.end();
	}
});
