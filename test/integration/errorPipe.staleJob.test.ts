/**
 * Issue 10 item 2 (seed 002 §1.3, seed 003 ops.jobs): a late error never revives a finished or re-claimed
 * job. The Error Pipe's job path applies only to the attempt that is still open (the job `running` under
 * the claim token in ctx.job_claim_token); otherwise the error is recorded with `job_outcome: "stale"` and
 * the job and its runs are left alone. Real PostgreSQL, real concurrency.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { recordError } from '../../nodes/ErrorPipe/actions/record';
import { claimJobs, finishJob, releaseStale } from '../../nodes/shared/jobs/queue';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

async function enqueue(type: string, n: number): Promise<number[]> {
	const { rows } = await db.pool.query<{ id: string }>(
		`INSERT INTO ops.jobs (job_type, payload) SELECT $1, jsonb_build_object('n', g) FROM generate_series(1, $2) g RETURNING id`,
		[type, n],
	);
	return rows.map((r) => Number(r.id));
}

/** The error item a worker sub-workflow sends WF99 for the job it was given (ctx as WF90 builds it). */
function lateError(jobId: number, token: unknown, message = 'upstream timed out') {
	const ctx: Record<string, unknown> = { correlation_id: randomUUID(), job_id: jobId, workflow: 'WF90' };
	if (token !== undefined) ctx.job_claim_token = token;
	return { ctx, error: { message, kind: 'upstream', status_code: 503, retryable: true } };
}

async function record(item: ReturnType<typeof lateError>) {
	const normalized = normalizeErrorItem(item, { source: 'WF99' });
	const result = await recordError(
		db.pool,
		normalized.envelope,
		normalized.jobId,
		normalized.contractVersion,
		normalized.jobClaimToken,
	);
	return { envelope: normalized.envelope, result };
}

async function jobState(id: number) {
	const { rows } = await db.pool.query('SELECT status, attempts, locked_by, claim_token FROM ops.jobs WHERE id = $1', [
		id,
	]);
	return rows[0];
}

async function runs(id: number) {
	const { rows } = await db.pool.query(
		'SELECT attempt, status, worker FROM ops.job_runs WHERE job_id = $1 ORDER BY id',
		[id],
	);
	return rows;
}

async function errorRow(id: number | null) {
	const { rows } = await db.pool.query('SELECT job_id, details FROM ops.errors WHERE id = $1', [id]);
	return rows[0];
}

test('race 1: a late error after Finish Job succeeded leaves the job succeeded and its runs as they were; the error row says "stale"', async () => {
	const [id] = await enqueue('late-after-success', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'late-after-success', batch_size: 1, worker: 'w1' });
	await finishJob(db.pool, { job_id: id, worker: 'w1', success: true, claim_token: job.claim_token });
	const runsBefore = await runs(id);
	for (const token of [job.claim_token, undefined]) {
		// with the attempt's token, and as an older workflow without one: the job is not running, so stale
		const { envelope, result } = await record(lateError(id, token));
		assert.deepEqual(await jobState(id), { status: 'succeeded', attempts: 1, locked_by: null, claim_token: null });
		assert.deepEqual(await runs(id), runsBefore);
		assert.deepEqual(runsBefore, [{ attempt: 1, status: 'succeeded', worker: 'w1' }]);
		const row = await errorRow(result.error_id);
		assert.equal(Number(row.job_id), id);
		assert.equal(row.details.job_outcome, 'stale');
		assert.equal(envelope.error.details.job_outcome, 'stale');
		assert.deepEqual(result.job, { executed: true, job_id: id, outcome: 'stale', status: null, next_run_at: null });
	}
});

