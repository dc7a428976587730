/**
 * `npm run bench:captures`: pipeline captures/s at 1, 2, 4, 8 racing workers (issue 14, the captures half
 * of P3), in one run, on one fresh database.
 * Per measurement, BENCH_RUNS (default 1,000) new runs (status NEW, one user each) are created; then every
 * worker tries to capture EVERY run, each in its own (seeded) random order — as in n8n, where the Pipeline
 * Trigger tells every listening worker of every run and the workers race — so each run sees `workers`
 * attempts and exactly one must win.
 *   contracts — Pipeline Capture's Capture (capture.operation.ts `capture`, transition CAPTURE_ANALYSIS, its blocking
 *               rule and its answer to a loser).
 *   baseline  — the bare compare-and-set a capture cannot go below: `UPDATE … SET status, captured_by,
 *               capture_token WHERE id = $1 AND status = 'NEW' RETURNING capture_token`, same workers, same
 *               orders, on runs of its own.
 * captures/s = runs / time until every worker has tried every run; attempts/s = runs × workers / that time.
 * Refuses to report unless every run was captured exactly once: one winner per run in the workers' answers,
 * every loser told TAKEN with the winner's state, and in the database every run in ANALYZING under the
 * winner's worker and capture token. BENCH_WORKER_COUNTS (default 1,2,4,8), BENCH_CAPTURE_ROUNDS (default 3; the
 * median is reported); each side has a pool of workers + 2 connections; the order of the sides alternates.
 */
import { Pool } from 'pg';
import { capture } from '../nodes/PipelineCapture/actions/run/capture.operation';
import { shippedDefinition } from '../nodes/PipelineCapture/engine/definition';
import { setupDatabase } from '../test/helpers/db';
import { recordGoal } from './goals';
import {
	alternatingMedians,
	envInt,
	markdownTable,
	rate,
	Refused,
	refuseUnless,
	secondsSince,
	workerCounts,
} from './report';

const RUNS = envInt('BENCH_RUNS', 1000);
const ROUNDS = envInt('BENCH_CAPTURE_ROUNDS', 3);
const COUNTS = workerCounts();

/** One worker's try: null when it lost, else the token it won with. */
type Attempt = (pool: Pool, runId: string, worker: string) => Promise<string | null>;

const definition = shippedDefinition();

const contracts: Attempt = async (pool, runId, worker) => {
	const result = await capture(pool, definition, { run_id: runId, transition: 'CAPTURE_ANALYSIS', worker });
	if (result.captured) return String(result.run.capture_token);
	// a loser is told who won: the run as the winner left it, never the stale NEW
	refuseUnless(
		result.reason === 'TAKEN' && result.run.status === 'ANALYZING',
		`contracts: a loser was told ${result.reason} with the run in ${result.run.status}`,
	);
	return null;
};

const BARE_CAS =
	"UPDATE maas.pipeline_runs SET status = 'ANALYZING', previous_transition = 'CAPTURE_ANALYSIS', captured_by = $2, capture_token = gen_random_uuid(), updated_at = now() WHERE id = $1 AND status = 'NEW' RETURNING capture_token";

const bareCas: Attempt = async (pool, runId, worker) => {
	const { rows } = await pool.query<{ capture_token: string }>(BARE_CAS, [runId, worker]);
	return rows.length === 1 ? rows[0].capture_token : null;
};

/** A seeded shuffle (mulberry32), so a rerun races the same orders. */
function shuffled<T>(items: T[], seed: number): T[] {
	let a = seed >>> 0;
	const random = () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
	const out = [...items];
	for (let i = out.length - 1; i > 0; i -= 1) {
		const j = Math.floor(random() * (i + 1));
		[out[i], out[j]] = [out[j], out[i]];
	}
	return out;
}

