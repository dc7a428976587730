/**
 * Issue 26 item 1: Finish Job and Enqueue are safe to retry after a lost reply. A TCP proxy between the
 * operation and the real PostgreSQL forwards the state-changing statement and cuts the connection as soon as
 * the server starts to answer (the statement committed, the caller gets 503 retryable); the caller then
 * retries with the same input, as n8n's Retry On Fail or the workflow would. Asserted: the end state equals
 * one call, the retry is answered as the first call (`replayed: true` for Finish Job, the same id for
 * Enqueue), never a 409 that strands the job, and no work runs twice (attempts, runs and jobs counted).
 * A late actor (its claim released and claimed again by another worker) still changes nothing.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { Pool } from 'pg';
import { ContractError } from '../../nodes/shared/errors';
import { enqueueJobs, type WantedJob } from '../../nodes/shared/jobs/enqueue';
import { claimJobs, finishJob, finishJobs, releaseStale } from '../../nodes/shared/jobs/queue';
import { FINISH_JOBS_NAMED } from '../../nodes/shared/statements/jobs';
import type { TestDatabase } from '../helpers/db';
import { closeProxiedDatabase, setupProxiedDatabase } from '../helpers/proxiedDatabase';
import type { TcpProxy } from '../helpers/tcpProxy';

let db: TestDatabase;
let proxy: TcpProxy;
let proxied: Pool;
let tenant: string;
beforeAll(async () => {
	({ db, proxy, proxied } = await setupProxiedDatabase());
	tenant = (await db.pool.query("INSERT INTO core.tenants (name) VALUES ('lost-reply') RETURNING tenant_id")).rows[0]
		.tenant_id;
});
afterAll(() => closeProxiedDatabase({ db, proxy, proxied }));

/**
 * A marker only Finish Job's requests hold: the name of its prepared statement (in the Parse of its first run on a
 * connection, and in every Bind: the text is sent once per connection).
 */
const FINISH_MARKER = FINISH_JOBS_NAMED.name;
/** A marker only ENQUEUE_JOBS' text holds. */
const ENQUEUE_MARKER = 'jsonb_to_recordset($3::jsonb)';

/** `call` with the reply of its first request containing `marker` dropped: it must fail with 503 retryable. */
async function withLostReply<T>(marker: string, call: () => Promise<T>): Promise<void> {
	const before = proxy.dropped;
	proxy.dropReplyTo(marker);
	await assert.rejects(call(), (e: ContractError) => e.statusCode === 503 && e.retryable === true);
	assert.equal(proxy.dropped, before + 1, 'the reply was dropped');
}

async function queued(type: string, n: number, maxAttempts = 5): Promise<number[]> {
	const { rows } = await db.pool.query<{ id: string }>(
		`INSERT INTO ops.jobs (job_type, payload, max_attempts) SELECT $1, '{}', $3 FROM generate_series(1, $2) RETURNING id`,
		[type, n, maxAttempts],
	);
	return rows.map((r) => Number(r.id));
}

async function job(id: number) {
	return (
		await db.pool.query(
			'SELECT status, attempts, locked_by, claim_token, last_error, finished_at FROM ops.jobs WHERE id = $1',
			[id],
		)
	).rows[0];
}

async function runs(id: number) {
	return (
		await db.pool.query(
			'SELECT id, attempt, status, worker, error, finish_key FROM ops.job_runs WHERE job_id = $1 ORDER BY id',
			[id],
		)
	).rows;
}

test('Finish Job (success): reply lost after COMMIT; the retry with the same token is answered replayed with the outcome (not 409); one run, one attempt, the job never claimable again', async () => {
	const [id] = await queued('lr-finish-ok', 1);
	const [claimed] = await claimJobs(db.pool, { job_type: 'lr-finish-ok', batch_size: 1, worker: 'w1' });
	const token = claimed.claim_token as string;
	const input = { job_id: id, worker: 'w1', claim_token: token, success: true };
	await withLostReply(FINISH_MARKER, () => finishJob(proxied, input));
	const committed = await job(id);
	assert.deepEqual([committed.status, committed.claim_token], ['succeeded', null], 'the first call committed');
	const retry = await finishJob(proxied, input);
	assert.deepEqual(
		{ ...retry, next_run_at: undefined },
		{
			id: String(id),
			status: 'succeeded',
			attempts: 1,
			max_attempts: 5,
			next_run_at: undefined,
			run_id: String(claimed.run_id),
			replayed: true,
		},
	);
	assert.equal('already_finished' in retry, false);
	assert.equal('token' in retry, false, 'the token is not echoed');
	const after = await job(id);
	assert.deepEqual(
		[after.status, after.attempts, after.finished_at?.getTime()],
		['succeeded', 1, committed.finished_at.getTime()],
	);
	const closed = await runs(id);
	assert.equal(closed.length, 1, 'one attempt');
	assert.equal(closed[0].status, 'succeeded');
	assert.ok(!JSON.stringify(closed).includes(token), 'the run keeps a digest, not the token');
	// nothing to claim: the work does not run again
	assert.deepEqual(await claimJobs(db.pool, { job_type: 'lr-finish-ok', batch_size: 10, worker: 'w2' }), []);
	// the same token with another outcome is not this call's replay
	await assert.rejects(
		finishJob(db.pool, { ...input, success: false, error: { message: 'late' } }),
		(e: ContractError) => e.statusCode === 409 && e.details.code === 'NOT_LOCKED_BY_WORKER',
	);
});

