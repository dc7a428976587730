/** The ops.jobs queue on real PostgreSQL: Claim Jobs / Finish Job / Release Stale (pg-boss semantics). */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { claimJobs, finishJob, releaseStale } from '../../nodes/shared/jobs/queue';
import { ContractError } from '../../nodes/shared/errors';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

async function enqueue(type: string, n: number, maxAttempts = 5): Promise<number[]> {
	const { rows } = await db.pool.query<{ id: string }>(
		`INSERT INTO ops.jobs (job_type, payload, max_attempts) SELECT $1, jsonb_build_object('n', g), $3 FROM generate_series(1, $2) g RETURNING id`,
		[type, n, maxAttempts],
	);
	return rows.map((r) => Number(r.id));
}

test('Claim Jobs: attempts counted, lock set, a run id reserved (its job_runs row written when the attempt ends); nothing due → nothing claimed', async () => {
	const [id] = await enqueue('claim', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'claim', batch_size: 10, worker: 'w1' });
	assert.deepEqual([Number(job.id), job.status, job.attempts, job.locked_by], [id, 'running', 1, 'w1']);
	assert.ok(job.run_id);
	assert.deepEqual(await claimJobs(db.pool, { job_type: 'claim', batch_size: 10, worker: 'w2' }), []);
	const { rows } = await db.pool.query('SELECT run_id::text FROM ops.jobs WHERE id = $1', [id]);
	assert.equal(rows[0].run_id, String(job.run_id));
	const runs = () =>
		db.pool.query('SELECT id::text, attempt, status, worker FROM ops.job_runs WHERE job_id = $1', [id]);
	assert.deepEqual((await runs()).rows, [], 'no run row while the attempt runs (migration 026)');
	await finishJob(db.pool, { job_id: id, worker: 'w1', success: true });
	assert.deepEqual((await runs()).rows, [{ id: String(job.run_id), attempt: 1, status: 'succeeded', worker: 'w1' }]);
});

test('Finish Job: retry with backoff 10 s ±20 %, then dead after max_attempts; not retryable → failed; only the lock holder', async () => {
	const [id] = await enqueue('finish', 1, 2);
	await claimJobs(db.pool, { job_type: 'finish', batch_size: 1, worker: 'w1' });
	await assert.rejects(
		finishJob(db.pool, { job_id: id, worker: 'intruder', success: true }),
		(e: ContractError) => e.statusCode === 409 && e.details.code === 'NOT_LOCKED_BY_WORKER',
	);
	const retry = await finishJob(db.pool, {
		job_id: id,
		worker: 'w1',
		success: false,
		retryable: true,
		error: { message: 'timeout' },
	});
	assert.equal(retry.status, 'queued');
	const delay = (new Date(retry.next_run_at as string).getTime() - Date.now()) / 1000;
	assert.ok(delay > 7 && delay < 12.5, `first retry after ${delay}s`);
	await db.pool.query('UPDATE ops.jobs SET next_run_at = now() WHERE id = $1', [id]);
	await claimJobs(db.pool, { job_type: 'finish', batch_size: 1, worker: 'w2' });
	const dead = await finishJob(db.pool, {
		job_id: id,
		worker: 'w2',
		success: false,
		retryable: true,
		error: { message: 'timeout again' },
	});
	assert.equal(dead.status, 'dead');
	const { rows } = await db.pool.query(
		"SELECT attempt, status, error->>'message' AS message FROM ops.job_runs WHERE job_id = $1 ORDER BY id",
		[id],
	);
	assert.deepEqual(rows, [
		{ attempt: 1, status: 'retry', message: 'timeout' },
		{ attempt: 2, status: 'dead', message: 'timeout again' },
	]);
	const [other] = await enqueue('finish-fatal', 1);
	await claimJobs(db.pool, { job_type: 'finish-fatal', batch_size: 1, worker: 'w1' });
	assert.equal(
		(
			await finishJob(db.pool, {
				job_id: other,
				worker: 'w1',
				success: false,
				retryable: false,
				error: { message: 'bad payload' },
			})
		).status,
		'failed',
	);
});

test('Claim Jobs over several types (WF90): only the listed types are taken', async () => {
	const [a] = await enqueue('multi-a', 1);
	const [b] = await enqueue('multi-b', 1);
	await enqueue('multi-c', 1);
	const jobs = await claimJobs(db.pool, { job_type: 'multi-a, multi-b', batch_size: 10, worker: 'w1' });
	assert.deepEqual(
		jobs.map((j) => Number(j.id)).sort((x, y) => x - y),
		[a, b],
	);
	await assert.rejects(
		claimJobs(db.pool, { job_type: ' , ', batch_size: 1, worker: 'w1' }),
		(e: ContractError) => e.statusCode === 422,
	);
});

test('Finish Job with accept_finished: a job the Error Pipe already re-queued comes back as it is, not 409', async () => {
	const [id] = await enqueue('accept', 1);
	await claimJobs(db.pool, { job_type: 'accept', batch_size: 1, worker: 'w1' });
	await db.pool.query("UPDATE ops.jobs SET status = 'queued', locked_by = NULL, locked_at = NULL WHERE id = $1", [id]);
	await assert.rejects(
		finishJob(db.pool, { job_id: id, worker: 'w1', success: true }),
		(e: ContractError) => e.statusCode === 409,
	);
	const current = await finishJob(db.pool, { job_id: id, worker: 'w1', success: true, accept_finished: true });
	assert.deepEqual([current.status, current.already_finished], ['queued', true]);
	await assert.rejects(
		finishJob(db.pool, { job_id: 987654321, worker: 'w1', success: true, accept_finished: true }),
		(e: ContractError) => e.statusCode === 404,
	);
});