test("race 2: worker A released as stale, B claims again, A's late error arrives → B keeps its lock and finishes; two runs, never a third", async () => {
	const [id] = await enqueue('reclaimed', 1);
	const [a] = await claimJobs(db.pool, { job_type: 'reclaimed', batch_size: 1, worker: 'A' });
	await db.pool.query("UPDATE ops.jobs SET locked_at = now() - interval '1 hour' WHERE id = $1", [id]);
	await releaseStale(db.pool, { older_than_seconds: 600, limit: 10 });
	const [b] = await claimJobs(db.pool, { job_type: 'reclaimed', batch_size: 1, worker: 'B' });
	const { result } = await record(lateError(id, a.claim_token));
	assert.deepEqual(await jobState(id), { status: 'running', attempts: 2, locked_by: 'B', claim_token: b.claim_token });
	assert.notEqual(a.claim_token, b.claim_token);
	assert.equal((await errorRow(result.error_id)).details.job_outcome, 'stale');
	const finished = await finishJob(db.pool, { job_id: id, worker: 'B', success: true, claim_token: b.claim_token });
	assert.equal(finished.status, 'succeeded');
	assert.deepEqual(await runs(id), [
		{ attempt: 1, status: 'retry', worker: 'A' },
		{ attempt: 2, status: 'succeeded', worker: 'B' },
	]);
	assert.deepEqual(await claimJobs(db.pool, { job_type: 'reclaimed', batch_size: 1, worker: 'C' }), []);
});

test("race 2 under load: 200 jobs, A's late errors run concurrently with B's Finish Job — every job ran exactly twice and succeeded", async () => {
	const ids = await enqueue('reclaimed-load', 200);
	const fromA = await claimJobs(db.pool, { job_type: 'reclaimed-load', batch_size: 200, worker: 'A' });
	await db.pool.query("UPDATE ops.jobs SET locked_at = now() - interval '1 hour' WHERE job_type = 'reclaimed-load'");
	assert.equal((await releaseStale(db.pool, { older_than_seconds: 600, limit: 1000 })).length, 200);
	const fromB = await claimJobs(db.pool, { job_type: 'reclaimed-load', batch_size: 200, worker: 'B' });
	assert.equal(fromB.length, 200);
	const tokenA = new Map(fromA.map((j) => [Number(j.id), j.claim_token]));
	// per job, A's late error and B's Finish Job are sent together, in either order (every other job A's first)
	const settled = await Promise.allSettled(
		fromB.flatMap((j, i) => {
			const error = () =>
				record(lateError(Number(j.id), tokenA.get(Number(j.id)))).then(
					(r) => (r.result.job as { outcome?: string }).outcome,
				);
			const finish = () =>
				finishJob(db.pool, { job_id: j.id, worker: 'B', success: true, claim_token: j.claim_token }).then(
					(f) => `finish:${String(f.status)}`,
				);
			return i % 2 === 0 ? [error(), finish()] : [finish(), error()];
		}),
	);
	const { rows } = await db.pool.query(
		`SELECT j.status, j.attempts, count(r.id)::int AS runs, string_agg(r.status, ',' ORDER BY r.id) AS run_statuses
		 FROM ops.jobs j JOIN ops.job_runs r ON r.job_id = j.id WHERE j.id = ANY($1::bigint[]) GROUP BY j.id`,
		[ids],
	);
	assert.equal(rows.length, 200);
	const states = new Map<string, number>();
	for (const row of rows) states.set(JSON.stringify(row), (states.get(JSON.stringify(row)) ?? 0) + 1);
	assert.deepEqual(
		[...states],
		[[JSON.stringify({ status: 'succeeded', attempts: 2, runs: 2, run_statuses: 'retry,succeeded' }), 200]],
	);
	const outcomes = settled.map((s) =>
		s.status === 'fulfilled' ? s.value : `rejected: ${(s.reason as Error).message.replace(/\d+/g, 'N')}`,
	);
	assert.deepEqual([...new Set(outcomes)].sort(), ['finish:succeeded', 'stale']);
	const { rows: errors } = await db.pool.query(
		"SELECT details->>'job_outcome' AS outcome, count(*)::int AS n FROM ops.errors WHERE job_id = ANY($1::bigint[]) GROUP BY 1",
		[ids],
	);
	assert.deepEqual(errors, [{ outcome: 'stale', n: 200 }]);
	const { rows: order } = await db.pool.query(
		'SELECT count(*) FILTER (WHERE e.created_at < j.finished_at)::int AS error_first FROM ops.errors e JOIN ops.jobs j ON j.id = e.job_id WHERE j.id = ANY($1::bigint[])',
		[ids],
	);
	console.log(`A's error started before B's Finish Job for ${order[0].error_first} of 200 jobs`);
	assert.deepEqual(await claimJobs(db.pool, { job_type: 'reclaimed-load', batch_size: 200, worker: 'C' }), []);
}, 120_000);

