/**
 * bench:jobs's graphile-worker side (issue 29 P2): graphile-worker 0.18.0's own runner (it needs Node ≥ 22.18)
 * with `concurrency` = the worker count, its local queue fetching `batch` jobs at a time (its batched
 * `get_jobs`) and completions batched (`complete_jobs`, completeJobBatchDelay 0: the completions of one tick in
 * one statement). Its own schema (`graphile_worker`) on the same server and database as ours.
 */
import { Pool } from 'pg';
import { Logger, makeWorkerUtils, run } from 'graphile-worker';
import { duplicates, refuseUnless, secondsSince } from '../report';

/** The version measured, as printed in the tables. */
export const GRAPHILE_WORKER_VERSION = '0.18.0';

const quiet = new Logger(() => () => undefined);

/**
 * `depth` jobs of a fresh task identifier, then the runner (concurrency `workers`) until every job ran and the
 * runner stopped (its pending completions written). Returns jobs/s.
 * @throws Refused when a job ran twice, did not run, or is left in the database (not completed once)
 */
export async function graphileWorkerRate(
	url: string,
	workers: number,
	depth: number,
	batch: number,
	tag: string,
): Promise<number> {
	const task = `bench_${tag}`;
	const utils = await makeWorkerUtils({ connectionString: url, logger: quiet });
	try {
		await utils.migrate();
		for (let i = 0; i < depth; i += 1000)
			await utils.addJobs(Array.from({ length: Math.min(1000, depth - i) }, () => ({ identifier: task, payload: {} })));
	} finally {
		await utils.release();
	}
	const admin = new Pool({ connectionString: url, max: 1 });
	try {
		await admin.query('VACUUM ANALYZE graphile_worker._private_jobs');
		const ran: string[] = [];
		let allRan: () => void = () => undefined;
		const done = new Promise<void>((resolve) => (allRan = resolve));
		const start = performance.now();
		const runner = await run({
			connectionString: url,
			concurrency: workers,
			maxPoolSize: workers + 2,
			noHandleSignals: true,
			pollInterval: 1000,
			logger: quiet,
			preset: { worker: { localQueue: { size: batch }, completeJobBatchDelay: 0 } },
			taskList: {
				[task]: async (_payload, helpers) => {
					ran.push(helpers.job.id);
					if (ran.length === depth) allRan();
				},
			},
		});
		await done;
		await runner.stop();
		const seconds = secondsSince(start);
		refuseUnless(duplicates(ran).length === 0, `graphile-worker: ${duplicates(ran).length} jobs ran twice`);
		refuseUnless(ran.length === depth, `graphile-worker: ${ran.length} of ${depth} jobs ran`);
		const { rows } = await admin.query<{ left: number }>(
			'SELECT count(*)::int AS left FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE t.identifier = $1',
			[task],
		);
		refuseUnless(rows[0].left === 0, `graphile-worker: ${rows[0].left} jobs left in the database (not completed once)`);
		return depth / seconds;
	} finally {
		await admin.end();
	}
}
