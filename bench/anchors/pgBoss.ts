/**
 * bench:jobs's pg-boss side (issue 29 P2): `fetch` of a batch + `complete` of its ids, as a pg-boss 12 worker
 * loop does (pg-boss 12.38.0, a devDependency; it needs Node ≥ 22.12). Its
 * own schema (`pgboss`) on the same server and database as ours.
 */
import { Pool } from 'pg';
import { PgBoss } from 'pg-boss';
import { duplicates, refuseUnless, secondsSince } from '../report';

/** The version measured, as printed in the tables. */
export const PG_BOSS_VERSION = '12.38.0';

/**
 * `depth` jobs on a fresh queue, then `workers` concurrent loops of fetch(batch) + complete(ids) until the
 * queue is empty. Returns jobs/s.
 * @throws Refused when a job was fetched twice, not completed, or completed other than once in the database
 */
export async function pgBossRate(
	url: string,
	workers: number,
	depth: number,
	batch: number,
	tag: string,
): Promise<number> {
	const boss = new PgBoss({
		connectionString: url,
		max: workers + 2,
		supervise: false,
		schedule: false,
		migrate: true,
	});
	boss.on('error', () => undefined);
	await boss.start();
	const queue = `bench_${tag}`;
	try {
		await boss.createQueue(queue);
		for (let i = 0; i < depth; i += 1000)
			await boss.insert(
				queue,
				Array.from({ length: Math.min(1000, depth - i) }, () => ({ data: {} })),
			);
		const admin = new Pool({ connectionString: url, max: 1 });
		try {
			await admin.query('VACUUM ANALYZE pgboss.job');
		} finally {
			await admin.end();
		}
		const fetched: string[] = [];
		const start = performance.now();
		await Promise.all(
			Array.from({ length: workers }, async () => {
				for (;;) {
					const jobs = await boss.fetch(queue, { batchSize: batch });
					if (!jobs || jobs.length === 0) return;
					for (const job of jobs) fetched.push(job.id);
					await boss.complete(
						queue,
						jobs.map((j) => j.id),
					);
				}
			}),
		);
		const seconds = secondsSince(start);
		refuseUnless(duplicates(fetched).length === 0, `pg-boss: ${duplicates(fetched).length} jobs fetched twice`);
		refuseUnless(fetched.length === depth, `pg-boss: ${fetched.length} fetched of ${depth}`);
		const db = new Pool({ connectionString: url, max: 1 });
		try {
			const { rows } = await db.query<{ done: number; all: number }>(
				"SELECT count(*) FILTER (WHERE state = 'completed' AND retry_count = 0)::int AS done, count(*)::int AS all FROM pgboss.job WHERE name = $1",
				[queue],
			);
			refuseUnless(
				rows[0].all === depth && rows[0].done === depth,
				`pg-boss: ${rows[0].done} of ${rows[0].all} jobs completed once in the database`,
			);
		} finally {
			await db.end();
		}
		return depth / seconds;
	} finally {
		await boss.stop({ graceful: false });
	}
}
