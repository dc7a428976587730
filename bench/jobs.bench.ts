/**
 * `npm run bench:jobs`: claimed-and-finished jobs/s of the ops.jobs queue against pg-boss 10, in one run,
 * on one fresh database (issue 14, P2 and the jobs half of P3).
 *   contracts — Claim Jobs + Finish Job as they run in n8n: one claim of a batch (claimJobs), then ONE
 *               Finish Job statement for the batch's items (finishJobs, each item with its job id, the
 *               locked_by worker and the claim_token the claim returned).
 *   baseline  — pg-boss `fetch` of a batch + `complete` of its ids (its own schema, same server).
 * At each worker count of BENCH_WORKER_COUNTS (default 1,2,4,8): BENCH_JOBS (default 3,000) jobs each,
 * batches of BENCH_JOB_BATCH (default 10), each side with its own pool of workers + 2 connections; the order of
 * the two sides alternates between worker counts, and both queues are vacuumed before every measurement.
 * BENCH_JOB_ROUNDS (default 3) repeats every measurement; the median is reported.
 * Refuses to report when a job was lost (not finished, or finished other than once, in the worker loop
 * and in the database) or done twice (claimed twice, a second attempt, a second job_runs row).
 * Ratio = contracts / pg-boss (higher is better; goal P2: ≥ 1.0 at 4 workers).
 * BENCH_JOBS is also the queue's depth at the start: pg-boss's fetch reads and sorts every queued job of its
 * queue on each call, our claim about one batch of jobs_due_idx, so the ratio grows with BENCH_JOBS.
 */
import { Pool } from 'pg';
import PgBoss from 'pg-boss';
import { ContractError } from '../nodes/shared/errors';
import { claimJobs, finishJobs } from '../nodes/shared/jobs/queue';
import { setupDatabase } from '../test/helpers/db';
import { recordGoal } from './goals';
import {
	alternatingMedians,
	duplicates,
	envInt,
	markdownTable,
	rate,
	Refused,
	refuseUnless,
	secondsSince,
	workerCounts,
} from './report';

const JOBS = envInt('BENCH_JOBS', 3000);
const BATCH = envInt('BENCH_JOB_BATCH', 10);
const ROUNDS = envInt('BENCH_JOB_ROUNDS', 3);
const COUNTS = workerCounts();

type Side = (workers: number, round: number) => Promise<number>;

/** Claim Jobs + Finish Job (one statement per batch each), `workers` concurrent loops. Returns jobs/s. */
function contracts(url: string): Side {
	return async (workers, round) => {
		const pool = new Pool({ connectionString: url, max: workers + 2 });
		pool.on('error', () => undefined);
		const type = `bench_w${workers}_r${round}`;
		try {
			await pool.query('INSERT INTO ops.jobs (job_type) SELECT $1 FROM generate_series(1, $2)', [type, JOBS]);
			await pool.query('VACUUM ANALYZE ops.jobs, ops.job_runs');
			// open the pool's connections before the clock starts, as pg-boss's start() has for its own
			const clients = await Promise.all(Array.from({ length: workers }, () => pool.connect()));
			for (const client of clients) client.release();
			const claimed: number[] = [];
			const finished: number[] = [];
			const errors: string[] = [];
			const start = performance.now();
			await Promise.all(
				Array.from({ length: workers }, async (_, w) => {
					for (;;) {
						const jobs = await claimJobs(pool, { job_type: type, batch_size: BATCH, worker: `w${w}` });
						if (jobs.length === 0) return;
						for (const job of jobs) claimed.push(Number(job.id));
						const results = await finishJobs(
							pool,
							jobs.map((job) => ({
								job_id: job.id,
								worker: job.locked_by,
								claim_token: job.claim_token,
								success: true,
							})),
						);
						for (const r of results) {
							if (r instanceof ContractError) errors.push(r.message);
							else finished.push(Number(r.id));
						}
					}
				}),
			);
			const seconds = secondsSince(start);
			refuseUnless(errors.length === 0, `contracts: ${errors.length} Finish Job errors (first: ${errors[0]})`);
			refuseUnless(duplicates(claimed).length === 0, `contracts: ${duplicates(claimed).length} jobs claimed twice`);
			refuseUnless(duplicates(finished).length === 0, `contracts: ${duplicates(finished).length} jobs finished twice`);
			refuseUnless(finished.length === JOBS, `contracts: ${finished.length} of ${JOBS} jobs finished`);
			const { rows } = await pool.query<{ done: number; all: number; runs: number; good_runs: number }>(
				`SELECT count(*) FILTER (WHERE j.status = 'succeeded' AND j.attempts = 1 AND j.claim_token IS NULL AND j.locked_by IS NULL)::int AS done,
				        count(*)::int AS all,
				        (SELECT count(*) FROM ops.job_runs r JOIN ops.jobs x ON x.id = r.job_id WHERE x.job_type = $1)::int AS runs,
				        (SELECT count(*) FROM ops.job_runs r JOIN ops.jobs x ON x.id = r.job_id WHERE x.job_type = $1 AND r.status = 'succeeded' AND r.attempt = 1 AND r.finished_at IS NOT NULL)::int AS good_runs
				 FROM ops.jobs j WHERE j.job_type = $1`,
				[type],
			);
			const db = rows[0];
			refuseUnless(
				db.all === JOBS && db.done === JOBS,
				`contracts: ${db.done} of ${db.all} jobs succeeded once in the database (${JOBS} enqueued)`,
			);
			refuseUnless(
				db.runs === JOBS && db.good_runs === JOBS,
				`contracts: ${db.runs} job_runs rows, ${db.good_runs} succeeded (want ${JOBS} each)`,
			);
			return JOBS / seconds;
		} finally {
			await pool.end();
		}
	};
}