test('Release Stale: a job locked too long goes back to the queue and its run is closed as retry', async () => {
	const [id] = await enqueue('stale', 1);
	await claimJobs(db.pool, { job_type: 'stale', batch_size: 1, worker: 'dead-worker' });
	await db.pool.query("UPDATE ops.jobs SET locked_at = now() - interval '1 hour' WHERE id = $1", [id]);
	const released = await releaseStale(db.pool, { older_than_seconds: 600, limit: 100 });
	assert.deepEqual(
		released.map((r) => [Number(r.id), r.status, Number(r.runs_closed)]),
		[[id, 'queued', 1]],
	);
	await assert.rejects(
		finishJob(db.pool, { job_id: id, worker: 'dead-worker', success: true }),
		(e: ContractError) => e.statusCode === 409,
	);
	const [again] = await claimJobs(db.pool, { job_type: 'stale', batch_size: 1, worker: 'w2' });
	assert.equal(again.attempts, 2);
});

test('claim token: a fresh one per claim, cleared when the attempt ends; Finish Job with a token finishes only that attempt', async () => {
	const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
	const token = async (id: number) =>
		(await db.pool.query('SELECT claim_token FROM ops.jobs WHERE id = $1', [id])).rows[0].claim_token;
	const [id] = await enqueue('token', 1);
	const [first] = await claimJobs(db.pool, { job_type: 'token', batch_size: 1, worker: 'w' });
	assert.match(String(first.claim_token), UUID);
	// released as stale: token cleared; the same worker name claims it again with a new token
	await db.pool.query("UPDATE ops.jobs SET locked_at = now() - interval '1 hour' WHERE id = $1", [id]);
	await releaseStale(db.pool, { older_than_seconds: 600, limit: 10 });
	assert.equal(await token(id), null);
	const [second] = await claimJobs(db.pool, { job_type: 'token', batch_size: 1, worker: 'w' });
	assert.match(String(second.claim_token), UUID);
	assert.notEqual(second.claim_token, first.claim_token);
	// the first attempt's late Finish Job: same worker name, old token → 409, or the job as it is
	await assert.rejects(
		finishJob(db.pool, {
			job_id: id,
			worker: 'w',
			success: false,
			error: { message: 'late' },
			claim_token: first.claim_token,
		}),
		(e: ContractError) => {
			assert.deepEqual(
				[e.statusCode, e.details.code, e.details.claim_token_checked],
				[409, 'NOT_LOCKED_BY_WORKER', true],
			);
			assert.ok(
				!JSON.stringify(e.details).includes(String(first.claim_token)) &&
					!e.message.includes(String(first.claim_token)),
				'the token is not echoed',
			);
			return true;
		},
	);
	const asItIs = await finishJob(db.pool, {
		job_id: id,
		worker: 'w',
		success: true,
		accept_finished: true,
		claim_token: first.claim_token,
	});
	assert.deepEqual([asItIs.status, asItIs.already_finished], ['running', true]);
	await assert.rejects(
		finishJob(db.pool, { job_id: id, worker: 'w', success: true, claim_token: 'not-a-uuid' }),
		(e: ContractError) => e.statusCode === 422 && e.details.field === 'claim_token',
	);
	const done = await finishJob(db.pool, {
		job_id: id,
		worker: 'w',
		success: true,
		claim_token: String(second.claim_token).toUpperCase(),
	});
	assert.equal(done.status, 'succeeded');
	assert.equal(await token(id), null);
	const { rows } = await db.pool.query('SELECT attempt, status FROM ops.job_runs WHERE job_id = $1 ORDER BY id', [id]);
	assert.deepEqual(rows, [
		{ attempt: 1, status: 'retry' },
		{ attempt: 2, status: 'succeeded' },
	]);
});

test('10 workers claiming 5,000 jobs in batches of 10: no job run twice, none lost', async () => {
	await enqueue('load', 5000);
	const seen = new Map<number, number>();
	const worker = async (w: number) => {
		for (;;) {
			const jobs = await claimJobs(db.pool, { job_type: 'load', batch_size: 10, worker: `w${w}` });
			if (jobs.length === 0) return;
			for (const job of jobs) {
				seen.set(Number(job.id), (seen.get(Number(job.id)) ?? 0) + 1);
				await finishJob(db.pool, { job_id: job.id, worker: `w${w}`, success: true });
			}
		}
	};
	await Promise.all(Array.from({ length: 10 }, (_, w) => worker(w)));
	assert.equal(seen.size, 5000);
	assert.ok([...seen.values()].every((n) => n === 1));
	const { rows } = await db.pool.query(
		"SELECT j.status, count(*)::int AS jobs, count(r.id)::int AS runs FROM ops.jobs j LEFT JOIN ops.job_runs r ON r.job_id = j.id WHERE j.job_type = 'load' GROUP BY j.status",
	);
	assert.deepEqual(rows, [{ status: 'succeeded', jobs: 5000, runs: 5000 }]);
}, 300_000);
