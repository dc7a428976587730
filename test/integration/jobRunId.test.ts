/**
 * Issue 29 P2, migrations 023 and 026: Claim Jobs reserves the attempt's run id in ops.jobs.run_id, and the
 * statement that ends the attempt writes the ops.job_runs row under it, once. Asserted on the real PostgreSQL:
 * no run row while the job runs; Finish Job writes exactly that run (attempt, worker, started at the claim);
 * a run opened by a claim before migration 026 (a `running` row under run_id) is closed, not written twice; a
 * job claimed before migration 023 (run_id NULL, its run open) is finished with that run closed, and a replay
 * of such a claim returns that run's id (and keeps it on the job); migration 026 gives such a job its run id;
 * a retry's second attempt gets a run of its own and leaves the first attempt's run as it was.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { claimJobs, finishJobs, releaseStale } from '../../nodes/shared/jobs/queue';
import { FAIL_JOB } from '../../nodes/shared/statements/jobs';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(() => db.drop());

async function enqueue(type: string, n: number): Promise<number[]> {
	const { rows } = await db.pool.query<{ id: string }>(
		'INSERT INTO ops.jobs (job_type) SELECT $1 FROM generate_series(1, $2) RETURNING id',
		[type, n],
	);
	return rows.map((r) => Number(r.id));
}

async function runsOf(jobId: number) {
	const { rows } = await db.pool.query(
		'SELECT id::int, status, attempt, worker, finished_at IS NOT NULL AS finished FROM ops.job_runs WHERE job_id = $1 ORDER BY id',
		[jobId],
	);
	return rows;
}

/** A run as a claim before migration 026 opened it: `running`, under `runId` (NULL: a new id), worker w1. */
async function openRunAsBefore026(jobId: number, runId: string | null): Promise<number> {
	const { rows } = await db.pool.query(
		`INSERT INTO ops.job_runs (id, job_id, attempt, status, worker, started_at)
		 VALUES (coalesce($2::bigint, nextval('ops.job_runs_id_seq')), $1, 1, 'running', 'w1', now() - interval '1 hour') RETURNING id::int`,
		[jobId, runId],
	);
	return rows[0].id;
}

test('the claimed job carries its run id; no run row while it runs; Finish Job writes that run once', async () => {
	const [id] = await enqueue('runid-a', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'runid-a', batch_size: 5, worker: 'w1' });
	assert.ok(job.run_id);
	assert.deepEqual(await runsOf(id), []);
	const { rows } = await db.pool.query('SELECT run_id::int, locked_at FROM ops.jobs WHERE id = $1', [id]);
	assert.equal(rows[0].run_id, Number(job.run_id));
	const [done] = await finishJobs(db.pool, [{ job_id: id, worker: 'w1', claim_token: job.claim_token, success: true }]);
	assert.equal(Number((done as Record<string, unknown>).run_id), Number(job.run_id));
	assert.deepEqual(await runsOf(id), [
		{ id: Number(job.run_id), status: 'succeeded', attempt: 1, worker: 'w1', finished: true },
	]);
	const { rows: started } = await db.pool.query('SELECT started_at FROM ops.job_runs WHERE id = $1', [job.run_id]);
	assert.equal(started[0].started_at.getTime(), rows[0].locked_at.getTime(), 'started when it was claimed');
});

test('a run a claim opened before migration 026 is closed by Finish Job, not written twice; its start kept', async () => {
	const [id] = await enqueue('runid-e', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'runid-e', batch_size: 5, worker: 'w1' });
	await openRunAsBefore026(id, String(job.run_id));
	const [done] = await finishJobs(db.pool, [
		{ job_id: id, worker: 'w1', claim_token: job.claim_token, success: false, retryable: false, error: { kind: 'x' } },
	]);
	assert.equal(Number((done as Record<string, unknown>).run_id), Number(job.run_id));
	const { rows } = await db.pool.query(
		"SELECT id::int, status, error, started_at < now() - interval '59 minutes' AS kept FROM ops.job_runs WHERE job_id = $1",
		[id],
	);
	assert.deepEqual(rows, [{ id: Number(job.run_id), status: 'failed', error: { kind: 'x' }, kept: true }]);
});