test('the open attempt: the error with its token retries the job, closes its run and clears the token; job_outcome is the new status', async () => {
	const [id] = await enqueue('open-attempt', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'open-attempt', batch_size: 1, worker: 'w1' });
	const { envelope, result } = await record(lateError(id, job.claim_token));
	assert.deepEqual(await jobState(id), { status: 'queued', attempts: 1, locked_by: null, claim_token: null });
	assert.deepEqual(await runs(id), [{ attempt: 1, status: 'retry', worker: 'w1' }]);
	assert.equal((await errorRow(result.error_id)).details.job_outcome, 'queued');
	assert.equal(envelope.error.details.job_outcome, 'queued');
	assert.equal((result.job as { outcome: string }).outcome, 'queued');
	const { rows } = await db.pool.query('SELECT last_error FROM ops.jobs WHERE id = $1', [id]);
	assert.equal(rows[0].last_error.error_id, result.error_id, 'the job names its ops.errors row');
	// the same error again (a duplicate delivery): the attempt is over, stale
	const again = await record(lateError(id, job.claim_token));
	assert.equal((again.result.job as { outcome: string }).outcome, 'stale');
	assert.equal((await jobState(id)).status, 'queued');
});

test('a ctx without a token (older workflows) falls back to "the job is running"; an invalid token never matches', async () => {
	const [id] = await enqueue('no-token', 1);
	await claimJobs(db.pool, { job_type: 'no-token', batch_size: 1, worker: 'w1' });
	for (const bad of ['not-a-uuid', randomUUID(), 42, { token: 1 }]) {
		const { result } = await record(lateError(id, bad));
		assert.equal((result.job as { outcome: string }).outcome, 'stale', `token ${JSON.stringify(bad)}`);
		assert.equal((await jobState(id)).status, 'running');
	}
	const { result } = await record(lateError(id, undefined));
	assert.equal((result.job as { outcome: string }).outcome, 'queued');
	assert.equal((await errorRow(result.error_id)).details.job_outcome, 'queued');
});

test('one write failing does not take the other with it: the job is still retried when ops.errors refuses, the row still written when ops.jobs refuses', async () => {
	await db.pool.query(`
		CREATE FUNCTION public.refuse_error_row() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
		  IF NEW.message = 'refused by ops.errors' THEN RAISE EXCEPTION 'injected: ops.errors refuses'; END IF;
		  RETURN NEW;
		END $$;
		CREATE FUNCTION public.refuse_job_update() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
		  IF NEW.last_error->>'message' = 'refused by ops.jobs' THEN RAISE EXCEPTION 'injected: ops.jobs refuses'; END IF;
		  RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_errors BEFORE INSERT ON ops.errors FOR EACH ROW EXECUTE FUNCTION public.refuse_error_row();
		CREATE TRIGGER refuse_jobs BEFORE UPDATE ON ops.jobs FOR EACH ROW EXECUTE FUNCTION public.refuse_job_update();`);
	try {
		const [first, second] = await enqueue('half-written', 2);
		const claimed = await claimJobs(db.pool, { job_type: 'half-written', batch_size: 2, worker: 'w1' });
		const token = new Map(claimed.map((j) => [Number(j.id), j.claim_token]));

		const noRow = await record(lateError(first, token.get(first), 'refused by ops.errors'));
		assert.deepEqual(
			noRow.result.write_failures.map((f) => f.table),
			['ops.errors'],
		);
		assert.equal(noRow.result.error_id, null);
		assert.equal((noRow.result.job as { outcome: string }).outcome, 'queued');
		assert.equal((await jobState(first)).status, 'queued');
		assert.deepEqual(await runs(first), [{ attempt: 1, status: 'retry', worker: 'w1' }]);

		const noJob = await record(lateError(second, token.get(second), 'refused by ops.jobs'));
		assert.deepEqual(
			noJob.result.write_failures.map((f) => f.table),
			['ops.jobs'],
		);
		assert.match(noJob.result.write_failures[0].message, /injected: ops.jobs refuses/);
		assert.equal((await errorRow(noJob.result.error_id)).details.job_outcome, 'write_failed');
		assert.equal(noJob.envelope.error.details.job_outcome, 'write_failed');
		assert.deepEqual(await jobState(second), {
			status: 'running',
			attempts: 1,
			locked_by: 'w1',
			claim_token: token.get(second),
		});
	} finally {
		await db.pool.query(
			'DROP TRIGGER refuse_errors ON ops.errors; DROP TRIGGER refuse_jobs ON ops.jobs; DROP FUNCTION public.refuse_error_row(); DROP FUNCTION public.refuse_job_update()',
		);
	}
});

