/**
 * The ops.jobs module on real PostgreSQL: Finish Job writes a whole execution in one statement with
 * per-item outcomes; enqueue refuses a bad payload before writing anything; Get Stats' figures against
 * values computed here from the rows the test wrote.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { Pool } from 'pg';
import { findPipelineOperation } from '../../nodes/PipelineCapture/actions';
import { ContractError } from '../../nodes/shared/errors';
import {
	claimJobs,
	enqueueJobs,
	finishJobs,
	JOB_REGISTRY,
	JOB_TYPES,
	type JobTypeStats,
} from '../../nodes/shared/jobs';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

/** The pool, counting the statements sent through it (their text; a named statement's too). */
function counting(pool: Pool) {
	const sent: string[] = [];
	return {
		pool: {
			query: (sql: string | { text: string }, params?: unknown[]) => (
				sent.push(typeof sql === 'string' ? sql : sql.text),
				pool.query(sql as string, params)
			),
		} as unknown as Pool,
		sent,
	};
}

async function seed(type: string, n: number): Promise<number[]> {
	const { rows } = await db.pool.query(
		'INSERT INTO ops.jobs (job_type, max_attempts) SELECT $1, 2 FROM generate_series(1, $2) RETURNING id',
		[type, n],
	);
	return rows.map((r) => Number(r.id));
}

test('finishJobs: one statement for the batch; each job its own outcome; a job not held is its own 409, the others finish', async () => {
	await seed('batch', 5);
	const jobs = await claimJobs(db.pool, { job_type: 'batch', batch_size: 10, worker: 'w1' });
	assert.equal(jobs.length, 5);
	const [a, b, c, d, e] = jobs;
	const { pool, sent } = counting(db.pool);
	const results = await finishJobs(pool, [
		{ job_id: a.id, worker: 'w1', success: true, claim_token: a.claim_token },
		{ job_id: b.id, worker: 'w1', success: false, error: { message: 'boom' } },
		{ job_id: c.id, worker: 'w2', success: true }, // not this worker's
		{ job_id: d.id, worker: 'w1', success: false, retryable: false, error: 'bad input' },
		{ job_id: e.id, worker: 'w1', success: true, claim_token: randomUUID() }, // another attempt's token
		{ job_id: a.id, worker: 'w1', success: true, accept_finished: true }, // the same job again: already finished
		{ job_id: 'x', worker: 'w1', success: true },
	]);
	assert.equal(sent.filter((s) => /UPDATE ops\.jobs/.test(s)).length, 1, 'one UPDATE for the whole batch');
	assert.equal(sent.length, 2, 'the batch statement + one read for accept_finished');
	const ok = (r: unknown) => {
		assert.ok(!(r instanceof ContractError), String(r));
		return r as Record<string, unknown>;
	};
	const code = (r: unknown) =>
		r instanceof ContractError ? [r.statusCode, r.details.code ?? r.details.field] : ['ok'];
	assert.equal(ok(results[0]).status, 'succeeded');
	assert.equal(ok(results[1]).status, 'queued');
	assert.deepEqual(code(results[2]), [409, 'NOT_LOCKED_BY_WORKER']);
	assert.equal(ok(results[3]).status, 'failed');
	assert.deepEqual(code(results[4]), [409, 'NOT_LOCKED_BY_WORKER']);
	assert.deepEqual([ok(results[5]).status, ok(results[5]).already_finished], ['succeeded', true]);
	assert.deepEqual(code(results[6]), [422, 'VALIDATION']);
	const { rows } = await db.pool.query(
		`SELECT j.id, j.status, j.locked_by, j.claim_token, j.last_error, r.status AS run_status, r.error AS run_error
		 FROM ops.jobs j LEFT JOIN ops.job_runs r ON r.job_id = j.id WHERE j.id = ANY($1) ORDER BY j.id`,
		[jobs.map((j) => j.id)],
	);
	const byId = new Map(rows.map((r) => [Number(r.id), r]));
	assert.deepEqual(
		[byId.get(Number(a.id))!.status, byId.get(Number(a.id))!.run_status, byId.get(Number(a.id))!.claim_token],
		['succeeded', 'succeeded', null],
	);
	assert.deepEqual(
		[byId.get(Number(b.id))!.status, byId.get(Number(b.id))!.run_status, byId.get(Number(b.id))!.last_error],
		['queued', 'retry', { message: 'boom' }],
	);
	assert.deepEqual(
		[byId.get(Number(c.id))!.status, byId.get(Number(c.id))!.run_status, byId.get(Number(c.id))!.locked_by],
		['running', null, 'w1'],
		'still running: its run is written when the attempt ends (migration 026)',
	);
	assert.deepEqual(
		[byId.get(Number(d.id))!.status, byId.get(Number(d.id))!.run_error],
		['failed', { message: 'bad input' }],
	);
	assert.deepEqual([byId.get(Number(e.id))!.status, byId.get(Number(e.id))!.run_status], ['running', null]);
	// the run ids returned are the attempts' rows
	assert.equal(
		Number(ok(results[0]).run_id),
		Number((await db.pool.query('SELECT id FROM ops.job_runs WHERE job_id = $1', [a.id])).rows[0].id),
	);
});

