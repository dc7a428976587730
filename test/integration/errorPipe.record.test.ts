import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Pool } from 'pg';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { recordError } from '../../nodes/ErrorPipe/actions/record';
import { fixtureA, fixtureB } from '../helpers/fixtures';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

async function newJob(attempts: number, maxAttempts = 5): Promise<number> {
	const { rows } = await db.pool.query(
		`INSERT INTO ops.jobs (job_type, payload, status, attempts, max_attempts, locked_by, locked_at)
		 VALUES ('telegram_update', '{}', 'running', $1, $2, 'worker-1', now()) RETURNING id`,
		[attempts, maxAttempts],
	);
	return Number(rows[0].id);
}

async function record(item: unknown) {
	const { envelope, jobId, contractVersion } = normalizeErrorItem(item, { source: 'WF99' });
	return { envelope, result: await recordError(db.pool, envelope, jobId, contractVersion) };
}

test('fixture A: ops.errors written, job failed and a job run written', async () => {
	const jobId = await newJob(1);
	const { uuid, item } = fixtureA(jobId);
	const { result } = await record(item);
	assert.deepEqual(result.write_failures, []);
	const { rows: errors } = await db.pool.query('SELECT * FROM ops.errors WHERE id = $1', [result.error_id]);
	assert.equal(errors.length, 1);
	assert.equal(errors[0].correlation_id, uuid);
	assert.equal(errors[0].node, 'Lookup Bot');
	assert.equal(Number(errors[0].job_id), jobId);
	assert.equal(errors[0].contract_version, 1);
	assert.equal(typeof errors[0].details, 'object', 'details is jsonb object, not a string');
	assert.equal(errors[0].details.error_context.table, 'core.bots');
	const { rows: jobs } = await db.pool.query('SELECT status, locked_by, last_error FROM ops.jobs WHERE id = $1', [
		jobId,
	]);
	assert.equal(jobs[0].status, 'failed', 'a 500 db error with a status is not retryable');
	assert.equal(jobs[0].locked_by, null);
	assert.equal(jobs[0].last_error.correlation_id, uuid);
	const { rows: runs } = await db.pool.query('SELECT status, error FROM ops.job_runs WHERE job_id = $1', [jobId]);
	assert.equal(runs.length, 1);
	assert.equal(runs[0].status, 'failed');
	assert.equal(typeof runs[0].error, 'object');
	assert.deepEqual(result.job, {
		executed: true,
		job_id: jobId,
		outcome: 'failed',
		status: 'failed',
		next_run_at: (result.job as { next_run_at: string }).next_run_at,
	});
	assert.equal(errors[0].details.job_outcome, 'failed');
});

test('fixture B: ops.errors written, no job touched', async () => {
	const before = await db.pool.query(
		'SELECT count(*)::int AS runs, (SELECT max(updated_at) FROM ops.jobs) AS touched FROM ops.job_runs',
	);
	const { uuid, item } = fixtureB();
	const { result } = await record(item);
	assert.deepEqual(result.job, { executed: false });
	const { rows } = await db.pool.query(
		'SELECT count(*)::int AS n FROM ops.errors WHERE correlation_id = $1 AND job_id IS NULL',
		[uuid],
	);
	assert.equal(rows[0].n, 1);
	const afterwards = await db.pool.query(
		'SELECT count(*)::int AS runs, (SELECT max(updated_at) FROM ops.jobs) AS touched FROM ops.job_runs',
	);
	assert.deepEqual(afterwards.rows[0], before.rows[0]);
});

test('retryable errors reschedule the job with backoff until attempts run out, then dead-letter it', async () => {
	const jobId = await newJob(2, 3);
	const item = {
		ctx: { job_id: jobId, workflow: 'WF20' },
		error: { message: 'connection lost', kind: 'db', status_code: 503, retryable: true },
	};
	const first = await record(item);
	const { rows } = await db.pool.query(
		`SELECT status, extract(epoch FROM next_run_at - now()) AS delay FROM ops.jobs WHERE id = $1`,
		[jobId],
	);
	assert.equal(rows[0].status, 'queued');
	// attempts = 2 → base 10 s · 2^1 = 20 s, ±20 %
	assert.ok(rows[0].delay > 14 && rows[0].delay <= 24.5, `delay ${rows[0].delay}`);
	assert.equal((first.result.job as { status: string }).status, 'queued');
	// the last attempt (claimed again): only a running job takes the error (a queued one would be a stale error)
	await db.pool.query(
		"UPDATE ops.jobs SET attempts = 3, status = 'running', locked_by = 'worker-1', locked_at = now() WHERE id = $1",
		[jobId],
	);
	await record(item);
	const { rows: dead } = await db.pool.query('SELECT status FROM ops.jobs WHERE id = $1', [jobId]);
	assert.equal(dead[0].status, 'dead');
	const { rows: runs } = await db.pool.query('SELECT status FROM ops.job_runs WHERE job_id = $1 ORDER BY id', [jobId]);
	assert.deepEqual(
		runs.map((r) => r.status),
		['retry', 'dead'],
	);
});

test('a job id that does not exist: error recorded, job path reports no job (stale: nothing to apply it to)', async () => {
	const { result } = await record({ ctx: { job_id: 987654321 }, message: 'x' });
	assert.ok(result.error_id);
	assert.deepEqual(result.job, {
		executed: true,
		job_id: 987654321,
		outcome: 'stale',
		status: null,
		next_run_at: null,
	});
});

test('database down: the envelope still comes back, with the failed writes named', async () => {
	const down = new Pool({
		host: '127.0.0.1',
		port: 1,
		user: 'postgres',
		database: 'postgres',
		connectionTimeoutMillis: 1000,
	});
	down.on('error', () => undefined);
	try {
		const { envelope, jobId, contractVersion } = normalizeErrorItem(fixtureA(5).item, { source: 'WF99' });
		const result = await recordError(down, envelope, jobId, contractVersion);
		assert.equal(result.error_id, null);
		assert.deepEqual(
			result.write_failures.map((f) => f.table),
			['ops.errors', 'ops.jobs'],
		);
		assert.match(result.write_failures[0].message, /ECONNREFUSED/);
	} finally {
		await down.end();
	}
});

test('a job claimed by a worker: its open run is closed with the outcome, no second run row', async () => {
	const jobId = await newJob(1);
	await db.pool.query(
		"INSERT INTO ops.job_runs (job_id, attempt, status, worker) VALUES ($1, 1, 'running', 'worker-1')",
		[jobId],
	);
	const { item } = fixtureA(jobId);
	const { result } = await record(item);
	assert.deepEqual(result.write_failures, []);
	const { rows: runs } = await db.pool.query(
		'SELECT status, worker, finished_at IS NOT NULL AS closed FROM ops.job_runs WHERE job_id = $1',
		[jobId],
	);
	assert.deepEqual(runs, [{ status: 'failed', worker: 'worker-1', closed: true }]);
});
