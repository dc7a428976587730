/**
 * `npm run bench:jobs`: claimed-and-finished jobs/s of the ops.jobs queue against today's anchors, pg-boss
 * 12.38.0 and graphile-worker 0.18.0, in one run, on one fresh database (issue 29 P2; issue 14 P2/P3).
 *   contracts       — Claim Jobs + Finish Job as they run in n8n: one claim of a batch (claimJobs under the
 *                     process's job lease, jobLeaseFor(pool).use, with a call key of its own, as the Claim Jobs
 *                     operation sends it), then ONE Finish Job statement for the batch's items (finishJobs, each
 *                     item with its job id, the locked_by worker and the claim_token the claim returned).
 *   pg-boss         — `fetch` of a batch + `complete` of its ids (./anchors/pgBoss.ts).
 *   graphile-worker — its runner, concurrency = workers, local queue of a batch, batched completions
 *                     (./anchors/graphileWorker.ts).
 * Both anchors need Node ≥ 22.18: on an older Node the bench runs itself again on Node 24 (ensureNode, the
 * runtime test:compat uses) and says so.
 * Measurements: at queue depth BENCH_JOBS (default 3,000) every worker count of BENCH_WORKER_COUNTS (default
 * 1,2,4,8); at the other depths of BENCH_JOB_DEPTHS (default 300,3000,30000) 4 workers. Batches of
 * BENCH_JOB_BATCH (default 10). Each measurement: a fresh queue of `depth` jobs, vacuumed, each side with its own
 * pool of workers + 2 connections; BENCH_JOB_ROUNDS (default 3) rounds at other worker counts and
 * BENCH_JOB_GOAL_ROUNDS (default 7) at 4 workers (every depth measured there, P2's goal points among them: a
 * depth-3,000 round lasts under half a second), the order of the sides rotating; the median is reported.
 * Refuses to report when a job was lost (not finished, or finished other than once, in the worker loop and in
 * the database) or done twice (claimed twice, a second attempt, a second job_runs row), on every side.
 * Ratio = contracts / anchor (higher is better; goal P2: ≥ 1.0× both anchors at 4 workers, at every depth ≥ 3,000).
 * Then what ops.job_runs costs, at 4 workers and depth BENCH_JOBS: the shipped CLAIM_JOBS + FINISH_JOBS as plain
 * queries with and without their job_runs CTEs (claimJobsStatement / finishJobsStatement; the claim with the lease
 * and a call key, as above), alternating, GOAL_ROUNDS rounds each, with the ratio of each to both anchors of that
 * point (the issue's "ratio with and without it").
 */
import { spawnSync } from 'node:child_process';
import { Pool } from 'pg';
import { ContractError } from '../nodes/shared/errors';
import { closeJobLeases, jobLeaseFor } from '../nodes/shared/jobs/lease';
import { claimJobs, finishJobs } from '../nodes/shared/jobs/queue';
import { endNamedStatementPool, namedStatement, namedStatementPool } from '../nodes/shared/postgres/prepared';
import { claimJobsStatement, finishJobsStatement } from '../nodes/shared/statements/jobs';
import { setupDatabase } from '../test/helpers/db';
import { recordGoal } from './goals';
import {
	duplicates,
	envInt,
	markdownTable,
	median,
	rate,
	Refused,
	refuseUnless,
	secondsSince,
	workerCounts,
} from './report';

const DEPTH = envInt('BENCH_JOBS', 3000);
const BATCH = envInt('BENCH_JOB_BATCH', 10);
const ROUNDS = envInt('BENCH_JOB_ROUNDS', 3);
/** Rounds at 4 workers, the points P2 is judged at, and of the job_runs cost measurement. */
const GOAL_ROUNDS = envInt('BENCH_JOB_GOAL_ROUNDS', 7);
/** The rounds of a point at `workers`. */
const roundsAt = (workers: number) => (workers === 4 ? GOAL_ROUNDS : ROUNDS);
const COUNTS = workerCounts();
/** Queue depths measured at 4 workers besides DEPTH's curve. */
const DEPTHS = (process.env.BENCH_JOB_DEPTHS ?? '300,3000,30000').split(',').map((d) => Number(d.trim()));
/** The Node both anchors need (graphile-worker 0.18: ≥ 22.18; pg-boss 12: ≥ 22.12). */
const ANCHOR_NODE = [22, 18];

/** Opens `count` connections of each pool and returns them to it (so no measured call waits for a connect). */
async function openConnections(count: number, ...pools: Pool[]): Promise<void> {
	for (const p of pools) {
		const clients = await Promise.all(Array.from({ length: count }, () => p.connect()));
		for (const client of clients) client.release();
	}
}

