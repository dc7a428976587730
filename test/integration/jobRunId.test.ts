/**
 * Issue 29 P2, migration 023: Claim Jobs keeps the open run's id in ops.jobs.run_id, and Finish Job and a
 * replayed claim find the run by it. Asserted on the real PostgreSQL: the claimed job's run_id is the run it
 * opened (one running run, same attempt and worker); Finish Job closes exactly that run; a job claimed before
 * migration 023 (run_id NULL: the column did not exist when it was claimed) is still finished with its open
 * run closed, and a replay of such a claim returns that run's id (and keeps it on the job); a retry's second
 * attempt opens a new run under a new run_id and leaves the first attempt's run as it was.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { claimJobs, finishJobs } from '../../nodes/shared/jobs/queue';
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

test('the claimed job carries the run it opened; Finish Job closes that run', async () => {
	const [id] = await enqueue('runid-a', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'runid-a', batch_size: 5, worker: 'w1' });
	const runs = await runsOf(id);
	assert.deepEqual(runs, [{ id: Number(job.run_id), status: 'running', attempt: 1, worker: 'w1', finished: false }]);
	const { rows } = await db.pool.query('SELECT run_id::int FROM ops.jobs WHERE id = $1', [id]);
	assert.equal(rows[0].run_id, Number(job.run_id));
	const [done] = await finishJobs(db.pool, [{ job_id: id, worker: 'w1', claim_token: job.claim_token, success: true }]);
	assert.equal(Number((done as Record<string, unknown>).run_id), Number(job.run_id));
	assert.deepEqual(await runsOf(id), [{ ...runs[0], status: 'succeeded', finished: true }]);
});

test('a job claimed before migration 023 (run_id NULL) is finished with its open run closed', async () => {
	const [id] = await enqueue('runid-b', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'runid-b', batch_size: 5, worker: 'w1' });
	await db.pool.query('UPDATE ops.jobs SET run_id = NULL WHERE id = $1', [id]);
	const [done] = await finishJobs(db.pool, [
		{ job_id: id, worker: 'w1', claim_token: job.claim_token, success: false, retryable: false, error: { kind: 'x' } },
	]);
	assert.equal(Number((done as Record<string, unknown>).run_id), Number(job.run_id));
	assert.deepEqual(
		(await runsOf(id)).map((r) => [r.id, r.status, r.finished]),
		[[Number(job.run_id), 'failed', true]],
	);
});

test('a replayed claim of a job claimed before migration 023 returns its open run and keeps it on the job', async () => {
	const [id] = await enqueue('runid-c', 1);
	const key = JSON.stringify(['instance', 'WF90', 'exec-1', 'Claim Jobs', 0, 0]);
	const [first] = await claimJobs(db.pool, { job_type: 'runid-c', batch_size: 5, worker: 'w1' }, { claim_key: key });
	await db.pool.query('UPDATE ops.jobs SET run_id = NULL WHERE id = $1', [id]);
	const [again] = await claimJobs(db.pool, { job_type: 'runid-c', batch_size: 5, worker: 'w1' }, { claim_key: key });
	assert.equal(again.replayed, true);
	assert.equal(again.claim_token, first.claim_token);
	assert.equal(Number(again.run_id), Number(first.run_id));
	const { rows } = await db.pool.query('SELECT run_id::int FROM ops.jobs WHERE id = $1', [id]);
	assert.equal(rows[0].run_id, Number(first.run_id));
	assert.equal((await runsOf(id)).length, 1, 'no second run opened');
});

test("a retried job's second attempt opens a new run; the first attempt's run stays as it was closed", async () => {
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