test('enqueueJobs: a bad payload or an unregistered type is a 422 naming the field, and nothing of the batch is enqueued', async () => {
	const tenant = (await db.pool.query("INSERT INTO core.tenants (name) VALUES ('enqueue-test') RETURNING tenant_id"))
		.rows[0].tenant_id as string;
	const count = async () => (await db.pool.query('SELECT count(*)::int AS n FROM ops.jobs')).rows[0].n as number;
	const before = await count();
	const good = {
		job_type: JOB_TYPES.document_extract,
		dedup_key: `t:${randomUUID()}`,
		payload: { tenant_id: tenant, document_id: 1, trace_id: null },
	};
	const bad = {
		job_type: JOB_TYPES.url_fetch,
		dedup_key: `t:${randomUUID()}`,
		payload: {
			tenant_id: tenant,
			url_id: 'not an id',
			ctx: { chat_id: 1, visibility: 'group', dm_owner_user_id: null },
		},
	};
	await assert.rejects(
		enqueueJobs(db.pool, tenant, randomUUID(), [good, bad]),
		(e: ContractError) =>
			e.statusCode === 422 && e.details.field === 'payload.url_id' && e.details.job_type === 'url_fetch',
	);
	await assert.rejects(
		enqueueJobs(db.pool, tenant, randomUUID(), [good, { ...good, job_type: 'nobody_runs_this' as never }]),
		(e: ContractError) => e.statusCode === 422 && e.details.field === 'job_type',
	);
	// a payload naming another tenant: its worker would read that tenant's rows (WF20 reads the raw row by it)
	const foreign = { ...good, dedup_key: `t:${randomUUID()}`, payload: { ...good.payload, tenant_id: randomUUID() } };
	await assert.rejects(
		enqueueJobs(db.pool, tenant, randomUUID(), [good, foreign]),
		(e: ContractError) => e.statusCode === 422 && e.details.field === 'payload.tenant_id',
	);
	assert.equal(await count(), before);
	const [id] = await enqueueJobs(db.pool, tenant, randomUUID(), [good]);
	assert.deepEqual((await db.pool.query('SELECT job_type, payload FROM ops.jobs WHERE id = $1', [id])).rows[0], {
		job_type: 'document_extract',
		payload: good.payload,
	});
});

/** percentile_cont as defined (linear interpolation between the closest ranks), computed here. */
function percentile(values: number[], p: number): number {
	const xs = [...values].sort((x, y) => x - y);
	const h = (xs.length - 1) * p;
	const lo = Math.floor(h);
	return xs[lo] + (h - lo) * (xs[Math.min(lo + 1, xs.length - 1)] - xs[lo]);
}

