/**
 * Claim Jobs and Finish Job as named statements (nodes/shared/postgres/prepared.ts; issue 29 P2), on real
 * PostgreSQL: their generic plans — which PostgreSQL may choose for a named statement — read the queue through
 * its indexes only (a claim reads about one batch of a 5,000-job queue), the claim's columns are the table's
 * (listed, so a migration adding a column cannot break a prepared claim), a column added while connections
 * hold the prepared claim changes nothing for them, and our pools leave the server's plan cache mode alone
 * (a session-wide force_generic_plan would reach every unnamed statement too).
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Pool, type PoolClient } from 'pg';
import { claimJobs, finishJobs } from '../../nodes/shared/jobs/queue';
import { closeAllPools, getPool } from '../../nodes/shared/postgres/pool';
import { endNamedStatementPool, namedStatementPool } from '../../nodes/shared/postgres/prepared';
import { CLAIM_JOBS_NAMED, FINISH_JOBS_NAMED, JOB_ROW_COLUMNS } from '../../nodes/shared/statements/jobs';
import { credentialFor, setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await closeAllPools();
	await db?.drop();
});

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/** Every plan node of an EXPLAIN (FORMAT JSON) result, depth first. */
function nodesOf(plan: PlanNode): PlanNode[] {
	return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}

