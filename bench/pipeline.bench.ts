/**
 * `npm run bench:pipeline` (issue 29 P7): the MaaS pipeline end to end on n8n 2.4.8 — runs/s and submit →
 * push latency (p50/p95) with 1, 20 and 200 concurrent clients, the stand-in model answering at once — on
 * a single process and in queue mode with 1 and 2 workers, against the n8n floor of the same chain
 * measured in the same run.
 *   ours  — the shipped M00, M10–M16, WF99, WF99e and M17 (a copy on a free port; test/helpers/push.ts);
 *           every client is a user with an authenticated Pipeline Push WebSocket who submits runs one after
 *           another through POST /webhook/api/query and waits for each pushed answer (bench/pipelineWorkloads.ts);
 *   floor — bench/workflows/BENCH_pipeline_floor_*.json (bench/pipelineFloor.ts): the same workflows with
 *           every node of this package a No Op, the NOTIFY hand-offs HTTP Requests to a webhook standing for
 *           the Pipeline Trigger and the push an HTTP Request to the bench — the same 13 executions per run
 *           and the same hand-offs, through n8n alone. Ratio ours / floor (runs/s): what our nodes cost.
 * Setups (as bench:queue): single — `n8n start` (n8n's SQLite); queue-2w / queue-1w — one cluster
 * (scripts/lib/n8nQueue.js: main + 2 workers, Redis, n8n's database on PostgreSQL), worker-2 stopped for 1w.
 * Each setup has its own contracts database (the trigger LISTENs per database), both n8n run side by side.
 * A client count is measured with ours and the floor back to back (the order alternating), after a warm-up
 * of both; after each measurement the bench waits until the chain is done (ours: every run archived by
 * M14; both: no n8n execution left running) so the next one starts from idle.
 * Refuses to print numbers (exit 1) unless every submitted run got exactly one pushed answer — to its own
 * client, its own answer — and nothing was pushed for a run nobody submitted.
 * Profile, per setup and client count: where a run's time goes (ours: the time between the status
 * notifications of pipeline_events seen by a LISTEN of the bench — waiting in NEW, each step, each
 * hand-off — and from COMPLETED to the push), per workflow (n8n's execution records: executions per run,
 * queue wait createdAt → startedAt, duration startedAt → stoppedAt) and per node (runData executionTime of
 * a sample of executions), ours next to the floor.
 * Records the P7 goal rows (bench/goals.ts): ours / floor runs/s at the largest client count per setup, ≥ 0.7×.
 * Environment:
 *   BENCH_PIPELINE_CLIENTS   concurrent clients, a comma list (default 1,20,200)
 *   BENCH_PIPELINE_RUNS      runs per measurement at least (default 6): each client submits
 *                            ceil(max(clients, RUNS) / clients) runs one after another (1 client: 6 runs;
 *                            20 clients: 1 each; 200 clients: 1 each, all at once as in the issue)
 *   BENCH_PIPELINE_SETUPS    which setups, in this order (default single,queue-2w,queue-1w)
 *   BENCH_PIPELINE_ROUNDS    measurements per setup, side and client count (default 1; the median rate, the
 *                            latencies of all rounds)
 *   BENCH_PIPELINE_CONCURRENCY  n8n worker --concurrency (default 10, n8n's default)
 *   BENCH_PIPELINE_TIMEOUT_S  how long a run may take before the bench gives up and refuses (default 300)
 *   BENCH_PIPELINE_PROFILE_SAMPLE  executions per workflow whose runData is read for the per-node profile (default 30)
 *   BENCH_PIPELINE_TRANSCRIPTS=<dir>  keeps every n8n process's log there
 *   BENCH_PIPELINE_WHAT_IF=no-retry  ours without Retry On Fail on our nodes (a what-if: see WHAT_IF; no goal rows)
 * Queue setups are skipped (with the reason) when Redis does not answer at REDIS_HOST:REDIS_PORT (127.0.0.1:6379).
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { setupDatabase, type TestDatabase } from '../test/helpers/db';
import { testSecret } from '../test/helpers/jwt';
import { llmCredential, normalModel, stepOf } from '../test/helpers/maasModel';
import { ModelStandIn } from '../test/helpers/modelStandIn';
import { jwtCredential, WORKFLOWS } from '../test/helpers/n8n';
import { freePort, m17Copy, pushCredential } from '../test/helpers/push';
import { PushClient } from '../test/helpers/pushClient';
import { recordGoal } from './goals';
import { FLOOR_OF, FLOOR_QUERY_HOOK, FLOOR_TRIGGER_HOOK, floorFiles } from './pipelineFloor';
import {
	latencies,
	measureFloor,
	measureOurs,
	PushReceiver,
	quantile,
	StatusLog,
	type Measurement,
	type Target,
} from './pipelineWorkloads';
import { envInt, markdownTable, median, Refused, refuseUnless } from './report';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../scripts/lib/n8n');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const queue = require('../scripts/lib/n8nQueue');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres } = require('../scripts/lib/postgres');

type Setup = 'single' | 'queue-1w' | 'queue-2w';
const LABEL: Record<Setup, string> = {
	single: 'single process',
	'queue-1w': 'queue mode, 1 worker',
	'queue-2w': 'queue mode, 2 workers',
};

function list(name: string, fallback: string): string[] {
	return (process.env[name] || fallback)
		.split(',')
		.map((s) => s.trim())
		.filter(Boolean);
}

const CLIENTS = list('BENCH_PIPELINE_CLIENTS', '1,20,200').map((s) => {
	const n = Number(s);
	if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_PIPELINE_CLIENTS: ${s} is not a positive integer`);
	return n;
});
const SETUPS = list('BENCH_PIPELINE_SETUPS', 'single,queue-2w,queue-1w').map((s) => {
	if (!(s in LABEL)) throw new Error(`BENCH_PIPELINE_SETUPS: unknown setup ${s} (${Object.keys(LABEL).join(', ')})`);
	return s as Setup;
});
const MIN_RUNS = envInt('BENCH_PIPELINE_RUNS', 6);
const ROUNDS = envInt('BENCH_PIPELINE_ROUNDS', 1);
const CONCURRENCY = envInt('BENCH_PIPELINE_CONCURRENCY', 10);
const SAMPLE = envInt('BENCH_PIPELINE_PROFILE_SAMPLE', 30);
const GOAL = 0.7;
/**
 * BENCH_PIPELINE_WHAT_IF=no-retry: ours with Retry On Fail off on every Pipeline Capture node (M11–M13:
 * Capture, Complete Step, Fail Run) — a what-if, not the shipped workflows: n8n 2.4.8 takes a first output
 * item whose json has an `error` key (our SuccessEnvelope's `error: null`) for a failed try and runs the node
 * again after waitBetweenTries, up to maxTries (n8n-core workflow-execute.js). No goal rows are recorded.
 */
