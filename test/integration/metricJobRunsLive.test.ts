/**
 * Job attempts in Pipeline Metrics (db/migrations/017): the view maas.metric_job_runs_live counts the finished
 * ops.job_runs that exist, bucketed by the smallest bound ≥ the run time ('+Inf' above all), and deleting a job
 * moves its runs' figures into maas.metric_counters, so the sum of both never goes down.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { JOB_RUN_BUCKETS } from '../../nodes/PipelineCapture/actions/metrics/buckets';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

/** name → labels (as JSON text, sorted keys) → value, over the rollup and the live view together. */
async function figures(): Promise<Map<string, number>> {
	const { rows } = await db.pool.query<{ name: string; labels: Record<string, string>; value: number }>(
		`SELECT name, labels, sum(value)::float8 AS value FROM (
		   SELECT name, labels, value FROM maas.metric_counters WHERE name LIKE 'job_run%'
		   UNION ALL SELECT name, labels, value FROM maas.metric_job_runs_live) a
		 GROUP BY name, labels`,
	);
	const key = (l: Record<string, string>) => JSON.stringify(Object.fromEntries(Object.entries(l).sort()));
	return new Map(rows.map((r) => [`${r.name} ${key(r.labels)}`, r.value]));
}

test('run times on, just above and beyond the bounds land in the smallest bound ≥ them; deleting the job lowers nothing', async () => {
	// timestamps keep microseconds: every duration here is exact at that resolution
	const durations = [0, 0.05, 0.050001, 1, 1.5, 300, 300.5, 5000];
	const { rows } = await db.pool.query<{ id: string }>(
		"INSERT INTO ops.jobs (job_type, status, payload) VALUES ('live_probe', 'succeeded', '{}') RETURNING id",
	);
	const jobId = rows[0].id;
	await db.pool.query(
		`INSERT INTO ops.job_runs (job_id, attempt, status, started_at, finished_at)
		 SELECT $1, i, 'succeeded', t0, t0 + d * interval '1 second'
		 FROM unnest($2::float8[]) WITH ORDINALITY AS u(d, i), (SELECT now() AS t0) n`,
		[jobId, durations],
	);
	const expected = new Map<string, number>();
	for (const d of durations) {
		const le = JOB_RUN_BUCKETS.find((b) => d <= b);
		const k = `job_run_seconds ${JSON.stringify({ job_type: 'live_probe', le: le === undefined ? '+Inf' : String(le) })}`;
		expected.set(k, (expected.get(k) ?? 0) + 1);
	}
	const before = await figures();
	for (const [k, n] of expected) assert.equal(before.get(k), n, k);
	assert.equal(
		before.get(`job_runs ${JSON.stringify({ job_type: 'live_probe', status: 'succeeded' })}`),
		durations.length,
	);
	const sum = before.get(`job_run_seconds_sum ${JSON.stringify({ job_type: 'live_probe' })}`)!;
	assert.ok(Math.abs(sum - durations.reduce((a, b) => a + b, 0)) < 1e-3, `sum ${sum}`);

	await db.pool.query('DELETE FROM ops.jobs WHERE id = $1', [jobId]);
	const after = await figures();
	for (const [k, v] of before) if (k.includes('live_probe')) assert.ok(Math.abs((after.get(k) ?? 0) - v) < 1e-6, k);
	const { rows: left } = await db.pool.query('SELECT count(*)::int AS n FROM ops.job_runs WHERE job_id = $1', [jobId]);
	assert.equal(left[0].n, 0, 'the runs went with their job');
});