/**
 * Call keys for the claims of one measurement `tag`, each its own (`<tag>:w<worker>:<n>`), as n8n gives every
 * Claim Jobs call its own (node, execution, item…).
 */
function callKeys(tag: string): (worker: number) => string {
	let calls = 0;
	return (worker) => `${tag}:w${worker}:${(calls += 1)}`;
}

/**
 * Claim Jobs + Finish Job as they run in n8n (one statement per batch each), `workers` concurrent loops over
 * `depth` fresh jobs. Returns jobs/s.
 * @throws Refused when a job was claimed or finished twice, not finished, or not succeeded once in the database
 */
async function contractsRate(url: string, workers: number, depth: number, tag: string): Promise<number> {
	{
		const pool = new Pool({ connectionString: url, max: workers + 2 });
		pool.on('error', () => undefined);
		const type = `bench_${tag}`;
		try {
			await pool.query('INSERT INTO ops.jobs (job_type) SELECT $1 FROM generate_series(1, $2)', [type, depth]);
			await pool.query('VACUUM ANALYZE ops.jobs, ops.job_runs');
			// before the clock starts, as pg-boss's start() has for its own; Claim Jobs and Finish Job run on the named pool
			await openConnections(workers, pool, namedStatementPool(pool));
			const lease = jobLeaseFor(pool);
			await lease.ready();
			const keyOf = callKeys(tag);
			const claimed: number[] = [];
			const finished: number[] = [];
			const errors: string[] = [];
			const start = performance.now();
			await Promise.all(
				Array.from({ length: workers }, async (_, w) => {
					for (;;) {
						// as the Claim Jobs operation: under the lease, with a call key of its own
						const key = keyOf(w);
						const jobs = await lease.use((leaseId) =>
							claimJobs(
								pool,
								{ job_type: type, batch_size: BATCH, worker: `w${w}` },
								{ claim_key: key, lease_id: leaseId },
							),
						);
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
			refuseUnless(finished.length === depth, `contracts: ${finished.length} of ${depth} jobs finished`);
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
				db.all === depth && db.done === depth,
				`contracts: ${db.done} of ${db.all} jobs succeeded once in the database (${depth} enqueued)`,
			);
			refuseUnless(
				db.runs === depth && db.good_runs === depth,
				`contracts: ${db.runs} job_runs rows, ${db.good_runs} succeeded (want ${depth} each)`,
			);
			return depth / seconds;
		} finally {
			await closeJobLeases();
			await endNamedStatementPool(pool);
			await pool.end();
		}
	}
}

/**
 * What the ops.job_runs bookkeeping costs (issue 29 P2: "measure it separately"): CLAIM_JOBS + FINISH_JOBS sent
 * as named statements, as the nodes send them (the parameters the Claim Jobs and Finish Job operations send: a call key and the process's lease), with `runs` true (the
 * shipped statements: a run id reserved per claimed job, its run written by the finish, migration 026) or false (the same statements without
 * their job_runs CTEs: claimJobsStatement / finishJobsStatement). Returns jobs/s.
 * @throws Refused when a job was lost or done twice, or the runs are not exactly one succeeded run per job (none
 *   without runs)
 */
async function statementsRate(
	url: string,
	workers: number,
	depth: number,
	tag: string,
	runs: boolean,
): Promise<number> {
	const pool = new Pool({ connectionString: url, max: workers + 2 });
	pool.on('error', () => undefined);
	const type = `bench_${tag}`;
	// on the pool's named-statement pool, as claimJobs / finishJobs run them
	const named = namedStatementPool(pool);
	const claim = namedStatement(runs ? 'bench_claim_runs' : 'bench_claim', claimJobsStatement({ runs }));
	const finish = namedStatement(runs ? 'bench_finish_runs' : 'bench_finish', finishJobsStatement({ runs }));
	try {
		await pool.query('INSERT INTO ops.jobs (job_type) SELECT $1 FROM generate_series(1, $2)', [type, depth]);
		await pool.query('VACUUM ANALYZE ops.jobs, ops.job_runs');
		await openConnections(workers, pool, named);
		const leaseId = await jobLeaseFor(pool).ready();
		const keyOf = callKeys(tag);
		const finished: number[] = [];
		const start = performance.now();
		await Promise.all(
			Array.from({ length: workers }, async (_, w) => {
				for (;;) {
					const { rows: jobs } = await named.query<{ id: string; claim_token: string }>({
						...claim,
						// claimJobs sends a digest of the call key as the claim key; any text is one
						values: [[type], BATCH, `w${w}`, keyOf(w), leaseId, 30],
					});
					if (jobs.length === 0) return;
					const { rows } = await named.query<{ id: string }>({
						...finish,
						values: [
							jobs.map((j) => j.id),
							jobs.map(() => `w${w}`),
							jobs.map(() => true),
							jobs.map(() => false),
							jobs.map(() => null),
							5,
							300,
							jobs.map((j) => j.claim_token),
						],
					});
					for (const r of rows) finished.push(Number(r.id));
				}
			}),
		);
		const seconds = secondsSince(start);
		refuseUnless(duplicates(finished).length === 0, `statements: ${duplicates(finished).length} jobs finished twice`);
		refuseUnless(finished.length === depth, `statements: ${finished.length} of ${depth} jobs finished`);
		const { rows } = await pool.query<{ done: number; runs: number }>(
			`SELECT count(*) FILTER (WHERE j.status = 'succeeded' AND j.attempts = 1)::int AS done,
			        (SELECT count(*) FROM ops.job_runs r JOIN ops.jobs x ON x.id = r.job_id
			         WHERE x.job_type = $1 AND r.status = 'succeeded' AND r.attempt = 1)::int AS runs
			 FROM ops.jobs j WHERE j.job_type = $1`,
			[type],
		);
		refuseUnless(rows[0].done === depth, `statements: ${rows[0].done} of ${depth} jobs succeeded once`);
		refuseUnless(rows[0].runs === (runs ? depth : 0), `statements: ${rows[0].runs} succeeded runs (runs ${runs})`);
		return depth / seconds;
	} finally {
		await closeJobLeases();
		await endNamedStatementPool(pool);
		await pool.end();
	}
}

const SIDES = ['contracts', 'pg-boss', 'graphile-worker'] as const;
type Side = (typeof SIDES)[number];

/** One measurement of `side`. */
type Measure = (side: Side, workers: number, depth: number, tag: string) => Promise<number>;

/**
 * The median rate of each side over roundsAt(workers) rounds at (workers, depth); the sides' order rotates from
 * round to round (and from one measurement point to the next), so drift of the machine's load favours none of them
 * (with a round count that is not a multiple of 3, one order comes once more than the others).
 */
async function medians(measure: Measure, workers: number, depth: number, k: number): Promise<Record<Side, number>> {
	const samples: Record<Side, number[]> = { contracts: [], 'pg-boss': [], 'graphile-worker': [] };
	for (let round = 0; round < roundsAt(workers); round += 1) {
		const shift = (k + round) % SIDES.length;
		const order = [...SIDES.slice(shift), ...SIDES.slice(0, shift)];
		for (const side of order)
			samples[side].push(
				await measure(side, workers, depth, `d${depth}_w${workers}_r${round}_${side.replace('-', '')}`),
			);
	}
	return {
		contracts: median(samples.contracts),
		'pg-boss': median(samples['pg-boss']),
		'graphile-worker': median(samples['graphile-worker']),
	};
}

/** True when this Node can load both anchors. */
function anchorsLoadHere(): boolean {
	const [major, minor] = process.versions.node.split('.').map(Number);
	return major > ANCHOR_NODE[0] || (major === ANCHOR_NODE[0] && minor >= ANCHOR_NODE[1]);
}

/** Runs this bench again on Node 24 (the anchors' Node) and exits with its status. */
function againOnNode24(): never {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const { ensureNode } = require('../scripts/lib/nodeRuntime') as {
		ensureNode: (major: number, o: { log: (s: string) => void }) => { bin: string; version: string };
	};
	const node = ensureNode(24, { log: console.log });
	console.log(
		`Node ${process.versions.node} cannot load pg-boss 12 / graphile-worker 0.18: running on Node ${node.version}\n`,
	);
	const result = spawnSync(node.bin, ['--import', 'tsx', __filename], { stdio: 'inherit', env: process.env });
	process.exit(result.status ?? 1);
}

async function main() {
	if (!anchorsLoadHere()) againOnNode24();
	const { PG_BOSS_VERSION, pgBossRate } = await import('./anchors/pgBoss');
	const { GRAPHILE_WORKER_VERSION, graphileWorkerRate } = await import('./anchors/graphileWorker');
	const db = await setupDatabase();
	try {
		const measure: Measure = (side, workers, depth, tag) =>
			side === 'contracts'
				? contractsRate(db.url, workers, depth, tag)
				: side === 'pg-boss'
					? pgBossRate(db.url, workers, depth, BATCH, tag)
					: graphileWorkerRate(db.url, workers, depth, BATCH, tag);
		const points = [
			...COUNTS.map((workers) => ({ workers, depth: DEPTH })),
			...DEPTHS.filter((d) => d !== DEPTH).map((depth) => ({ workers: 4, depth })),
		];
		const rows: Array<{ workers: number; depth: number } & Record<Side, number>> = [];
		for (const [k, p] of points.entries()) {
			const m = await medians(measure, p.workers, p.depth, k);
			rows.push({ ...p, ...m });
			console.log(
				`  depth ${p.depth}, ${p.workers} workers: contracts ${rate(m.contracts)} jobs/s, pg-boss ${rate(m['pg-boss'])}, graphile-worker ${rate(m['graphile-worker'])}`,
			);
		}
		// the cost of ops.job_runs at the goal point (4 workers, depth DEPTH): the two statement sets alternating
		const withRuns: number[] = [];
		const withoutRuns: number[] = [];
		for (let round = 0; round < GOAL_ROUNDS; round += 1)
			for (const runs of round % 2 === 0 ? [true, false] : [false, true])
				(runs ? withRuns : withoutRuns).push(
					await statementsRate(db.url, 4, DEPTH, `cost_r${round}_${runs ? 'runs' : 'noruns'}`, runs),
				);
		const cost = { with: median(withRuns), without: median(withoutRuns) };
		const goalPoint = rows.find((r) => r.workers === 4 && r.depth === DEPTH);
		const ratio = (a: number, b: number) => `${(a / b).toFixed(3)}×`;
		console.log(
			`\njobs claimed and finished (batches of ${BATCH}, median of ${ROUNDS} rounds, ${GOAL_ROUNDS} at 4 workers; no job lost or done twice on any side; Node ${process.versions.node}):`,
		);
		console.log(
			`  contracts = Claim Jobs + Finish Job (one statement per batch each); pg-boss ${PG_BOSS_VERSION} = fetch + complete of the batch; graphile-worker ${GRAPHILE_WORKER_VERSION} = its runner, local queue of ${BATCH}, batched completions\n`,
		);
		console.log(
			markdownTable(
				[
					'depth',
					'workers',
					'contracts jobs/s',
					'pg-boss jobs/s',
					'graphile-worker jobs/s',
					'contracts / pg-boss',
					'contracts / graphile-worker',
				],
				rows.map((r) => [
					r.depth,
					r.workers,
					rate(r.contracts),
					rate(r['pg-boss']),
					rate(r['graphile-worker']),
					ratio(r.contracts, r['pg-boss']),
					ratio(r.contracts, r['graphile-worker']),
				]),
			),
		);
		console.log(
			`\nwhat ops.job_runs costs (4 workers, depth ${DEPTH}, median of ${GOAL_ROUNDS}; the shipped statements, named, with and without their job_runs CTEs):`,
		);
		console.log(
			markdownTable(
				['statements', 'jobs/s', 'without / with', ...(goalPoint ? ['/ pg-boss', '/ graphile-worker'] : [])],
				[
					['with job_runs (shipped)', cost.with, 1],
					['without job_runs', cost.without, cost.without / cost.with],
				].map(([name, r, x]) => [
					name as string,
					rate(r as number),
					`${(x as number).toFixed(3)}×`,
					...(goalPoint
						? [ratio(r as number, goalPoint['pg-boss']), ratio(r as number, goalPoint['graphile-worker'])]
						: []),
				]),
			),
		);
		for (const r of rows.filter((x) => x.workers === 4 && x.depth >= 3000))
			for (const anchor of ['pg-boss', 'graphile-worker'] as const) {
				const version = anchor === 'pg-boss' ? PG_BOSS_VERSION : GRAPHILE_WORKER_VERSION;
				recordGoal({
					goal: 'P2',
					what: `Claim Jobs + Finish Job, 4 workers, depth ${r.depth}, batches of ${BATCH} (Node ${process.versions.node})`,
					measured: `${rate(r.contracts)} jobs/s`,
					baseline: `${anchor} ${version} ${rate(r[anchor])} jobs/s`,
					ratio: r.contracts / r[anchor],
					atLeast: 1.0,
				});
			}
		const curve = rows.filter((r) => r.depth === DEPTH);
		// P3's jobs half: the curve over worker counts; reaching here means no job was lost or done twice.
		recordGoal({
			goal: 'P3',
			what: `jobs/s at ${curve.map((r) => r.workers).join(' / ')} workers (depth ${DEPTH}), none lost or done twice`,
			measured: curve.map((r) => rate(r.contracts)).join(' / '),
			baseline: `pg-boss ${curve.map((r) => rate(r['pg-boss'])).join(' / ')}; graphile-worker ${curve.map((r) => rate(r['graphile-worker'])).join(' / ')}`,
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