/** `workers` racing `attempt` over RUNS fresh runs. Returns captures/s; refuses unless each run won once. */
async function measure(url: string, name: string, attempt: Attempt, workers: number, round: number): Promise<number> {
	const pool = new Pool({ connectionString: url, max: workers + 2 });
	pool.on('error', () => undefined);
	const tag = `bench-${name}-w${workers}-r${round}-`;
	try {
		const { rows } = await pool.query<{ id: string }>(
			"INSERT INTO maas.pipeline_runs (user_id, user_query) SELECT $1 || g, 'q' FROM generate_series(1, $2) g RETURNING id",
			[tag, RUNS],
		);
		const ids = rows.map((r) => r.id);
		await pool.query('VACUUM ANALYZE maas.pipeline_runs');
		const clients = await Promise.all(Array.from({ length: workers }, () => pool.connect()));
		for (const client of clients) client.release();
		const winners = new Map<string, Array<{ worker: string; token: string }>>();
		const start = performance.now();
		await Promise.all(
			Array.from({ length: workers }, async (_, w) => {
				const worker = `w${w}`;
				for (const id of shuffled(ids, 1000 * workers + 31 * w + round)) {
					const token = await attempt(pool, id, worker);
					if (token !== null) winners.set(id, [...(winners.get(id) ?? []), { worker, token }]);
				}
			}),
		);
		const seconds = secondsSince(start);
		const twice = [...winners.values()].filter((w) => w.length > 1).length;
		refuseUnless(twice === 0, `${name}: ${twice} runs captured by more than one worker`);
		refuseUnless(winners.size === RUNS, `${name}: ${RUNS - winners.size} of ${RUNS} runs never captured`);
		const won = [...winners.entries()].map(([id, [w]]) => ({ id, ...w }));
		const check = await pool.query<{ ok: number; all: number }>(
			`SELECT count(*) FILTER (WHERE r.status = 'ANALYZING' AND r.captured_by = x.worker AND r.capture_token = x.token)::int AS ok, count(*)::int AS all
			 FROM maas.pipeline_runs r JOIN unnest($1::uuid[], $2::text[], $3::uuid[]) AS x(id, worker, token) ON x.id = r.id`,
			[won.map((w) => w.id), won.map((w) => w.worker), won.map((w) => w.token)],
		);
		refuseUnless(
			check.rows[0].all === RUNS && check.rows[0].ok === RUNS,
			`${name}: ${check.rows[0].ok} of ${RUNS} runs in the database are ANALYZING under their winner's token`,
		);
		return RUNS / seconds;
	} finally {
		await pool.end();
	}
}

async function main() {
	const db = await setupDatabase();
	try {
		const measured = await alternatingMedians(COUNTS, ROUNDS, (side, workers, round) =>
			side === 'ours'
				? measure(db.url, 'capture', contracts, workers, round)
				: measure(db.url, 'cas', bareCas, workers, round),
		);
		const rows = measured.map((r) => ({ workers: r.workers, ours: r.ours, cas: r.baseline }));
		for (const r of rows)
			console.log(
				`  ${r.workers} workers: Capture ${rate(r.ours)} captures/s, bare compare-and-set ${rate(r.cas)}/s, ratio ${(r.ours / r.cas).toFixed(2)}x`,
			);
		const one = rows.find((r) => r.workers === 1) ?? rows[0];
		console.log(
			`\npipeline captures, every worker racing for every run (${RUNS} runs per measurement, median of ${ROUNDS}; each run captured exactly once):\n`,
		);
		console.log(
			markdownTable(
				[
					'workers',
					'Capture captures/s',
					'attempts/s',
					`vs ${one.workers} worker`,
					'bare compare-and-set captures/s',
					'Capture / bare',
				],
				rows.map((r) => [
					r.workers,
					rate(r.ours),
					rate(r.ours * r.workers),
					`${(r.ours / one.ours).toFixed(2)}×`,
					rate(r.cas),
					`${(r.ours / r.cas).toFixed(2)}×`,
				]),
			),
		);
		// P3: the curve over worker counts; reaching here means every run was captured exactly once.
		recordGoal({
			goal: 'P3',
			what: `captures/s at ${rows.map((r) => r.workers).join(' / ')} workers, each run captured exactly once`,
			measured: rows.map((r) => rate(r.ours)).join(' / '),
			baseline: `bare compare-and-set ${rows.map((r) => rate(r.cas)).join(' / ')}`,
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