test('Finish Job (failure, retryable): the retry is replayed as queued; the job is claimed again once, by the next worker, and the late replay takes nothing from it', async () => {
	const [id] = await queued('lr-finish-fail', 1);
	const [claimed] = await claimJobs(db.pool, { job_type: 'lr-finish-fail', batch_size: 1, worker: 'w1' });
	const input = {
		job_id: id,
		worker: 'w1',
		claim_token: claimed.claim_token,
		success: false,
		retryable: true,
		error: { message: 'upstream 503', kind: 'upstream' },
	};
	await withLostReply(FINISH_MARKER, () => finishJob(proxied, input));
	const first = await job(id);
	assert.equal(first.status, 'queued');
	const retry = await finishJob(proxied, input);
	assert.deepEqual([retry.status, retry.attempts, retry.replayed], ['queued', 1, true]);
	assert.deepEqual(await job(id), first, 'the retry wrote nothing (no second backoff, no second attempt)');
	// due now: exactly one claim; the late retry (still replayed) leaves the new attempt alone
	await db.pool.query('UPDATE ops.jobs SET next_run_at = now() WHERE id = $1', [id]);
	const [again] = await claimJobs(db.pool, { job_type: 'lr-finish-fail', batch_size: 10, worker: 'w2' });
	assert.equal(Number(again.id), id);
	const late = await finishJob(proxied, input);
	assert.deepEqual([late.status, late.replayed], ['queued', true], 'the outcome its finish set');
	const current = await job(id);
	assert.deepEqual(
		[current.status, current.locked_by, current.claim_token, current.attempts],
		['running', 'w2', again.claim_token, 2],
	);
	assert.deepEqual(
		(await runs(id)).map((r) => [r.attempt, r.status]),
		[[1, 'retry']],
		'attempt 2 is running: its run is written when it ends (migration 026)',
	);
	assert.notEqual(Number(again.run_id), Number((await runs(id))[0].id), 'attempt 2 has a run id of its own');
});

test('Finish Job: a late actor (claim released by Release Stale, claimed again by another worker) is refused (409), or answered already_finished, never replayed; the new claim is kept', async () => {
	const [id] = await queued('lr-finish-late', 1);
	const [stale] = await claimJobs(db.pool, { job_type: 'lr-finish-late', batch_size: 1, worker: 'dead' });
	await db.pool.query("UPDATE ops.jobs SET locked_at = now() - interval '1 hour' WHERE id = $1", [id]);
	assert.deepEqual(
		(await releaseStale(db.pool, { older_than_seconds: 60, limit: 10_000 })).filter((r) => Number(r.id) === id).length,
		1,
	);
	const [fresh] = await claimJobs(db.pool, { job_type: 'lr-finish-late', batch_size: 1, worker: 'alive' });
	const late = { job_id: id, worker: 'dead', claim_token: stale.claim_token, success: true };
	await assert.rejects(
		finishJob(proxied, late),
		(e: ContractError) => e.statusCode === 409 && e.details.code === 'NOT_LOCKED_BY_WORKER',
	);
	const accepted = await finishJob(proxied, { ...late, accept_finished: true });
	assert.deepEqual([accepted.status, accepted.already_finished, accepted.replayed], ['running', true, undefined]);
	const current = await job(id);
	assert.deepEqual([current.status, current.locked_by, current.claim_token], ['running', 'alive', fresh.claim_token]);
	// the new worker's finish, lost and retried, is its own replay
	const own = { job_id: id, worker: 'alive', claim_token: fresh.claim_token, success: true };
	await withLostReply(FINISH_MARKER, () => finishJob(proxied, own));
	assert.deepEqual([(await finishJob(proxied, own)).replayed, (await job(id)).status], [true, 'succeeded']);
	// and the dead worker is still not replayed (its run was closed by Release Stale)
	await assert.rejects(
		finishJob(proxied, late),
		(e: ContractError) => e.statusCode === 409 && e.details.code === 'NOT_LOCKED_BY_WORKER',
	);
});