test('Job → Get Stats: counts per status, oldest queued age, runs/failures in the window, p50/p95 run time', async () => {
	const operation = findPipelineOperation('job', 'getStats');
	const type = 'stats_a';
	// jobs: 3 queued (created 300 s, 100 s and 10 s ago; one of them due only in an hour), 1 running, 2 succeeded, 1 dead
	const insert = (status: string, createdAgo: number, dueIn = -createdAgo) =>
		db.pool.query(
			`INSERT INTO ops.jobs (job_type, status, created_at, next_run_at, locked_by, locked_at)
			 VALUES ($1, $2, now() - make_interval(secs => $3), now() + make_interval(secs => $4), CASE WHEN $2 = 'running' THEN 'w' END, CASE WHEN $2 = 'running' THEN now() END) RETURNING id`,
			[type, status, createdAgo, dueIn],
		);
	await insert('queued', 300, 3600);
	await insert('queued', 100);
	await insert('queued', 10);
	await insert('running', 50);
	const done = [(await insert('succeeded', 900)).rows[0].id, (await insert('succeeded', 900)).rows[0].id];
	const dead = (await insert('dead', 900)).rows[0].id;
	// runs: [status, ms, finished seconds ago]; the last one is outside a 3600 s window
	const runs: [string, number, number][] = [
		['succeeded', 120, 60],
		['succeeded', 80, 120],
		['retry', 450, 30],
		['dead', 1000, 20],
		['succeeded', 35, 10],
		['failed', 200, 5],
		['succeeded', 99_999, 7200],
	];
	for (const [i, [status, ms, ago]] of runs.entries()) {
		await db.pool.query(
			`INSERT INTO ops.job_runs (job_id, attempt, status, started_at, finished_at)
			 VALUES ($1, 1, $2, now() - make_interval(secs => $3) - make_interval(secs => $4 / 1000.0), now() - make_interval(secs => $3))`,
			[i % 2 ? done[0] : i === 3 ? dead : done[1], status, ago, ms],
		);
	}
	// one open attempt (not finished): not a run of the window
	await db.pool.query("INSERT INTO ops.job_runs (job_id, attempt, status) VALUES ($1, 2, 'running')", [dead]);

	const result = await operation.execute({ pool: db.pool } as never, {
		window_seconds: 3600,
		job_type: `${type}, stats_none`,
	});
	const stats = result.many as unknown as JobTypeStats[];
	assert.deepEqual(
		stats.map((s) => s.job_type),
		[type],
	);
	const s = stats[0];
	assert.deepEqual(s.counts, { queued: 3, running: 1, succeeded: 2, failed: 0, dead: 1 });
	assert.ok(Math.abs(s.oldest_queued_age_seconds! - 300) < 5, `oldest queued ≈ 300 s: ${s.oldest_queued_age_seconds}`);
	assert.ok(Math.abs(s.oldest_due_wait_seconds! - 100) < 5, `oldest due waited ≈ 100 s: ${s.oldest_due_wait_seconds}`);
	// the running job was locked just now (locked_at = now())
	assert.ok(
		s.oldest_running_age_seconds! >= 0 && s.oldest_running_age_seconds! < 5,
		`oldest lock ≈ 0 s: ${s.oldest_running_age_seconds}`,
	);
	const inWindow = runs.filter(([, , ago]) => ago < 3600);
	assert.equal(s.runs, inWindow.length);
	assert.equal(s.failures, inWindow.filter(([st]) => st !== 'succeeded').length);
	assert.equal(s.window_seconds, 3600);
	const ms = inWindow.map(([, m]) => m);
	assert.ok(Math.abs(s.run_ms.p50! - percentile(ms, 0.5)) < 0.01, `p50 ${s.run_ms.p50} vs ${percentile(ms, 0.5)}`);
	assert.ok(Math.abs(s.run_ms.p95! - percentile(ms, 0.95)) < 0.01, `p95 ${s.run_ms.p95} vs ${percentile(ms, 0.95)}`);

	// a wider window takes the old run in; no filter: every registered type is listed, even with no job
	const wide = (await operation.execute({ pool: db.pool } as never, { window_seconds: 86_400, job_type: '' }))
		.many as unknown as JobTypeStats[];
	assert.equal(wide.find((x) => x.job_type === type)!.runs, runs.length);
	for (const t of Object.keys(JOB_REGISTRY))
		assert.ok(
			wide.some((x) => x.job_type === t),
			`${t} listed`,
		);
	const idle = wide.find((x) => x.job_type === JOB_TYPES.document_embed)!;
	assert.deepEqual(
		[idle.counts.queued, idle.runs, idle.oldest_queued_age_seconds, idle.run_ms.p50],
		[0, 0, null, null],
	);
	await assert.rejects(
		operation.execute({ pool: db.pool } as never, { window_seconds: 0 }),
		(e: ContractError) => e.statusCode === 422 && e.details.field === 'window_seconds',
	);
});