const WHAT_IF = process.env.BENCH_PIPELINE_WHAT_IF === 'no-retry';
if (process.env.BENCH_PIPELINE_WHAT_IF && !WHAT_IF)
	throw new Error(`BENCH_PIPELINE_WHAT_IF: only "no-retry" is known, got ${process.env.BENCH_PIPELINE_WHAT_IF}`);

/** A copy of the workflow `file` (in a temp folder added to `temp`) without Retry On Fail on our nodes. */
function withoutRetries(file: string, temp: string[]): string {
	const workflow = JSON.parse(fs.readFileSync(file, 'utf8'));
	let changed = false;
	for (const node of workflow.nodes)
		if (node.retryOnFail && String(node.type).startsWith('n8n-nodes-contracts.')) {
			delete node.retryOnFail;
			delete node.maxTries;
			delete node.waitBetweenTries;
			changed = true;
		}
	if (!changed) return file;
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-p7-whatif-'));
	temp.push(dir);
	const out = path.join(dir, path.basename(file));
	fs.writeFileSync(out, JSON.stringify(workflow));
	return out;
}
const REDIS = { host: process.env.REDIS_HOST || '127.0.0.1', port: Number(process.env.REDIS_PORT || 6379) };
const ROOT = path.join(__dirname, '..');
const MAAS = path.join(WORKFLOWS, 'maas');

/** Shipped workflow ids of the chain (the executions a run makes), in chain order. */
const CHAIN = [
	'M00RequestHndlr',
	'M10Orchestrator',
	'M16Dispatch',
	'M11Analyzer',
	'M12Assembler',
	'M13FinalResp',
	'M14Archivist',
];
const FLOOR_ID = Object.fromEntries(CHAIN.map((id) => [id, FLOOR_OF[id].id]));
const SHORT: Record<string, string> = Object.fromEntries(CHAIN.map((id) => [id, id.slice(0, 3)]));
for (const id of CHAIN) SHORT[FLOOR_ID[id]] = id.slice(0, 3);

