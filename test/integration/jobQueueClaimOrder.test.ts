/**
 * Claim Jobs on real PostgreSQL (issue 14 P2): the order over several types (priority, then due time, then
 * id, merged across the types), a batch cut across types leaves the rest claimable, a type listed twice
 * claims nothing twice, and a claim reads about one batch of the queue's index, not every due job.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { claimJobs } from '../../nodes/shared/jobs/queue';
import { CLAIM_JOBS } from '../../nodes/shared/statements/jobs';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

/** One job; `dueSecondsAgo` sets next_run_at (negative: in the future). Returns its id. */
async function job(type: string, priority: number, dueSecondsAgo: number): Promise<number> {
	const { rows } = await db.pool.query<{ id: string }>(
		'INSERT INTO ops.jobs (job_type, priority, next_run_at) VALUES ($1, $2, now() - make_interval(secs => $3)) RETURNING id',
		[type, priority, dueSecondsAgo],
	);
	return Number(rows[0].id);
}

const ids = (jobs: Array<Record<string, unknown>>) => jobs.map((j) => Number(j.id)).sort((x, y) => x - y);

test('several types: the batch takes the highest priority, then the longest due, then the lowest id, across types', async () => {
	const a1 = await job('order-a', 0, 60);
	const a2 = await job('order-a', 0, 60);
	const a3 = await job('order-a', 0, 60);
	const b1 = await job('order-b', 5, 1);
	const b2 = await job('order-b', 5, 1);
	const bOld = await job('order-b', 0, 3600);
	await job('order-b', 9, -3600); // not due: never claimed however high its priority
	await job('order-c', 9, 3600); // a type not asked for
	// the order, by the rule: b1, b2 (priority 5), bOld (due an hour ago), a1 (lowest id of the rest)
	const first = await claimJobs(db.pool, { job_type: 'order-a, order-b, order-a', batch_size: 4, worker: 'w1' });
	assert.deepEqual(
		ids(first),
		[a1, b1, b2, bOld].sort((x, y) => x - y),
	);
	// the candidates the merge left out are not held: another worker takes them at once
	const second = await claimJobs(db.pool, { job_type: 'order-a, order-b', batch_size: 10, worker: 'w2' });
	assert.deepEqual(ids(second), [a2, a3]);
	const { rows } = await db.pool.query<{ running: number; runs: number }>(
		"SELECT count(*) FILTER (WHERE status = 'running' AND attempts = 1)::int AS running, count(DISTINCT run_id)::int AS runs FROM ops.jobs WHERE job_type LIKE 'order-%'",
	);
	assert.deepEqual(rows[0], { running: 6, runs: 6 }, 'each claimed job claimed once, under a run id of its own');
});

test('a claim reads about one batch of the due index, not the whole queue', async () => {
	await db.pool.query("INSERT INTO ops.jobs (job_type) SELECT 'deep' FROM generate_series(1, 5000)");
	await db.pool.query('ANALYZE ops.jobs');
	const client = await db.pool.connect();
	try {
		await client.query('BEGIN');
		// with a claim key (the replay lookup runs first, on the running jobs' claim_key index) and a lease
		const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM_JOBS}`, [
			['deep'],
			10,
			'w1',
			'["i","wf","1","Claim Jobs",0,0]',
			'00000000-0000-4000-8000-000000000001',
			300,
		]);
		await client.query('ROLLBACK');
		const scanned: number[] = [];
		const walk = (node: Record<string, unknown>) => {
			if (
				node['Relation Name'] === 'jobs' &&
				String(node['Node Type']).includes('Scan') &&
				node['Index Name'] !== 'jobs_pkey'
			)
				scanned.push(Number(node['Actual Rows']) * Number(node['Actual Loops']));
			for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
		};
		walk(rows[0]['QUERY PLAN'][0].Plan);
		assert.ok(scanned.length > 0, 'the plan scans ops.jobs');
		const read = scanned.reduce((x, y) => x + y, 0);
		assert.ok(read <= 20, `rows read from the queue for a batch of 10 out of 5,000 due: ${read}`);
	} finally {
		client.release();
	}
});