test("race 2 with a large ctx: A's token is read from the raw ctx, not from its budget-cut copy — B keeps the job", async () => {
	const [id] = await enqueue('reclaimed-large-ctx', 1);
	const [a] = await claimJobs(db.pool, { job_type: 'reclaimed-large-ctx', batch_size: 1, worker: 'A' });
	await db.pool.query("UPDATE ops.jobs SET locked_at = now() - interval '1 hour' WHERE id = $1", [id]);
	await releaseStale(db.pool, { older_than_seconds: 600, limit: 10 });
	const [b] = await claimJobs(db.pool, { job_type: 'reclaimed-large-ctx', batch_size: 1, worker: 'B' });
	// 20 × 16,000 characters before job_id and the token: the details budget is spent before the copy reaches them
	const payload = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}`, 'x'.repeat(16_000)]));
	const item = {
		ctx: { correlation_id: randomUUID(), payload, job_id: id, job_claim_token: a.claim_token },
		error: { message: 'late', kind: 'upstream', retryable: true },
	};
	const normalized = normalizeErrorItem(item, { source: 'WF99' });
	assert.equal(normalized.envelope.error.details.truncated, true, 'the ctx copy was cut');
	assert.equal(normalized.jobClaimToken, a.claim_token);
	const result = await recordError(
		db.pool,
		normalized.envelope,
		normalized.jobId,
		normalized.contractVersion,
		normalized.jobClaimToken,
	);
	assert.equal((result.job as { outcome: string }).outcome, 'stale');
	assert.deepEqual(await jobState(id), { status: 'running', attempts: 2, locked_by: 'B', claim_token: b.claim_token });
});

test('a job_claim_token key whose value is not a UUID, or cannot be read, is stale — never the tokenless fallback', async () => {
	const [id] = await enqueue('bad-token-key', 1);
	const [job] = await claimJobs(db.pool, { job_type: 'bad-token-key', batch_size: 1, worker: 'w1' });
	const unreadable = { correlation_id: randomUUID(), job_id: id, workflow: 'WF90' };
	Object.defineProperty(unreadable, 'job_claim_token', {
		enumerable: true,
		get: () => {
			throw new Error('no');
		},
	});
	const items: Array<[string, unknown]> = [
		['""', lateError(id, '')],
		['a number', lateError(id, 7)],
		['an array', lateError(id, [job.claim_token])],
		['a getter that throws', { ctx: unreadable, error: { message: 'x', kind: 'upstream', retryable: true } }],
	];
	for (const [label, item] of items) {
		const normalized = normalizeErrorItem(item, { source: 'WF99' });
		assert.equal(normalized.jobId, id, label);
		assert.notEqual(normalized.jobClaimToken, null, label);
		const result = await recordError(
			db.pool,
			normalized.envelope,
			normalized.jobId,
			normalized.contractVersion,
			normalized.jobClaimToken,
		);
		assert.equal((result.job as { outcome: string }).outcome, 'stale', label);
		assert.deepEqual(
			await jobState(id),
			{ status: 'running', attempts: 1, locked_by: 'w1', claim_token: job.claim_token },
			label,
		);
	}
	// null is "no token" (ctx contract: nullable), as an older workflow sends it
	assert.equal(normalizeErrorItem(lateError(id, null), { source: 'WF99' }).jobClaimToken, null);
});