/** EXPLAIN (ANALYZE, FORMAT JSON) of `EXECUTE name(args)` in a transaction rolled back: the plan's nodes. */
async function explainExecute(client: PoolClient, name: string, args: string): Promise<PlanNode[]> {
	await client.query('BEGIN');
	try {
		const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}(${args})`);
		return nodesOf(rows[0]['QUERY PLAN'][0].Plan);
	} finally {
		await client.query('ROLLBACK');
	}
}

const seqScans = (nodes: PlanNode[]) =>
	nodes.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => String(n['Relation Name']));

test('ops.jobs has no column the prepared claim leaves out (JOB_ROW_COLUMNS is the table, in order)', async () => {
	const { rows } = await db.pool.query<{ column_name: string }>(
		"SELECT column_name FROM information_schema.columns WHERE table_schema = 'ops' AND table_name = 'jobs' ORDER BY ordinal_position",
	);
	assert.deepEqual(
		rows.map((r) => r.column_name),
		[...JOB_ROW_COLUMNS],
	);
});

test('the generic plans of the claim and the finish read ops.jobs and ops.job_runs by index only, about one batch of a 5,000-job queue with 5,000 runs of history', async () => {
	await db.pool.query("INSERT INTO ops.jobs (job_type) SELECT 'prep_deep' FROM generate_series(1, 5000)");
	// a history: 5,000 finished runs of earlier jobs
	await db.pool.query(
		"INSERT INTO ops.jobs (job_type, status, attempts) SELECT 'prep_old', 'succeeded', 1 FROM generate_series(1, 5000)",
	);
	await db.pool.query(
		"INSERT INTO ops.job_runs (job_id, attempt, status, finished_at) SELECT id, 1, 'succeeded', now() FROM ops.jobs WHERE job_type = 'prep_old'",
	);
	await db.pool.query('VACUUM ANALYZE ops.jobs, ops.job_runs');
	const pool = new Pool({ connectionString: db.url, max: 1 });
	// a connection of the named-statement pool, where claimJobs / finishJobs run them
	const client = await (namedStatementPool(pool) as Pool).connect();
	try {
		assert.equal((await client.query('SHOW plan_cache_mode')).rows[0].plan_cache_mode, 'force_generic_plan');
		// prepared on this connection as the nodes prepare them (node-postgres's protocol-level Parse)
		const claimed = (
			await client.query({
				...CLAIM_JOBS_NAMED,
				values: [['prep_deep'], 10, 'w1', null, null, 300],
			})
		).rows;
		assert.equal(claimed.length, 10);
		const claimPlan = await explainExecute(
			client,
			CLAIM_JOBS_NAMED.name,
			`'{prep_deep}', 10, 'w1', '${'a'.repeat(32)}', '00000000-0000-4000-8000-000000000001'::uuid, 300`,
		);
		assert.deepEqual(seqScans(claimPlan), [], 'no sequential scan in the claim');
		const read = claimPlan
			.filter((n) => n['Relation Name'] === 'jobs' && String(n['Node Type']).includes('Scan'))
			.filter((n) => n['Index Name'] !== 'jobs_pkey')
			.reduce((sum, n) => sum + Number(n['Actual Rows']) * Number(n['Actual Loops']), 0);
		assert.ok(read <= 20, `rows read from the queue for a batch of 10 out of 4,990 due: ${read}`);

		const ids = claimed.map((j) => j.id).join(',');
		const tokens = claimed.map((j) => j.claim_token).join(',');
		// run once for real (prepares it), then explained with the same inputs
		const finishArgs = (n: number) => [
			`'{${ids}}'::bigint[]`,
			`'{${Array(n).fill('w1').join(',')}}'::text[]`,
			`'{${Array(n).fill('true').join(',')}}'::boolean[]`,
			`'{${Array(n).fill('false').join(',')}}'::boolean[]`,
			`'{${Array(n).fill('NULL').join(',')}}'::jsonb[]`,
			'5',
			'300',
			`'{${tokens}}'::uuid[]`,
		];
		await client.query('BEGIN');
		await client.query({
			...FINISH_JOBS_NAMED,
			values: [
				claimed.map((j) => j.id),
				claimed.map(() => 'w1'),
				claimed.map(() => true),
				claimed.map(() => false),
				claimed.map(() => null),
				5,
				300,
				claimed.map((j) => j.claim_token),
			],
		});
		await client.query('ROLLBACK');
		const finishPlan = await explainExecute(client, FINISH_JOBS_NAMED.name, finishArgs(claimed.length).join(', '));
		assert.deepEqual(seqScans(finishPlan), [], 'no sequential scan in the finish');
		assert.ok(
			finishPlan.some((n) => n['Relation Name'] === 'job_runs'),
			'the finish closes the runs (job_runs in the plan)',
		);

		// both are prepared on the connection, planned once (generic), never per execution
		const { rows: prepared } = await client.query<{ name: string; generic_plans: string; custom_plans: string }>(
			'SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name = ANY($1)',
			[[CLAIM_JOBS_NAMED.name, FINISH_JOBS_NAMED.name]],
		);
		assert.equal(prepared.length, 2, 'both statements are prepared on the connection');
		for (const p of prepared) {
			assert.ok(Number(p.generic_plans) >= 1, `${p.name}: generic plans ${p.generic_plans}`);
			assert.equal(Number(p.custom_plans), 0, `${p.name}: custom plans`);
		}
	} finally {
		client.release();
		await endNamedStatementPool(pool);
		await pool.end();
	}
});

test('claimJobs and finishJobs through a pool holding the prepared claim: a column added to ops.jobs meanwhile changes nothing (no 0A000)', async () => {
	await db.pool.query("INSERT INTO ops.jobs (job_type) SELECT 'prep_alter' FROM generate_series(1, 4)");
	const pool = new Pool({ connectionString: db.url, max: 1 });
	try {
		const first = await claimJobs(pool, { job_type: 'prep_alter', batch_size: 2, worker: 'w1' });
		assert.equal(first.length, 2);
		await db.pool.query('ALTER TABLE ops.jobs ADD COLUMN prep_test_extra integer');
		try {
			const second = await claimJobs(pool, { job_type: 'prep_alter', batch_size: 2, worker: 'w1' });
			assert.equal(second.length, 2);
			assert.deepEqual(Object.keys(second[0]).sort(), Object.keys(first[0]).sort(), 'the same columns as before');
			const done = await finishJobs(
				pool,
				[...first, ...second].map((j) => ({
					job_id: j.id,
					worker: j.locked_by,
					claim_token: j.claim_token,
					success: true,
				})),
			);
			assert.deepEqual(
				done.map((d) => (d instanceof Error ? d.message : d.status)),
				['succeeded', 'succeeded', 'succeeded', 'succeeded'],
			);
		} finally {
			await db.pool.query('ALTER TABLE ops.jobs DROP COLUMN prep_test_extra');
		}
	} finally {
		await endNamedStatementPool(pool);
		await pool.end();
	}
});

test('a pool from getPool keeps plan_cache_mode at the server default (auto), so its unnamed statements stay planned for their values; Claim Jobs and Finish Job run on its named-statement pool, whose connections plan them once', async () => {
	const pool = getPool(credentialFor(db.url));
	await pool.query("INSERT INTO ops.jobs (job_type) VALUES ('prep_split')");
	const [job] = await claimJobs(pool, { job_type: 'prep_split', batch_size: 1, worker: 'w1' });
	const [done] = await finishJobs(pool, [
		{ job_id: job.id, worker: 'w1', claim_token: job.claim_token, success: true },
	]);
	assert.equal((done as Record<string, unknown>).status, 'succeeded');
	const { rows } = await pool.query<{ application_name: string; plan_cache_mode: string; prepared: string[] }>(
		`SELECT current_setting('application_name') AS application_name, current_setting('plan_cache_mode') AS plan_cache_mode,
		        ARRAY(SELECT name FROM pg_prepared_statements ORDER BY name) AS prepared`,
	);
	assert.deepEqual(rows[0], { application_name: 'n8n-nodes-contracts', plan_cache_mode: 'auto', prepared: [] });
	const named = namedStatementPool(pool) as Pool;
	const { rows: namedRows } = await named.query<{
		application_name: string;
		plan_cache_mode: string;
		prepared: string[];
	}>(
		`SELECT current_setting('application_name') AS application_name, current_setting('plan_cache_mode') AS plan_cache_mode,
		        ARRAY(SELECT name FROM pg_prepared_statements ORDER BY name) AS prepared`,
	);
	assert.deepEqual(namedRows[0], {
		application_name: 'n8n-nodes-contracts (named statements)',
		plan_cache_mode: 'force_generic_plan',
		prepared: [CLAIM_JOBS_NAMED.name, FINISH_JOBS_NAMED.name].sort(),
	});
});