/** pg-boss `fetch` (batch) + `complete` (the batch's ids), `workers` concurrent loops. Returns jobs/s. */
function pgBoss(url: string): Side {
	return async (workers, round) => {
		const boss = new PgBoss({
			connectionString: url,
			max: workers + 2,
			supervise: false,
			schedule: false,
			migrate: true,
		});
		boss.on('error', () => undefined);
		await boss.start();
		const queue = `bench_w${workers}_r${round}`;
		try {
			await boss.createQueue(queue);
			for (let i = 0; i < JOBS; i += 1000)
				await boss.insert(Array.from({ length: Math.min(1000, JOBS - i) }, () => ({ name: queue, data: {} })));
			const admin = new Pool({ connectionString: url, max: 1 });
			try {
				await admin.query('VACUUM ANALYZE pgboss.job');
			} finally {
				await admin.end();
			}
			const fetched: string[] = [];
			let completed = 0;
			const start = performance.now();
			await Promise.all(
				Array.from({ length: workers }, async () => {
					for (;;) {
						const jobs = await boss.fetch(queue, { batchSize: BATCH });
						if (!jobs || jobs.length === 0) return;
						for (const job of jobs) fetched.push(job.id);
						const result = (await boss.complete(
							queue,
							jobs.map((j) => j.id),
						)) as unknown as { affected: number };
						completed += result.affected;
					}
				}),
			);
			const seconds = secondsSince(start);
			refuseUnless(duplicates(fetched).length === 0, `pg-boss: ${duplicates(fetched).length} jobs fetched twice`);
			refuseUnless(
				fetched.length === JOBS && completed === JOBS,
				`pg-boss: ${fetched.length} fetched, ${completed} completed of ${JOBS}`,
			);
			const db = new Pool({ connectionString: url, max: 1 });
			try {
				const { rows } = await db.query<{ done: number; all: number }>(
					"SELECT count(*) FILTER (WHERE state = 'completed' AND retry_count = 0)::int AS done, count(*)::int AS all FROM pgboss.job WHERE name = $1",
					[queue],
				);
				refuseUnless(
					rows[0].all === JOBS && rows[0].done === JOBS,
					`pg-boss: ${rows[0].done} of ${rows[0].all} jobs completed once in the database`,
				);
			} finally {
				await db.end();
			}
			return JOBS / seconds;
		} finally {
			await boss.stop({ graceful: false, wait: true });
		}
	};
}

async function main() {
	const db = await setupDatabase();
	try {
		const ours = contracts(db.url);
		const boss = pgBoss(db.url);
		const measured = await alternatingMedians(COUNTS, ROUNDS, (side, workers, round) =>
			side === 'ours' ? ours(workers, round) : boss(workers, round),
		);
		const rows = measured.map((r) => ({ workers: r.workers, ours: r.ours, boss: r.baseline }));
		for (const r of rows)
			console.log(
				`  ${r.workers} workers: contracts ${rate(r.ours)} jobs/s, pg-boss ${rate(r.boss)} jobs/s, ratio ${(r.ours / r.boss).toFixed(2)}x`,
			);
		console.log(
			`\njobs claimed and finished (${JOBS} jobs per measurement, batches of ${BATCH}, median of ${ROUNDS}; no job lost or done twice):`,
		);
		console.log(
			'  contracts = Claim Jobs + Finish Job (one statement per batch each); pg-boss 10.4.2 = fetch + complete of the batch\n',
		);
		console.log(
			markdownTable(
				['workers', 'contracts jobs/s', 'pg-boss jobs/s', 'contracts / pg-boss'],
				rows.map((r) => [r.workers, rate(r.ours), rate(r.boss), `${(r.ours / r.boss).toFixed(2)}×`]),
			),
		);
		const p2 = rows.find((r) => r.workers === 4);
		if (p2) {
			console.log(
				`\nP2 (4 workers, batches of ${BATCH}): contracts / pg-boss = ${(p2.ours / p2.boss).toFixed(2)}× (goal ≥ 1.0×)`,
			);
			recordGoal({
				goal: 'P2',
				what: `Claim Jobs + Finish Job, 4 workers, batches of ${BATCH}`,
				measured: `${rate(p2.ours)} jobs/s`,
				baseline: `pg-boss fetch + complete ${rate(p2.boss)} jobs/s`,
				ratio: p2.ours / p2.boss,
				atLeast: 1.0,
			});
		}
		// P3's jobs half: the curve over worker counts; reaching here means no job was lost or done twice.
		recordGoal({
			goal: 'P3',
			what: `jobs/s at ${rows.map((r) => r.workers).join(' / ')} workers, none lost or done twice`,
			measured: rows.map((r) => rate(r.ours)).join(' / '),
			baseline: `pg-boss ${rows.map((r) => rate(r.boss)).join(' / ')}`,
			ratio: null,
			atLeast: null,
			held: true,
			bound: 'the curve; none lost or doubled',
		});
	} finally {
		await db.drop();
	}
}

main().catch((error) => {
	console.error(error instanceof Refused ? error.message : error);
	process.exit(1);
});