test("Finish Job (WF90's batch of one execution): the batch's reply lost; the retried batch is replayed item by item (done, queued, failed), nothing applied twice", async () => {
	const ids = await queued('lr-finish-batch', 4, 1);
	const claimed = await claimJobs(db.pool, { job_type: 'lr-finish-batch', batch_size: 4, worker: 'w1' });
	const token = new Map(claimed.map((c) => [Number(c.id), c.claim_token]));
	const inputs = [
		{ job_id: ids[0], worker: 'w1', claim_token: token.get(ids[0]), success: true },
		{ job_id: ids[1], worker: 'w1', claim_token: token.get(ids[1]), success: false, retryable: true, error: 'text' },
		{ job_id: ids[2], worker: 'w1', claim_token: token.get(ids[2]), success: false, retryable: false, error: { m: 1 } },
		// no token (a direct caller): no replay, Accept Already Finished answers it
		{ job_id: ids[3], worker: 'w1', success: true, accept_finished: true },
	];
	await withLostReply(FINISH_MARKER, () => finishJobs(proxied, inputs));
	const retry = await finishJobs(proxied, inputs);
	assert.ok(retry.every((r) => !(r instanceof ContractError)));
	const rows = retry as Record<string, unknown>[];
	assert.deepEqual(
		rows.map((r) => [r.status, r.replayed ?? null, r.already_finished ?? null]),
		[
			['succeeded', true, null],
			['dead', true, null], // max_attempts 1: a retryable failure on the last attempt
			['failed', true, null],
			['succeeded', null, true],
		],
	);
	for (const id of ids) {
		const r = await runs(id);
		assert.equal(r.length, 1, `job ${id}: one attempt`);
		assert.equal((await job(id)).attempts, 1);
	}
	assert.deepEqual((await runs(ids[1]))[0].error, { message: 'text' });
});

test('Finish Job: a lost request (the statement never ran) is finished normally by the retry', async () => {
	const [id] = await queued('lr-finish-request', 1);
	const [claimed] = await claimJobs(db.pool, { job_type: 'lr-finish-request', batch_size: 1, worker: 'w1' });
	const input = { job_id: id, worker: 'w1', claim_token: claimed.claim_token, success: true };
	proxy.dropRequestTo(FINISH_MARKER);
	await assert.rejects(finishJob(proxied, input), (e: ContractError) => e.statusCode === 503);
	assert.equal((await job(id)).status, 'running', 'nothing committed');
	const retry = await finishJob(proxied, input);
	assert.deepEqual([retry.status, retry.replayed], ['succeeded', undefined]);
});

test('Enqueue: reply lost after COMMIT; the retry creates nothing and returns the same ids (one job per dedup key)', async () => {
	const key = `lr-enqueue:${randomUUID()}`;
	const jobs: WantedJob[] = [
		{ job_type: 'document_chunk', dedup_key: `${key}:a`, payload: { tenant_id: tenant, document_id: 1 } },
		{ job_type: 'document_chunk', dedup_key: `${key}:b`, payload: { tenant_id: tenant, document_id: 2 } },
	];
	const correlation = randomUUID();
	await withLostReply(ENQUEUE_MARKER, () => enqueueJobs(proxied, tenant, correlation, jobs));
	const committed = (
		await db.pool.query('SELECT id, dedup_key FROM ops.jobs WHERE dedup_key LIKE $1 ORDER BY dedup_key', [`${key}:%`])
	).rows;
	assert.equal(committed.length, 2, 'the first call committed both');
	const ids = await enqueueJobs(proxied, tenant, correlation, jobs);
	assert.deepEqual(
		ids,
		committed.map((r) => Number(r.id)),
		'the retry answers the committed ids',
	);
	const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM ops.jobs WHERE dedup_key LIKE $1', [`${key}:%`]);
	assert.equal(rows[0].n, 2, 'one job per dedup key');
	// and each is worked once: one claim takes both, a second takes nothing
	assert.equal((await claimJobs(db.pool, { job_type: 'document_chunk', batch_size: 10, worker: 'w' })).length, 2);
	assert.deepEqual(await claimJobs(db.pool, { job_type: 'document_chunk', batch_size: 10, worker: 'w' }), []);
});
