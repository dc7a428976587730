/**
 * Issue 26 review: the Error Pipe's job path committed but its ops.errors row could not be written (the
 * row insert failed on its own); the same envelope sent again must not answer `replayed` with an id that
 * names no row. It writes the missing row under that id (every error path ends in an ops.errors row).
 * Fault injection on a scratch database: a trigger that fails ops.errors inserts of one message (57014).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { recordError } from '../../nodes/ErrorPipe/actions/record';
import { claimJobs } from '../../nodes/shared/jobs/queue';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
	await db.pool.query(`
		CREATE TABLE public.failing_messages (message text PRIMARY KEY);
		CREATE FUNCTION public.fail_error_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
		  IF EXISTS (SELECT 1 FROM public.failing_messages WHERE message = NEW.message) THEN
		    RAISE EXCEPTION 'injected failure' USING ERRCODE = '57014';
		  END IF;
		  RETURN NEW;
		END $$;
		CREATE TRIGGER fail_error_insert BEFORE INSERT ON ops.errors FOR EACH ROW EXECUTE FUNCTION public.fail_error_insert();`);
});
afterAll(async () => {
	await db?.drop();
});

async function claimedJob(type: string) {
	await db.pool.query(`INSERT INTO ops.jobs (job_type, payload) VALUES ($1, '{}')`, [type]);
	const [job] = await claimJobs(db.pool, { job_type: type, batch_size: 1, worker: 'w1' });
	return { id: Number(job.id), token: job.claim_token as string };
}

function recorder(ctx: Record<string, unknown>, message: string) {
	return () => {
		const n = normalizeErrorItem(
			{ ctx, error: { message, kind: 'upstream', status_code: 503, retryable: true } },
			{ source: 'WF99' },
		);
		return recordError(db.pool, n.envelope, n.jobId, n.contractVersion, n.jobClaimToken);
	};
}

test('the row insert failed after the job path committed: the repeated envelope writes the missing row under the id the job names', async () => {
	const { id, token } = await claimedJob('replay-row');
	const message = `row lost ${randomUUID()}`;
	const record = recorder(
		{ correlation_id: randomUUID(), job_id: id, job_claim_token: token, workflow: 'WF90' },
		message,
	);
	await db.pool.query('INSERT INTO public.failing_messages VALUES ($1)', [message]);
	const first = await record();
	assert.deepEqual(
		[
			first.error_id,
			first.write_failures.map((f) => [f.table, f.sqlstate]),
			(first.job as { outcome: string }).outcome,
		],
		[null, [['ops.errors', '57014']], 'queued'],
		'first call: the job path applied, the row not written',
	);
	const { rows: jobBefore } = await db.pool.query('SELECT last_error FROM ops.jobs WHERE id = $1', [id]);
	const named = Number(jobBefore[0].last_error.error_id);
	assert.equal((await db.pool.query('SELECT 1 FROM ops.errors WHERE id = $1', [named])).rowCount, 0);

	await db.pool.query('DELETE FROM public.failing_messages');
	const second = await record();
	assert.deepEqual(second.write_failures, []);
	assert.equal(second.error_id, named, 'the id the job and its run name');
	assert.deepEqual(
		[(second.job as { outcome: string }).outcome, (second.job as { replayed?: boolean }).replayed],
		['queued', true],
	);
	const { rows: errors } = await db.pool.query(
		`SELECT id, details->>'job_outcome' AS job_outcome FROM ops.errors WHERE message = $1`,
		[message],
	);
	assert.deepEqual(
		errors.map((r) => [Number(r.id), r.job_outcome]),
		[[named, 'queued']],
		'exactly one row, under the id the job names',
	);
	// a third call: the row exists now, nothing more written, the same answer
	const third = await record();
	assert.deepEqual([third.error_id, (third.job as { replayed?: boolean }).replayed], [named, true]);
	assert.equal(
		(await db.pool.query('SELECT count(*)::int AS n FROM ops.errors WHERE message = $1', [message])).rows[0].n,
		1,
	);
	const { rows: job } = await db.pool.query('SELECT status, attempts FROM ops.jobs WHERE id = $1', [id]);
	assert.deepEqual([job[0].status, job[0].attempts], ['queued', 1], 'the job path applied once');
});

test('the repeated envelope whose own statement fails again (row insert still failing for it): its fallback also writes under the prior id once the insert succeeds', async () => {
	const { id, token } = await claimedJob('replay-row-fallback');
	const message = `row lost twice ${randomUUID()}`;
	const record = recorder(
		{ correlation_id: randomUUID(), job_id: id, job_claim_token: token, workflow: 'WF90' },
		message,
	);
	await db.pool.query('INSERT INTO public.failing_messages VALUES ($1)', [message]);
	await record();
	const again = await record();
	assert.equal(again.error_id, null, 'still failing: no row, the failure named');
	assert.deepEqual(
		again.write_failures.map((f) => f.table),
		['ops.errors'],
	);
	assert.equal((again.job as { replayed?: boolean }).replayed, true, 'the fallback recognised the replay');
	const named = Number(
		(await db.pool.query('SELECT last_error FROM ops.jobs WHERE id = $1', [id])).rows[0].last_error.error_id,
	);
	await db.pool.query('DELETE FROM public.failing_messages');
	const last = await record();
	assert.deepEqual([last.error_id, last.write_failures], [named, []]);
	const { rows } = await db.pool.query('SELECT id FROM ops.errors WHERE message = $1', [message]);
	assert.deepEqual(
		rows.map((r) => Number(r.id)),
		[named],
	);
});

test('a duplicate envelope concurrent with its original (both wait for the job lock): one row, the duplicate answered as a replay of it', async () => {
	const { id, token } = await claimedJob('replay-concurrent');
	const message = `concurrent ${randomUUID()}`;
	const record = recorder(
		{ correlation_id: randomUUID(), job_id: id, job_claim_token: token, workflow: 'WF90' },
		message,
	);
	// hold the job's row lock so that both calls take their snapshot, then queue on the lock
	const holder = await db.pool.connect();
	let calls: Array<Awaited<ReturnType<typeof record>>>;
	try {
		await holder.query('BEGIN');
		await holder.query('SELECT id FROM ops.jobs WHERE id = $1 FOR UPDATE', [id]);
		const pending = Promise.all([record(), record()]);
		for (let i = 0; ; i += 1) {
			const { rows } = await db.pool.query(
				`SELECT count(*)::int AS n FROM pg_stat_activity
				 WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%WITH error_json AS%'`,
			);
			if (rows[0].n >= 2) break;
			assert.ok(i < 200, 'both calls wait for the job lock');
			await new Promise((resolve) => setTimeout(resolve, 25));
		}
		await holder.query('COMMIT');
		calls = await pending;
	} finally {
		holder.release();
	}
	const { rows: errors } = await db.pool.query('SELECT id FROM ops.errors WHERE message = $1', [message]);
	assert.equal(errors.length, 1, 'one row, no second (stale) row');
	assert.deepEqual(
		calls.map((c) => c.error_id),
		[Number(errors[0].id), Number(errors[0].id)],
	);
	assert.deepEqual(
		calls
			.map((c) => [(c.job as { outcome: string }).outcome, (c.job as { replayed?: boolean }).replayed ?? false])
			.sort(),
		[
			['queued', false],
			['queued', true],
		],
	);
	const { rows: job } = await db.pool.query('SELECT status, attempts FROM ops.jobs WHERE id = $1', [id]);
	assert.deepEqual([job[0].status, job[0].attempts], ['queued', 1]);
});