const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One execution as n8n recorded it (epoch ms). */
interface ExecutionRow {
	id: number;
	workflowId: string;
	status: string;
	createdAt: number;
	startedAt: number | null;
	stoppedAt: number | null;
}

/** Reads n8n's own records: PostgreSQL (queue mode) or the single process's SQLite. */
interface N8nRecords {
	executionsAfter(id: number): Promise<ExecutionRow[]>;
	maxId(): Promise<number>;
	/** node name → executionTime (ms) of each run of it, for each execution id */
	nodeTimes(ids: number[]): Promise<Map<number, Record<string, number>>>;
	close(): Promise<void>;
}

function epoch(value: unknown): number | null {
	if (value === null || value === undefined) return null;
	if (value instanceof Date) return value.getTime();
	const s = String(value);
	return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(s) ? s : `${s.replace(' ', 'T')}Z`).getTime();
}

/** flatted (n8n's execution data format), from n8n's install. */
function flattedOf(bin: string): { parse(text: string): unknown } {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	return require(require.resolve('flatted', { paths: [path.dirname(bin)] }));
}

function nodeTimesOf(flatted: { parse(text: string): unknown }, data: string): Record<string, number> {
	const parsed = flatted.parse(data) as { resultData?: { runData?: Record<string, { executionTime?: number }[]> } };
	const out: Record<string, number> = {};
	for (const [node, runs] of Object.entries(parsed.resultData?.runData ?? {}))
		out[node] = runs.reduce((sum, r) => sum + (r.executionTime ?? 0), 0);
	return out;
}

async function postgresRecords(url: string, bin: string): Promise<N8nRecords> {
	const client = new Client({ connectionString: url });
	client.on('error', () => undefined);
	await client.connect();
	const flatted = flattedOf(bin);
	return {
		async executionsAfter(id) {
			const { rows } = await client.query(
				'SELECT id, "workflowId", status, "createdAt", "startedAt", "stoppedAt" FROM execution_entity WHERE id > $1 ORDER BY id',
				[id],
			);
			return rows.map((r) => ({
				id: Number(r.id),
				workflowId: r.workflowId,
				status: r.status,
				createdAt: epoch(r.createdAt)!,
				startedAt: epoch(r.startedAt),
				stoppedAt: epoch(r.stoppedAt),
			}));
		},
		async maxId() {
			return Number((await client.query('SELECT coalesce(max(id), 0) AS id FROM execution_entity')).rows[0].id);
		},
		async nodeTimes(ids) {
			const { rows } = await client.query(
				'SELECT "executionId", data FROM execution_data WHERE "executionId" = ANY($1)',
				[ids],
			);
			return new Map(rows.map((r) => [Number(r.executionId), nodeTimesOf(flatted, r.data)]));
		},
		close: () => client.end(),
	};
}

async function sqliteRecords(folder: string, bin: string): Promise<N8nRecords> {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const sqlite3 = require(require.resolve('sqlite3', { paths: [path.dirname(bin)] }));
	const db = new sqlite3.Database(path.join(folder, '.n8n', 'database.sqlite'), sqlite3.OPEN_READONLY);
	const all = <T>(sql: string, params: unknown[] = []): Promise<T[]> =>
		new Promise((resolve, reject) =>
			db.all(sql, params, (error: Error | null, rows: T[]) => (error ? reject(error) : resolve(rows))),
		);
	const flatted = flattedOf(bin);
	return {
		async executionsAfter(id) {
			const rows = await all<Record<string, unknown>>(
				'SELECT id, workflowId, status, createdAt, startedAt, stoppedAt FROM execution_entity WHERE id > ? ORDER BY id',
				[id],
			);
			return rows.map((r) => ({
				id: Number(r.id),
				workflowId: String(r.workflowId),
				status: String(r.status),
				createdAt: epoch(r.createdAt)!,
				startedAt: epoch(r.startedAt),
				stoppedAt: epoch(r.stoppedAt),
			}));
		},
		async maxId() {
			return Number((await all<{ id: number }>('SELECT coalesce(max(id), 0) AS id FROM execution_entity'))[0].id);
		},
		async nodeTimes(ids) {
			if (ids.length === 0) return new Map();
			const rows = await all<{ executionId: number; data: string }>(
				`SELECT executionId, data FROM execution_data WHERE executionId IN (${ids.map(() => '?').join(',')})`,
				ids,
			);
			return new Map(rows.map((r) => [Number(r.executionId), nodeTimesOf(flatted, r.data)]));
		},
		close: () => new Promise<void>((resolve) => db.close(() => resolve())),
	};
}

