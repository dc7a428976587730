/**
 * Issue 10 item 2 follow-up: the Error Pipe's job-path statement (the ops.errors row + the job update, one
 * statement) committed, but its reply was lost (the connection dropped between the commit and the answer).
 * The outcome is unknown to the client; it must not write the row a second time. Exactly one ops.errors row
 * per item, and the job retried once. Real PostgreSQL behind a TCP proxy that drops the reply.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { Pool } from 'pg';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { recordError } from '../../nodes/ErrorPipe/actions/record';
import { claimJobs } from '../../nodes/shared/jobs/queue';
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

async function claimedJob(type: string) {
	await db.pool.query(`INSERT INTO ops.jobs (job_type, payload) VALUES ($1, '{}')`, [type]);
	const [job] = await claimJobs(db.pool, { job_type: type, batch_size: 1, worker: 'w1' });
	return { id: Number(job.id), token: job.claim_token as string };
}

for (const [label, withToken] of [
	['with the claim token', true],
	['without a token (older workflows)', false],
] as const) {
	test(`a reply lost after the commit (${label}): one ops.errors row, the job retried once, the result names that row`, async () => {
		const { id, token } = await claimedJob(`lost-reply-${withToken}`);
		const message = `lost reply ${randomUUID()}`;
		const ctx: Record<string, unknown> = { correlation_id: randomUUID(), job_id: id, workflow: 'WF90' };
		if (withToken) ctx.job_claim_token = token;
		const normalized = normalizeErrorItem(
			{ ctx, error: { message, kind: 'upstream', status_code: 503, retryable: true } },
			{ source: 'WF99' },
		);
		const droppedBefore = proxy.dropped;
		proxy.dropReplyTo(message);
		const result = await recordError(
			proxied,
			normalized.envelope,
			normalized.jobId,
			normalized.contractVersion,
			normalized.jobClaimToken,
		);
		assert.equal(proxy.dropped, droppedBefore + 1, 'the reply of the statement was dropped');
		const { rows } = await db.pool.query(
			"SELECT id, details->>'job_outcome' AS outcome FROM ops.errors WHERE message = $1",
			[message],
		);
		assert.deepEqual(
			rows.map((r) => r.outcome),
			['queued'],
			'exactly one row, with the outcome that was committed',
		);
		assert.equal(result.error_id, Number(rows[0].id));
		assert.deepEqual(result.write_failures, []);
		assert.equal((result.job as { outcome: string }).outcome, 'queued');
		assert.equal(normalized.envelope.error.details.job_outcome, 'queued');
		const { rows: job } = await db.pool.query(
			'SELECT status, attempts, claim_token, last_error FROM ops.jobs WHERE id = $1',
			[id],
		);
		assert.deepEqual(
			{ ...job[0], last_error: undefined },
			{ status: 'queued', attempts: 1, claim_token: null, last_error: undefined },
		);
		assert.equal(Number(job[0].last_error.error_id), result.error_id);
		const { rows: runs } = await db.pool.query('SELECT attempt, status FROM ops.job_runs WHERE job_id = $1', [id]);
		assert.deepEqual(runs, [{ attempt: 1, status: 'retry' }]);
	});
}

test('a connection lost before the statement ran (same symptom for the client): the job path and the row are written once, on a new connection', async () => {
	const { id, token } = await claimedJob('lost-request');
	const message = `lost request ${randomUUID()}`;
	const ctx = { correlation_id: randomUUID(), job_id: id, job_claim_token: token, workflow: 'WF90' };
	const normalized = normalizeErrorItem(
		{ ctx, error: { message, kind: 'upstream', status_code: 503, retryable: true } },
		{ source: 'WF99' },
	);
	const droppedBefore = proxy.dropped;
	proxy.dropRequestTo(message);
	const result = await recordError(
		proxied,
		normalized.envelope,
		normalized.jobId,
		normalized.contractVersion,
		normalized.jobClaimToken,
	);
	assert.equal(proxy.dropped, droppedBefore + 1, 'the statement was dropped');
	const { rows } = await db.pool.query(
		"SELECT id, details->>'job_outcome' AS outcome FROM ops.errors WHERE message = $1",
		[message],
	);
	assert.deepEqual(
		rows.map((r) => r.outcome),
		['queued'],
	);
	assert.equal(result.error_id, Number(rows[0].id));
	assert.deepEqual(result.write_failures, []);
	assert.equal((result.job as { outcome: string }).outcome, 'queued');
	const { rows: job } = await db.pool.query('SELECT status, claim_token, last_error FROM ops.jobs WHERE id = $1', [id]);
	assert.equal(job[0].status, 'queued');
	assert.equal(Number(job[0].last_error.error_id), result.error_id);
	const { rows: runs } = await db.pool.query('SELECT attempt, status FROM ops.job_runs WHERE job_id = $1', [id]);
	assert.deepEqual(runs, [{ attempt: 1, status: 'retry' }]);
});

test('a connection lost while the job cannot be written: the row is still written once (job_outcome write_failed), the job left running', async () => {
	await db.pool.query(`
		CREATE FUNCTION public.refuse_marked_job() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
		  IF NEW.last_error->>'message' LIKE 'refused job %' THEN RAISE EXCEPTION 'injected: ops.jobs refuses'; END IF;
		  RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_marked_job BEFORE UPDATE ON ops.jobs FOR EACH ROW EXECUTE FUNCTION public.refuse_marked_job();`);
	try {
		const { id, token } = await claimedJob('lost-refused');
		const message = `refused job ${randomUUID()}`;
		const ctx = { correlation_id: randomUUID(), job_id: id, job_claim_token: token, workflow: 'WF90' };
		const normalized = normalizeErrorItem(
			{ ctx, error: { message, kind: 'upstream', status_code: 503, retryable: true } },
			{ source: 'WF99' },
		);
		proxy.dropRequestTo(message);
		const result = await recordError(
			proxied,
			normalized.envelope,
			normalized.jobId,
			normalized.contractVersion,
			normalized.jobClaimToken,
		);
		const { rows } = await db.pool.query(
			"SELECT id, details->>'job_outcome' AS outcome FROM ops.errors WHERE message = $1",
			[message],
		);
		assert.deepEqual(
			rows.map((r) => r.outcome),
			['write_failed'],
		);
		assert.equal(result.error_id, Number(rows[0].id));
		assert.deepEqual(
			result.write_failures.map((f) => f.table),
			['ops.jobs'],
		);
		const { rows: job } = await db.pool.query('SELECT status, claim_token FROM ops.jobs WHERE id = $1', [id]);
		assert.deepEqual(job[0], { status: 'running', claim_token: token });
	} finally {
		await db.pool.query('DROP TRIGGER refuse_marked_job ON ops.jobs; DROP FUNCTION public.refuse_marked_job()');
	}
});

test('the connection lost again while settling: nothing written twice, the unknown outcome is reported (no throw)', async () => {
	const { id, token } = await claimedJob('lost-twice');
	const message = `lost twice ${randomUUID()}`;
	const ctx = { correlation_id: randomUUID(), job_id: id, job_claim_token: token, workflow: 'WF90' };
	const normalized = normalizeErrorItem(
		{ ctx, error: { message, kind: 'upstream', status_code: 503, retryable: true } },
		{ source: 'WF99' },
	);
	const droppedBefore = proxy.dropped;
	proxy.dropRequestTo(message, 2); // the statement, then the settling transaction's job path
	const result = await recordError(
		proxied,
		normalized.envelope,
		normalized.jobId,
		normalized.contractVersion,
		normalized.jobClaimToken,
	);
	assert.equal(proxy.dropped, droppedBefore + 2);
	assert.equal(result.error_id, null);
	assert.equal(result.write_failures.length, 1);
	assert.match(result.write_failures[0].message, /^outcome unknown/);
	const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM ops.errors WHERE message = $1', [message]);
	assert.equal(rows[0].n, 0);
	const { rows: job } = await db.pool.query('SELECT status, claim_token FROM ops.jobs WHERE id = $1', [id]);
	assert.deepEqual(job[0], { status: 'running', claim_token: token }, 'left to Release Stale');
});

// Issue 26 item 1: an envelope without a job (no ctx.job_id) — its one insert is retried after a lost reply
for (const [label, lose] of [
	['the reply lost after the COMMIT', (marker: string) => proxy.dropReplyTo(marker)],
	['the request lost before it ran', (marker: string) => proxy.dropRequestTo(marker)],
] as const) {
	test(`no job path, ${label}: one ops.errors row, its id answered, no write failure`, async () => {
		const message = `no job ${randomUUID()}`;
		const normalized = normalizeErrorItem(
			{
				ctx: { correlation_id: randomUUID(), workflow: 'WF10' },
				error: { message, kind: 'upstream', status_code: 503 },
			},
			{ source: 'WF99' },
		);
		assert.equal(normalized.jobId, null);
		const droppedBefore = proxy.dropped;
		lose(message);
		const result = await recordError(proxied, normalized.envelope, null, normalized.contractVersion);
		assert.equal(proxy.dropped, droppedBefore + 1);
		const { rows } = await db.pool.query('SELECT id FROM ops.errors WHERE message = $1', [message]);
		assert.equal(rows.length, 1, 'exactly one row');
		assert.deepEqual(
			[result.error_id, result.write_failures, result.job],
			[Number(rows[0].id), [], { executed: false }],
		);
	});
}

test('the same envelope recorded again (a caller that calls WF99 twice, after a lost reply): one row, the job path applied once, the second call answered with the first row (replayed)', async () => {
	const { id, token } = await claimedJob('twice');
	const message = `twice ${randomUUID()}`;
	const ctx = { correlation_id: randomUUID(), job_id: id, job_claim_token: token, workflow: 'WF90' };
	const record = (
		error: Record<string, unknown> = { message, kind: 'upstream', status_code: 503, retryable: true },
	) => {
		const normalized = normalizeErrorItem({ ctx, error }, { source: 'WF99' });
		return recordError(
			proxied,
			normalized.envelope,
			normalized.jobId,
			normalized.contractVersion,
			normalized.jobClaimToken,
		).then((result) => ({ result, envelope: normalized.envelope }));
	};
	proxy.dropReplyTo(message);
	const first = await record();
	const second = await record();
	assert.deepEqual(
		[first.result.job, second.result.job],
		[
			{ ...first.result.job, outcome: 'queued', replayed: undefined },
			{ ...first.result.job, outcome: 'queued', replayed: true },
		].map((j) => JSON.parse(JSON.stringify(j))),
	);
	assert.equal(second.result.error_id, first.result.error_id, 'the first row');
	assert.equal(second.envelope.error.details.job_outcome, 'queued');
	const { rows: errors } = await db.pool.query('SELECT id FROM ops.errors WHERE message = $1', [message]);
	assert.deepEqual(
		errors.map((r) => Number(r.id)),
		[first.result.error_id],
		'one row',
	);
	const { rows: job } = await db.pool.query('SELECT status, attempts, last_error FROM ops.jobs WHERE id = $1', [id]);
	assert.deepEqual(
		[job[0].status, job[0].attempts, Number(job[0].last_error.error_id)],
		['queued', 1, first.result.error_id],
	);
	const { rows: runs } = await db.pool.query('SELECT status FROM ops.job_runs WHERE job_id = $1', [id]);
	assert.deepEqual(runs, [{ status: 'retry' }], 'one attempt closed once, no run row added');
	// another error of that ended attempt is a late error: its own row, stale, the job untouched
	const late = await record({ message: `${message} (another)`, kind: 'upstream', status_code: 502, retryable: true });
	assert.deepEqual(
		[late.result.job.executed && late.result.job.outcome, late.result.job.executed && late.result.job.replayed],
		['stale', undefined],
	);
	assert.notEqual(late.result.error_id, first.result.error_id);
	assert.equal((await db.pool.query('SELECT attempts FROM ops.jobs WHERE id = $1', [id])).rows[0].attempts, 1);
});

test('the same envelope without a claim token (older workflows): no replay, the second row says stale; the job path still applies once', async () => {
	const { id } = await claimedJob('twice-no-token');
	const message = `twice no token ${randomUUID()}`;
	const ctx = { correlation_id: randomUUID(), job_id: id, workflow: 'WF90' };
	const record = () => {
		const normalized = normalizeErrorItem(
			{ ctx, error: { message, kind: 'upstream', status_code: 503, retryable: true } },
			{ source: 'WF99' },
		);
		return recordError(proxied, normalized.envelope, normalized.jobId, normalized.contractVersion, null);
	};
	const outcomes = [await record(), await record()].map((r) => (r.job as { outcome: string }).outcome);
	assert.deepEqual(outcomes, ['queued', 'stale']);
	const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM ops.errors WHERE message = $1', [message]);
	assert.equal(rows[0].n, 2);
	const { rows: runs } = await db.pool.query('SELECT status, finish_key FROM ops.job_runs WHERE job_id = $1', [id]);
	assert.deepEqual(runs, [{ status: 'retry', finish_key: null }]);
});