test('a job claimed before migration 023 (run_id NULL, its run open) is finished with that run closed', async () => {
	const [id] = await enqueue('runid-b', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'runid-b', batch_size: 5, worker: 'w1' });
	await db.pool.query('UPDATE ops.jobs SET run_id = NULL WHERE id = $1', [id]);
	const open = await openRunAsBefore026(id, null);
	const [done] = await finishJobs(db.pool, [
		{ job_id: id, worker: 'w1', claim_token: job.claim_token, success: false, retryable: false, error: { kind: 'x' } },
	]);
	assert.equal(Number((done as Record<string, unknown>).run_id), open);
	assert.deepEqual(
		(await runsOf(id)).map((r) => [r.id, r.status, r.finished]),
		[[open, 'failed', true]],
	);
});

test('migration 026 gives a running job claimed before migration 023 the id of its open run', async () => {
	const [id] = await enqueue('runid-f', 1);
	await claimJobs(db.pool, { job_type: 'runid-f', batch_size: 5, worker: 'w1' });
	await db.pool.query('UPDATE ops.jobs SET run_id = NULL WHERE id = $1', [id]);
	const open = await openRunAsBefore026(id, null);
	const sql = readFileSync(join(__dirname, '../../db/migrations/026_job_run_written_once.sql'), 'utf8');
	const client = await db.pool.connect();
	try {
		await client.query(sql);
	} finally {
		client.release(true); // the migration's SET lock_timeout stays with this connection: closed
	}
	const { rows } = await db.pool.query('SELECT run_id::int FROM ops.jobs WHERE id = $1', [id]);
	assert.equal(rows[0].run_id, open);
});

test('a replayed claim of a job claimed before migration 023 returns its open run and keeps it on the job', async () => {
	const [id] = await enqueue('runid-c', 1);
	const key = JSON.stringify(['instance', 'WF90', 'exec-1', 'Claim Jobs', 0, 0]);
	const [first] = await claimJobs(db.pool, { job_type: 'runid-c', batch_size: 5, worker: 'w1' }, { claim_key: key });
	await db.pool.query('UPDATE ops.jobs SET run_id = NULL WHERE id = $1', [id]);
	const open = await openRunAsBefore026(id, null);
	const [again] = await claimJobs(db.pool, { job_type: 'runid-c', batch_size: 5, worker: 'w1' }, { claim_key: key });
	assert.equal(again.replayed, true);
	assert.equal(again.claim_token, first.claim_token);
	assert.equal(Number(again.run_id), open);
	const { rows } = await db.pool.query('SELECT run_id::int FROM ops.jobs WHERE id = $1', [id]);
	assert.equal(rows[0].run_id, open);
	assert.equal((await runsOf(id)).length, 1, 'no second run opened');
});

test("a retried job's second attempt gets a run of its own; the first attempt's run stays as it was written", async () => {
	const [id] = await enqueue('runid-d', 1);
	const [one] = await claimJobs(db.pool, { job_type: 'runid-d', batch_size: 5, worker: 'w1' });
	await finishJobs(db.pool, [
		{ job_id: id, worker: 'w1', claim_token: one.claim_token, success: false, retryable: true, error: { kind: 'y' } },
	]);
	await db.pool.query('UPDATE ops.jobs SET next_run_at = now() WHERE id = $1', [id]);
	const [two] = await claimJobs(db.pool, { job_type: 'runid-d', batch_size: 5, worker: 'w2' });
	assert.notEqual(Number(two.run_id), Number(one.run_id));
	await finishJobs(db.pool, [{ job_id: id, worker: 'w2', claim_token: two.claim_token, success: true }]);
	assert.deepEqual(
		(await runsOf(id)).map((r) => [r.id, r.status, r.attempt, r.worker, r.finished]),
		[
			[Number(one.run_id), 'retry', 1, 'w1', true],
			[Number(two.run_id), 'succeeded', 2, 'w2', true],
		],
	);
});