/** One measured side of one setup and client count, with what n8n recorded for it. */
interface Sample {
	m: Measurement;
	executions: ExecutionRow[];
	nodeTimes: Map<number, Record<string, number>>;
	/** ours: run id → status → epoch ms of its notification */
	statuses?: Map<string, Map<string, number>>;
	archivedAt?: Map<string, number>;
}

interface Side {
	setup: Setup;
	target: Target;
	records: N8nRecords;
	status: StatusLog;
	db: TestDatabase;
}

async function waitPushPort(url: string): Promise<void> {
	const end = Date.now() + 120_000;
	for (;;) {
		try {
			(await PushClient.connect(url)).close();
			return;
		} catch (error) {
			if (Date.now() > end) throw new Error(`push port not open: ${error}`);
			await sleep(500);
		}
	}
}

/**
 * Waits until the chain of a measurement is done: ours — every run archived (M14 ran); floor — one M14
 * floor execution per run; both — no execution of n8n left new/running. Returns the executions since `after`.
 */
async function quiesce(side: Side, m: Measurement, after: number): Promise<ExecutionRow[]> {
	const end = Date.now() + 300_000;
	const ids = m.runs.map((r) => r.requestId);
	for (;;) {
		const rows = await side.records.executionsAfter(after);
		const busy = rows.filter((r) => ['new', 'running', 'waiting'].includes(r.status)).length;
		let done: boolean;
		if (m.side === 'ours') {
			const { rows: a } = await side.db.pool.query(
				'SELECT count(archived_at)::int AS n FROM maas.pipeline_runs WHERE id = ANY($1)',
				[ids],
			);
			done = a[0].n === ids.length;
		} else {
			done = rows.filter((r) => r.workflowId === FLOOR_ID.M14Archivist && r.status === 'success').length >= ids.length;
		}
		if (done && busy === 0) return rows;
		if (Date.now() > end)
			throw new Refused(
				`refusing to report: ${m.side} ${m.clients} clients on ${side.setup}: the chain did not finish within 300 s (${busy} executions busy, done ${done})`,
			);
		await sleep(500);
	}
}

