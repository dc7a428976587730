/**
 * `npm run bench:jobs`: the ops.jobs queue and the pipeline capture, on one fresh database, same run.
 *  1. claimed-and-finished jobs/s: PipelineCapture's Claim Jobs + Finish Job (one Finish per job, as the
 *     node does per item) vs pg-boss 10 (`fetch` + `complete` of the batch), BENCH_JOBS (default 4,000)
 *     jobs, BENCH_JOB_WORKERS (4) workers, batches of 10. Ratio = ours / pg-boss (higher is better).
 *  2. captures/s under 8 concurrent workers: BENCH_RUNS (default 1,000) pipeline runs taken through
 *     their three steps (Capture + Complete Step each), every capture counted once.
 */
import PgBoss from 'pg-boss';
import { claimJobs, finishJob } from '../nodes/shared/jobs/queue';
import { capture, completeStep } from '../nodes/PipelineCapture/actions/run/runs';
import { shippedDefinition } from '../nodes/PipelineCapture/transport/definition';
import { setupDatabase } from '../test/helpers/db';

const JOBS = Number(process.env.BENCH_JOBS ?? 4000);
const WORKERS = Number(process.env.BENCH_JOB_WORKERS ?? 4);
const RUNS = Number(process.env.BENCH_RUNS ?? 1000);
const BATCH = 10;

async function main() {
	const db = await setupDatabase();
	try {
		// 1a. ours
		await db.pool.query("INSERT INTO ops.jobs (job_type) SELECT 'bench' FROM generate_series(1, $1)", [JOBS]);
		let t = performance.now();
		let done = 0;
		await Promise.all(
			Array.from({ length: WORKERS }, async (_, w) => {
				for (;;) {
					const jobs = await claimJobs(db.pool, { job_type: 'bench', batch_size: BATCH, worker: `w${w}` });
					if (jobs.length === 0) return;
					for (const job of jobs) await finishJob(db.pool, { job_id: job.id, worker: `w${w}`, success: true });
					done += jobs.length;
				}
			}),
		);
		const ours = done / ((performance.now() - t) / 1000);
		// 1b. pg-boss on the same database
		const boss = new PgBoss({ connectionString: db.url, max: WORKERS + 2, supervise: false, schedule: false, migrate: true });
		boss.on('error', () => undefined);
		await boss.start();
		await boss.createQueue('bench');
		for (let i = 0; i < JOBS; i += 1000) await boss.insert(Array.from({ length: Math.min(1000, JOBS - i) }, () => ({ name: 'bench', data: {} })));
		t = performance.now();
		let bossDone = 0;
		await Promise.all(
			Array.from({ length: WORKERS }, async () => {
				for (;;) {
					const jobs = await boss.fetch('bench', { batchSize: BATCH });
					if (!jobs || jobs.length === 0) return;
					await boss.complete('bench', jobs.map((j) => j.id));
					bossDone += jobs.length;
				}
			}),
		);
		const pgboss = bossDone / ((performance.now() - t) / 1000);
		await boss.stop({ graceful: false, wait: true });

		// 2. captures/s
		const def = shippedDefinition();
		await db.pool.query("INSERT INTO maas.pipeline_runs (user_id, user_query) SELECT 'bench-' || g, 'q' FROM generate_series(1, $1) g", [RUNS]);
		const steps: Record<string, [string, string, unknown]> = {
			NEW: ['CAPTURE_ANALYSIS', 'ANALYSIS_DONE', {}],
			ANALYZED: ['CAPTURE_ASSEMBLY', 'ASSEMBLY_DONE', 'payload'],
			READY: ['CAPTURE_RESPONSE', 'RESPONSE_DONE', 'answer'],
		};
		let captures = 0;
		t = performance.now();
		await Promise.all(
			Array.from({ length: 8 }, async (_, w) => {
				for (;;) {
					const { rows } = await db.pool.query<{ id: string; status: string }>(
						"SELECT id, status FROM maas.pipeline_runs WHERE user_id LIKE 'bench-%' AND status IN ('NEW', 'ANALYZED', 'READY') ORDER BY random() LIMIT 20",
					);
					if (rows.length === 0) return;
					for (const r of rows) {
						const [take, complete, result] = steps[r.status];
						const c = await capture(db.pool, def, { run_id: r.id, transition: take, worker: `w${w}` });
						if (!c.captured) continue;
						captures++;
						await completeStep(db.pool, def, { run_id: r.id, transition: complete, capture_token: c.run.capture_token, result });
					}
				}
			}),
		);
		const captureRate = captures / ((performance.now() - t) / 1000);
		console.log(`jobs claimed and finished (${JOBS} jobs, ${WORKERS} workers, batches of ${BATCH}):`);
		console.log(`  contracts (Claim Jobs + Finish Job per job): ${ours.toFixed(0)} jobs/s`);
		console.log(`  pg-boss 10.4.2 (fetch + complete batch):     ${pgboss.toFixed(0)} jobs/s`);
		console.log(`  ratio contracts / pg-boss: ${(ours / pgboss).toFixed(2)}x`);
		console.log(`pipeline captures under 8 concurrent workers (${RUNS} runs × 3 steps, capture + complete): ${captureRate.toFixed(0)} captures/s (${captures} captures)`);
	} finally {
		await db.drop();
	}
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