test("Release Stale writes the released attempt's run under its run id: worker, claim time, timeout error", async () => {
	const [id] = await enqueue('runid-g', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'runid-g', batch_size: 5, worker: 'w-dead' });
	await db.pool.query("UPDATE ops.jobs SET locked_at = now() - interval '1 hour' WHERE id = $1", [id]);
	const released = await releaseStale(db.pool, { older_than_seconds: 60, limit: 100 });
	assert.deepEqual(
		released.filter((r) => Number(r.id) === id).map((r) => [r.status, Number(r.runs_closed)]),
		[['queued', 1]],
	);
	const { rows } = await db.pool.query(
		"SELECT id::int, status, worker, error->>'kind' AS kind, started_at < now() - interval '59 minutes' AS claim_time FROM ops.job_runs WHERE job_id = $1",
		[id],
	);
	assert.deepEqual(rows, [
		{ id: Number(job.run_id), status: 'retry', worker: 'w-dead', kind: 'timeout', claim_time: true },
	]);
	assert.deepEqual(
		await releaseStale(db.pool, { older_than_seconds: 60, limit: 100 }),
		[],
		'a second run releases nothing',
	);
	assert.equal((await runsOf(id)).length, 1);
});

test("the Error Pipe's job path writes the attempt's run under its run id once; a job not claimed gets a run of its own", async () => {
	const [id, unclaimed] = await enqueue('runid-h', 2);
	const [job] = await claimJobs(db.pool, { job_type: 'runid-h', batch_size: 1, worker: 'w-err' });
	assert.equal(Number(job.id), id);
	const failJob = (jobId: number, token: string | null) =>
		db.pool.query(FAIL_JOB, [jobId, false, '{"kind":"x"}', 10, 3600, null, token !== null, token, null]);
	assert.equal((await failJob(id, job.claim_token as string)).rows[0].status, 'failed');
	assert.equal((await failJob(id, job.claim_token as string)).rows[0].status, null, 'the attempt ended already');
	assert.deepEqual(
		(await runsOf(id)).map((r) => [r.id, r.status, r.worker, r.attempt]),
		[[Number(job.run_id), 'failed', 'w-err', 1]],
	);
	await db.pool.query("UPDATE ops.jobs SET status = 'running' WHERE id = $1", [unclaimed]);
	assert.equal((await failJob(unclaimed, null)).rows[0].status, 'failed');
	assert.deepEqual(
		(await runsOf(unclaimed)).map((r) => [r.status, r.worker, r.attempt]),
		[['failed', null, 1]],
	);
});

test('Release Stale closes a run a claim opened before migration 026 under its run id; its worker and start kept', async () => {
	const [id] = await enqueue('runid-i', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'runid-i', batch_size: 5, worker: 'w1' });
	await openRunAsBefore026(id, String(job.run_id));
	await db.pool.query("UPDATE ops.jobs SET locked_at = now() - interval '1 hour' WHERE id = $1", [id]);
	await releaseStale(db.pool, { older_than_seconds: 60, limit: 100 });
	const { rows } = await db.pool.query(
		"SELECT id::int, status, worker, error->>'kind' AS kind, started_at < now() - interval '59 minutes' AS kept FROM ops.job_runs WHERE job_id = $1",
		[id],
	);
	assert.deepEqual(rows, [{ id: Number(job.run_id), status: 'retry', worker: 'w1', kind: 'timeout', kept: true }]);
});

test('a job set running again by hand (its run id names a written run): the Error Pipe writes a run under a new id', async () => {
	const [id] = await enqueue('runid-j', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'runid-j', batch_size: 1, worker: 'w1' });
	await finishJobs(db.pool, [
		{ job_id: id, worker: 'w1', claim_token: job.claim_token, success: false, retryable: true, error: { kind: 'y' } },
	]);
	await db.pool.query("UPDATE ops.jobs SET status = 'running', locked_by = 'manual', locked_at = now() WHERE id = $1", [
		id,
	]);
	const { rows } = await db.pool.query(FAIL_JOB, [id, false, '{"kind":"z"}', 10, 3600, null, false, null, null]);
	assert.equal(rows[0].status, 'failed');
	const runs = await runsOf(id);
	assert.deepEqual(
		runs.map((r) => [r.status, r.worker]),
		[
			['retry', 'w1'],
			['failed', 'manual'],
		],
	);
	assert.equal(runs[0].id, Number(job.run_id), 'the written run is left as it was');
});