async function main() {
	if (spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0)
		throw new Error('build failed');
	const floor = floorFiles();
	const wantQueue = SETUPS.some((s) => s !== 'single');
	const redisDown = wantQueue ? await queue.redisUnavailable(REDIS) : null;
	const setups = SETUPS.filter((s) => s === 'single' || !redisDown);
	if (redisDown)
		console.log(
			`bench:pipeline: queue-mode setups skipped: ${redisDown} (queue mode needs Redis; set REDIS_HOST / REDIS_PORT)`,
		);
	if (setups.length === 0) return;
	const loadBefore = os.loadavg();
	const started = performance.now();
	const bin = harness.ensureN8n({ log });
	const tarball = harness.packPackage();
	const model = new ModelStandIn();
	const receiver = new PushReceiver();
	const JWT = testSecret();
	const PUSH = randomBytes(32).toString('base64url');
	const temp: string[] = [];
	const sides = new Map<'single' | 'queue', Side>();
	let single:
		| { process?: ChildProcess; folder: string; stop(): Promise<void>; remove(): void; transcript(): string }
		| undefined;
	let cluster:
		| {
				main: { url: string; process?: ChildProcess };
				workers: { process?: ChildProcess; stop(): Promise<void> }[];
				n8nDatabaseUrl: string;
				importCredentials(c: unknown[]): Promise<void>;
				importAndPublish(f: string[]): Promise<string[]>;
				start(): Promise<string>;
				startWorker(i: number): Promise<string>;
				saveTranscripts(dir: string): void;
				stop(): Promise<void>;
		  }
		| undefined;
	let server: { url: string; stop(): Promise<void> } | undefined;
	const dbs: TestDatabase[] = [];
	try {
		await model.up();
		model.respond = normalModel;
		await receiver.up();
		const workflowsFor = (pushPort: number) => {
			const m17 = m17Copy(pushPort);
			temp.push(path.dirname(m17));
			const shipped = fs
				.readdirSync(MAAS)
				.filter((f) => /^M(00|1[0-6])_.*\.json$/.test(f))
				.map((f) => (WHAT_IF ? withoutRetries(path.join(MAAS, f), temp) : path.join(MAAS, f)));
			return [
				path.join(WORKFLOWS, 'WF99e_catch_all.json'),
				path.join(WORKFLOWS, 'WF99_global_err_handler.json'),
				...shipped,
				m17,
				...floor,
			];
		};
		const credentials = (db: TestDatabase) => [
			harness.postgresCredential(db.url),
			llmCredential(model.url),
			jwtCredential(JWT),
			pushCredential(PUSH),
		];
		const hooks = ['api/query', FLOOR_QUERY_HOOK, FLOOR_TRIGGER_HOOK];
		const sideFor = async (
			setup: 'single' | 'queue',
			webhookUrl: string,
			pushPort: number,
			db: TestDatabase,
			records: N8nRecords,
		) => {
			const status = new StatusLog(db.url);
			await status.start();
			const pushUrl = `ws://127.0.0.1:${pushPort}/api/ws`;
			await waitPushPort(pushUrl);
			sides.set(setup, {
				setup: setup === 'single' ? 'single' : 'queue-2w',
				target: { webhookUrl, pushUrl, pool: db.pool, jwtSecret: JWT, pushSecret: PUSH },
				records,
				status,
				db,
			});
		};
		if (setups.includes('single')) {
			const db = await setupDatabase();
			dbs.push(db);
			const port = await freePort();
			log('starting the single-process n8n…');
			const one = harness.createInstance({ tarball, bin });
			single = one;
			await one.importCredentials(credentials(db));
			await one.importAndPublish(workflowsFor(port));
			const url = await one.start();
			await one.waitForWebhooks(hooks);
			await sideFor('single', url, port, db, await sqliteRecords(one.folder, bin));
		}
		if (setups.some((s) => s !== 'single')) {
			const db = await setupDatabase();
			dbs.push(db);
			const port = await freePort();
			const pg: { url: string; stop(): Promise<void> } = await resolvePostgres();
			server = pg;
			log(`starting the queue-mode cluster (main + 2 workers, --concurrency=${CONCURRENCY})…`);
			const q = await queue.createQueueCluster({
				tarball,
				bin,
				serverUrl: pg.url,
				workers: 2,
				concurrency: CONCURRENCY,
				redis: REDIS,
			});
			cluster = q;
			await q.importCredentials(credentials(db));
			await q.importAndPublish(workflowsFor(port));
			const url = await q.start();
			await q.main.waitForWebhooks(hooks);
			await sideFor('queue', url, port, db, await postgresRecords(q.n8nDatabaseUrl, bin));
		}

		const samples = new Map<string, Sample[]>();
		const key = (setup: Setup, side: 'ours' | 'floor', clients: number) => `${setup}|${side}|${clients}`;
		let tags = 0;
		const measure = async (
			setup: Setup,
			side: 'ours' | 'floor',
			clients: number,
			runs: number,
			warm = false,
		): Promise<Sample> => {
			const s = sides.get(setup === 'single' ? 'single' : 'queue')!;
			s.setup = setup;
			const tag = `p7-${setup}-${side}-${clients}-${tags++}`;
			const after = await s.records.maxId();
			const calls = model.requests.length;
			const m =
				side === 'ours'
					? await measureOurs(s.target, clients, runs, tag)
					: await measureFloor(s.target, receiver, clients, runs, tag);
			const executions = (await quiesce(s, m, after)).filter((e) => e.id > after);
			const sample: Sample = { m, executions, nodeTimes: new Map() };
			if (side === 'ours') {
				// each step called the model once per run (a step captured twice would call it twice)
				const steps: Record<string, number> = {};
				for (const r of model.requests.slice(calls)) steps[stepOf(r.body)] = (steps[stepOf(r.body)] ?? 0) + 1;
				refuseUnless(
					['analyzer', 'assembler', 'responder'].every((k) => steps[k] === m.runs.length) &&
						(steps.archivist ?? 0) >= m.runs.length,
					`ours: model calls per step ${JSON.stringify(steps)} for ${m.runs.length} runs`,
				);
				const ids = m.runs.map((r) => r.requestId);
				sample.statuses = new Map(ids.map((id) => [id, s.status.seen.get(id) ?? new Map()]));
				const { rows } = await s.db.pool.query<{ id: string; archived_at: Date }>(
					'SELECT id::text, archived_at FROM maas.pipeline_runs WHERE id = ANY($1)',
					[ids],
				);
				sample.archivedAt = new Map(rows.map((r) => [r.id, r.archived_at.getTime()]));
			}
			if (!warm) {
				const byWorkflow = new Map<string, number[]>();
				for (const e of executions) byWorkflow.set(e.workflowId, [...(byWorkflow.get(e.workflowId) ?? []), e.id]);
				const pick = [...byWorkflow.values()].flatMap((ids) => ids.slice(0, SAMPLE));
				sample.nodeTimes = await s.records.nodeTimes(pick);
			}
			const lat = latencies(m);
			log(
				`${warm ? 'warm-up ' : ''}${LABEL[setup]}, ${side}, ${clients} client(s) × ${runs}: ${m.rate.toFixed(2)} runs/s, submit → push p50 ${quantile(lat, 0.5).toFixed(2)} s, p95 ${quantile(lat, 0.95).toFixed(2)} s; ${executions.length} executions`,
			);
			return sample;
		};
		const workerTwoRunning = () => {
			const child = cluster?.workers[1].process;
			return child !== undefined && child.exitCode === null && child.signalCode === null;
		};
		const warmUp = async (setup: Setup) => {
			for (const side of ['ours', 'floor'] as const) await measure(setup, side, 4, 1, true);
		};
		for (const setup of setups) {
			if (setup === 'queue-1w' && workerTwoRunning()) {
				log('stopping worker-2 (SIGTERM)…');
				await cluster!.workers[1].stop();
			}
			if (setup === 'queue-2w' && cluster && !workerTwoRunning()) {
				log('starting worker-2 again…');
				await cluster.startWorker(1);
			}
			await warmUp(setup);
			let k = 0;
			for (const clients of CLIENTS) {
				const runs = Math.ceil(Math.max(clients, MIN_RUNS) / clients);
				for (let round = 0; round < ROUNDS; round++, k++) {
					for (const side of k % 2 === 0 ? (['ours', 'floor'] as const) : (['floor', 'ours'] as const)) {
						const s = await measure(setup, side, clients, runs);
						samples.set(key(setup, side, clients), [...(samples.get(key(setup, side, clients)) ?? []), s]);
					}
				}
			}
		}

		// ---- report ----
		const rateOf = (setup: Setup, side: 'ours' | 'floor', clients: number) =>
			median(samples.get(key(setup, side, clients))!.map((s) => s.m.rate));
		const latOf = (setup: Setup, side: 'ours' | 'floor', clients: number) =>
			samples.get(key(setup, side, clients))!.flatMap((s) => latencies(s.m));
		const runsOf = (setup: Setup, side: 'ours' | 'floor', clients: number) =>
			samples.get(key(setup, side, clients))![0].m.runs.length;
		console.log(
			`\nMaaS pipeline end to end on n8n ${harness.N8N_VERSION} (Node ${process.versions.node}), stand-in model answering at once; ${ROUNDS} round(s), median runs/s; latency submit → pushed answer over every run.`,
		);
		console.log(
			`Every run got exactly one pushed answer, its own (ours: PushClient WebSockets on M17; floor: the bench's receiver). Load average before ${loadBefore
				.map((l) => l.toFixed(2))
				.join(' ')}, after ${os
				.loadavg()
				.map((l) => l.toFixed(2))
				.join(' ')} (${os.cpus().length} cores); queue workers --concurrency=${CONCURRENCY}.\n`,
		);
		const s2 = (x: number) => x.toFixed(2);
		console.log(
			markdownTable(
				[
					'setup',
					'clients',
					'runs',
					'ours runs/s',
					'floor runs/s',
					'ours / floor',
					'ours p50 / p95 s',
					'floor p50 / p95 s',
				],
				setups.flatMap((setup) =>
					CLIENTS.map((clients) => {
						const lo = latOf(setup, 'ours', clients);
						const lf = latOf(setup, 'floor', clients);
						return [
							LABEL[setup],
							clients,
							runsOf(setup, 'ours', clients),
							s2(rateOf(setup, 'ours', clients)),
							s2(rateOf(setup, 'floor', clients)),
							`${(rateOf(setup, 'ours', clients) / rateOf(setup, 'floor', clients)).toFixed(3)}×`,
							`${s2(quantile(lo, 0.5))} / ${s2(quantile(lo, 0.95))}`,
							`${s2(quantile(lf, 0.5))} / ${s2(quantile(lf, 0.95))}`,
						];
					}),
				),
			),
		);

		// where a run's time goes (ours), from the status notifications
		const SEGMENTS: Array<[string, string | null, string | null]> = [
			['submit → NEW (M00: Create Run)', null, 'NEW'],
			['waiting in NEW (→ M10 → M16 → M11 Capture)', 'NEW', 'ANALYZING'],
			['M11 Analyzer (capture → done)', 'ANALYZING', 'ANALYZED'],
			['hand-off ANALYZED → M12 Capture', 'ANALYZED', 'ASSEMBLING'],
			['M12 Assembler', 'ASSEMBLING', 'READY'],
			['hand-off READY → M13 Capture', 'READY', 'RESPONDING'],
			['M13 Final Responder', 'RESPONDING', 'COMPLETED'],
			['COMPLETED → pushed (M17)', 'COMPLETED', null],
		];
		const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
		console.log('\nWhere a run of ours spends its time (mean ms per run, from the pipeline_events notifications):\n');
		const cols = setups.flatMap((setup) => CLIENTS.map((clients) => ({ setup, clients })));
		console.log(
			markdownTable(
				['segment', ...cols.map((c) => `${LABEL[c.setup]}, ${c.clients}`)],
				[
					...SEGMENTS.map(([label, from, to]) => [
						label,
						...cols.map(({ setup, clients }) => {
							const xs = samples.get(key(setup, 'ours', clients))!.flatMap((s) =>
								s.m.runs.map((r) => {
									const seen = s.statuses!.get(r.requestId)!;
									const a = from === null ? r.submittedAt : seen.get(from);
									const b = to === null ? r.pushedAt : seen.get(to);
									return a === undefined || b === undefined ? NaN : b - a;
								}),
							);
							return mean(xs.filter((x) => !Number.isNaN(x))).toFixed(0);
						}),
					]),
					[
						'total submit → push',
						...cols.map(({ setup, clients }) => (1000 * mean(latOf(setup, 'ours', clients))).toFixed(0)),
					],
					[
						'(after the push) COMPLETED → archived (M14)',
						...cols.map(({ setup, clients }) =>
							mean(
								samples
									.get(key(setup, 'ours', clients))!
									.flatMap((s) =>
										s.m.runs.map(
											(r) => s.archivedAt!.get(r.requestId)! - (s.statuses!.get(r.requestId)!.get('COMPLETED') ?? NaN),
										),
									),
							).toFixed(0),
						),
					],
				],
			),
		);

		// per workflow: executions per run, queue wait and duration, ours vs the floor
		console.log(
			'\nPer workflow (n8n execution records): executions per run, mean queue wait (createdAt → startedAt) and mean duration (startedAt → stoppedAt), ms — ours / floor:\n',
		);
		const perWorkflow = (setup: Setup, clients: number) => {
			const out: string[][] = [];
			for (const id of CHAIN) {
				const cell = (side: 'ours' | 'floor') => {
					const wf = side === 'ours' ? id : FLOOR_ID[id];
					const ss = samples.get(key(setup, side, clients))!;
					const rows = ss.flatMap((s) => s.executions.filter((e) => e.workflowId === wf && e.startedAt && e.stoppedAt));
					const runs = ss.reduce((n, s) => n + s.m.runs.length, 0);
					return {
						perRun: rows.length / runs,
						wait: mean(rows.map((e) => e.startedAt! - e.createdAt)),
						dur: mean(rows.map((e) => e.stoppedAt! - e.startedAt!)),
					};
				};
				const o = cell('ours');
				const f = cell('floor');
				out.push([
					`${LABEL[setup]}, ${clients}`,
					SHORT[id],
					`${o.perRun.toFixed(2)} / ${f.perRun.toFixed(2)}`,
					`${o.wait.toFixed(0)} / ${f.wait.toFixed(0)}`,
					`${o.dur.toFixed(0)} / ${f.dur.toFixed(0)}`,
				]);
			}
			const others = samples
				.get(key(setup, 'ours', clients))!
				.flatMap((s) => s.executions.filter((e) => !CHAIN.includes(e.workflowId)))
				.map((e) => e.workflowId);
			if (others.length)
				out.push([
					`${LABEL[setup]}, ${clients}`,
					`other: ${[...new Set(others)].join(', ')}`,
					`${others.length}`,
					'',
					'',
				]);
			return out;
		};
		console.log(
			markdownTable(
				['setup, clients', 'workflow', 'executions per run', 'queue wait', 'duration'],
				cols.flatMap(({ setup, clients }) => perWorkflow(setup, clients)),
			),
		);

		// per node: mean executionTime of each node (runData) over the sampled executions, all measurements pooled
		console.log(
			`\nPer node (runData executionTime, mean ms per execution of its workflow; ≤ ${SAMPLE} executions per workflow and measurement):\n`,
		);
		const nodeRows: string[][] = [];
		for (const setup of setups) {
			for (const id of CHAIN) {
				for (const side of ['ours', 'floor'] as const) {
					const wf = side === 'ours' ? id : FLOOR_ID[id];
					const totals = new Map<string, number[]>();
					for (const clients of CLIENTS)
						for (const s of samples.get(key(setup, side, clients))!)
							for (const e of s.executions)
								if (e.workflowId === wf && s.nodeTimes.has(e.id))
									for (const [node, t] of Object.entries(s.nodeTimes.get(e.id)!))
										totals.set(node, [...(totals.get(node) ?? []), t]);
					const text = [...totals.entries()].map(([node, ts]) => `${node} ${mean(ts).toFixed(1)}`).join('; ');
					nodeRows.push([LABEL[setup], SHORT[id], side, text || '—']);
				}
			}
		}
		console.log(markdownTable(['setup', 'workflow', 'side', 'node: mean ms'], nodeRows));

		const top = CLIENTS[CLIENTS.length - 1];
		if (WHAT_IF) console.log('\n  what-if run (BENCH_PIPELINE_WHAT_IF=no-retry): no P7 goal rows recorded');
		for (const setup of WHAT_IF ? [] : setups) {
			const lo = latOf(setup, 'ours', top);
			const lf = latOf(setup, 'floor', top);
			recordGoal({
				goal: 'P7',
				what: `MaaS pipeline submit → pushed answer, ${top} clients at once, ${LABEL[setup]} (p50 / p95 ${s2(quantile(lo, 0.5))} / ${s2(quantile(lo, 0.95))} s vs floor ${s2(quantile(lf, 0.5))} / ${s2(quantile(lf, 0.95))} s; n8n ${harness.N8N_VERSION}, Node ${process.versions.node})`,
				measured: `${s2(rateOf(setup, 'ours', top))} runs/s`,
				baseline: `floor of the chain (No Op steps) ${s2(rateOf(setup, 'floor', top))} runs/s`,
				ratio: rateOf(setup, 'ours', top) / rateOf(setup, 'floor', top),
				atLeast: GOAL,
			});
		}
		console.log(`\n  bench wall time ${Math.round((performance.now() - started) / 1000)} s`);
	} finally {
		const keep = process.env.BENCH_PIPELINE_TRANSCRIPTS;
		if (keep) fs.mkdirSync(keep, { recursive: true });
		if (keep && cluster) cluster.saveTranscripts(keep);
		if (keep && single) fs.writeFileSync(path.join(keep, 'single.log'), single.transcript());
		for (const s of sides.values()) {
			await s.status.stop();
			await s.records.close().catch(() => undefined);
		}
		await cluster?.stop().catch((error: Error) => console.error(`stopping the cluster: ${error.message}`));
		if (single) {
			await single.stop();
			single.remove();
		}
		harness.removePackage(tarball);
		await receiver.down();
		await model.down();
		await server?.stop();
		for (const db of dbs) await db.drop();
		for (const dir of temp) fs.rmSync(dir, { recursive: true, force: true });
	}
}

main().catch((error) => {
	console.error(error instanceof Refused ? error.message : error);
	process.exit(1);
});
