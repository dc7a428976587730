/**
 * `npm run bench:queue`: WF10 updates/s and WF90 jobs/s on n8n 2.4.8 in queue mode with 1 and 2 workers,
 * and the same workloads on a single-process n8n as the baseline, all in one run (issue 15).
 *   single   — `n8n start` as scripts/lib/n8n.js createInstance runs it (regular mode, n8n's own SQLite);
 *   queue-1w — scripts/lib/n8nQueue.js: 1 main (webhooks) + worker-1, Redis (a Bull prefix of its own),
 *              n8n's own database on PostgreSQL; worker-2 stopped (SIGTERM, graceful);
 *   queue-2w — the same cluster with worker-2 started again (one cluster: main and worker-1 stay up).
 * Both n8n setups run side by side (idle while the other is measured) against one contracts database.
 * Workloads (bench/queueWorkloads.ts): BENCH_QUEUE_UPDATES (400) distinct Telegram updates through the
 * shipped WF10 from BENCH_QUEUE_CLIENTS (16) senders; BENCH_QUEUE_JOBS (200) document_chunk jobs of
 * BENCH_QUEUE_DOC_CHARS (3,000) characters drained by BENCH_QUEUE_RUNNERS (4) concurrent loops triggering a
 * WF90 copy (BENCH_QUEUE_JOB_BATCH = 10 jobs per claim; each job runs WF40 as a sub-workflow on the same
 * process). Workers run `--concurrency=BENCH_QUEUE_CONCURRENCY` (10).
 * BENCH_QUEUE_ROUNDS (3) rounds in mirrored order (single, 2w, 1w | 1w, 2w, single, …) so a drift of the
 * machine's load does not favour one setup; each setup is warmed up first until every running worker has run
 * both workloads (again after worker-2 restarts);
 * the median is reported with the ratios queue/single and 2w/1w, and each worker's share of the work (from
 * the worker transcripts: "Worker started execution <id>"; ops.job_runs.worker names the WF90 execution).
 * Also prints the CPU each setup's n8n processes spent per update and per job (Linux /proc: user + system time
 * of the process and its task runners; bench/cpu.ts) and what that means for one main's ceiling.
 * Refuses to report (exit 1) when an update or a job was lost or done twice (counts in PostgreSQL).
 * Skips (exit 0) with the reason when Redis does not answer at REDIS_HOST:REDIS_PORT (127.0.0.1:6379).
 * BENCH_QUEUE_TRANSCRIPTS=<dir> keeps every n8n process's log there.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { seedBot, setupDatabase } from '../test/helpers/db';
import { measureWf10, measureWf90, RUNNER_HOOK, writeBenchWorkflows, type Bot } from './queueWorkloads';
import { CPU_AVAILABLE, cpuSeconds } from './cpu';
import { envInt, markdownTable, median, rate, Refused } from './report';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../scripts/lib/n8n');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const queue = require('../scripts/lib/n8nQueue');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres } = require('../scripts/lib/postgres');

const UPDATES = envInt('BENCH_QUEUE_UPDATES', 400);
const CLIENTS = envInt('BENCH_QUEUE_CLIENTS', 16);
const JOBS = envInt('BENCH_QUEUE_JOBS', 200);
const BATCH = envInt('BENCH_QUEUE_JOB_BATCH', 10);
const RUNNERS = envInt('BENCH_QUEUE_RUNNERS', 4);
const CHARS = envInt('BENCH_QUEUE_DOC_CHARS', 3000);
const ROUNDS = envInt('BENCH_QUEUE_ROUNDS', 3);
const CONCURRENCY = envInt('BENCH_QUEUE_CONCURRENCY', 10);
const REDIS = { host: process.env.REDIS_HOST || '127.0.0.1', port: Number(process.env.REDIS_PORT || 6379) };
const ROOT = path.join(__dirname, '..');

type Setup = 'single' | 'queue-1w' | 'queue-2w';
const LABEL: Record<Setup, string> = {
	single: 'single process (n8n start)',
	'queue-1w': 'queue mode, main + 1 worker',
	'queue-2w': 'queue mode, main + 2 workers',
};

/** The parts of scripts/lib/n8n.js N8nInstance and scripts/lib/n8nQueue.js QueueCluster this bench uses. */
interface N8nProcess {
	process?: ChildProcess;
	importCredentials(credentials: unknown[]): Promise<void>;
	importAndPublish(files: string[]): Promise<string[]>;
	start(): Promise<string>;
	waitForWebhooks(paths: string[]): Promise<void>;
	transcript(): string;
	stop(): Promise<void>;
	remove(): void;
}

interface WorkerProcess extends N8nProcess {
	role: string;
	startedExecutions(): string[];
}

interface Cluster {
	main: N8nProcess;
	workers: WorkerProcess[];
	importCredentials(credentials: unknown[]): Promise<void>;
	importAndPublish(files: string[]): Promise<string[]>;
	start(): Promise<string>;
	startWorker(index: number): Promise<string>;
	workerOfExecutions(): Map<string, string[]>;
	saveTranscripts(dir: string): void;
	stop(): Promise<void>;
}

interface Sample {
	wf10: number;
	wf90: number;
	/** worker role → WF10 executions it started during the measurement (queue setups) */
	wf10By: Record<string, number>;
	/** worker role → jobs finished by WF90 executions it ran (queue setups) */
	wf90By: Record<string, number>;
	/** CPU ms per update / per job of the n8n that received the requests (single, or queue-mode main) and of the workers */
	wf10Cpu: CpuShare;
	wf90Cpu: CpuShare;
}

interface CpuShare {
	n8n: number;
	workers: number;
}

const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

async function main() {
	const redisDown = await queue.redisUnavailable(REDIS);
	if (redisDown) {
		console.log(`bench:queue skipped: ${redisDown} (queue mode needs Redis; start one or set REDIS_HOST / REDIS_PORT)`);
		return;
	}
	if (spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0)
		throw new Error('build failed');
	const loadBefore = os.loadavg();
	const started = performance.now();
	const bin = harness.ensureN8n({ log });
	const tarball = harness.packPackage();
	const db = await setupDatabase();
	const credential = harness.postgresCredential(db.url);
	const workflows = writeBenchWorkflows(BATCH);
	let server: { url: string; stop(): Promise<void> } | undefined;
	let single: N8nProcess | undefined;
	let cluster: Cluster | undefined;
	try {
		const pg: { url: string; stop(): Promise<void> } = await resolvePostgres();
		server = pg;
		const seeded = await seedBot(db.pool, 'bench_queue_bot', 'benchQueue-Secret_1');
		const bot: Bot = { botKey: seeded.botKey, secret: seeded.secret, tenantId: seeded.tenantId };

		log('starting the single-process n8n…');
		const one: N8nProcess = harness.createInstance({ tarball, bin });
		single = one;
		await one.importCredentials([credential]);
		await one.importAndPublish(workflows.files);
		const singleUrl = await one.start();
		await one.waitForWebhooks([RUNNER_HOOK]);

		log(`starting the queue-mode cluster (main + 2 workers, --concurrency=${CONCURRENCY})…`);
		const q: Cluster = await queue.createQueueCluster({
			tarball,
			bin,
			serverUrl: pg.url,
			workers: 2,
			concurrency: CONCURRENCY,
			redis: REDIS,
		});
		cluster = q;
		await q.importCredentials([credential]);
		await q.importAndPublish(workflows.files);
		const queueUrl = await q.start();
		await q.main.waitForWebhooks([RUNNER_HOOK]);
		const workers = q.workers;
		const urlOf = (setup: Setup) => (setup === 'single' ? singleUrl : queueUrl);

		/** CPU seconds so far of [single, main, worker-1, worker-2], each with its descendants (task runners) */
		const cpuNow = () =>
			CPU_AVAILABLE ? cpuSeconds([one.process?.pid, q.main.process?.pid, ...workers.map((w) => w.process?.pid)]) : [];
		const cpuShare = (setup: Setup, before: number[], after: number[], units: number): CpuShare => {
			const d = after.map((x, i) => x - (before[i] ?? 0));
			if (d.length === 0) return { n8n: NaN, workers: NaN };
			const ms = (seconds: number) => (1000 * seconds) / units;
			return setup === 'single'
				? { n8n: ms(d[0]), workers: 0 }
				: { n8n: ms(d[1]), workers: ms(d.slice(2).reduce((a, b) => a + b, 0)) };
		};
		let tags = 0;
		/** One measurement of both workloads on `setup`; `warm` = a short unmeasured run. */
		const measure = async (setup: Setup, warm = false): Promise<Sample> => {
			const updates = warm ? 100 : UPDATES;
			const jobs = warm ? 2 * RUNNERS * BATCH : JOBS;
			const startedBefore = workers.map((w) => new Set(w.startedExecutions()));
			const cpu0 = cpuNow();
			const wf10 = await measureWf10(db.pool, urlOf(setup), bot, updates, CLIENTS);
			const cpu1 = cpuNow();
			const wf10By: Record<string, number> = {};
			workers.forEach((w, i) => {
				const fresh = w.startedExecutions().filter((id) => !startedBefore[i].has(id)).length;
				if (fresh) wf10By[w.role] = fresh;
			});
			const cpu2 = cpuNow();
			const wf90 = await measureWf90(db.pool, urlOf(setup), bot.tenantId, {
				jobs,
				runners: RUNNERS,
				chars: CHARS,
				tag: `${setup}-${tags++}`,
			});
			const cpu3 = cpuNow();
			const wf10Cpu = cpuShare(setup, cpu0, cpu1, updates);
			const wf90Cpu = cpuShare(setup, cpu2, cpu3, jobs);
			const wf90By: Record<string, number> = {};
			if (setup !== 'single') {
				const roles = q.workerOfExecutions();
				for (const [execution, count] of wf90.jobsPerExecution) {
					const by = roles.get(execution) ?? [];
					const role = by.length === 1 ? by[0] : `started by ${by.length} workers`;
					wf90By[role] = (wf90By[role] ?? 0) + count;
				}
			}
			log(
				`${warm ? 'warm-up ' : ''}${LABEL[setup]}: WF10 ${rate(wf10)} updates/s ${JSON.stringify(wf10By)}, WF90 ${rate(wf90.rate)} jobs/s ${JSON.stringify(wf90By)}`,
			);
			return { wf10, wf90: wf90.rate, wf10By, wf90By, wf10Cpu, wf90Cpu };
		};
		const workerTwoRunning = () => {
			const child = workers[1].process;
			return child !== undefined && child.exitCode === null && child.signalCode === null;
		};
		const setWorkers = async (count: 1 | 2) => {
			if (count === 1 && workerTwoRunning()) {
				log('stopping worker-2 (SIGTERM)…');
				await workers[1].stop();
			}
			if (count === 2 && !workerTwoRunning()) {
				log('starting worker-2 again…');
				await q.startWorker(1);
				await warmUp('queue-2w');
			}
		};
		/**
		 * Unmeasured runs until every running worker has run both workloads (a worker's first executions load
		 * and compile the workflows' nodes: a cold worker would count against the 2-worker setup); at most 4.
		 */
		const warmUp = async (setup: Setup) => {
			const want = setup === 'queue-2w' ? ['worker-1', 'worker-2'] : setup === 'queue-1w' ? ['worker-1'] : [];
			const seen = { wf10: new Set<string>(), wf90: new Set<string>() };
			for (let run = 0; run < 4; run++) {
				const sample = await measure(setup, true);
				for (const role of Object.keys(sample.wf10By)) seen.wf10.add(role);
				for (const role of Object.keys(sample.wf90By)) seen.wf90.add(role);
				if (want.every((role) => seen.wf10.has(role) && seen.wf90.has(role))) return;
			}
		};

		await warmUp('single');
		await warmUp('queue-2w');
		// what each process burns doing nothing (timers, Bull/Redis polling), counted in every per-unit figure below
		const idleBefore = cpuNow();
		await new Promise((r) => setTimeout(r, 5000));
		const idle = cpuNow().map((x, i) => (1000 * (x - idleBefore[i])) / 5);
		const samples: Record<Setup, Sample[]> = { single: [], 'queue-1w': [], 'queue-2w': [] };
		const order: Setup[] = ['single', 'queue-2w', 'queue-1w'];
		for (let round = 0; round < ROUNDS; round++) {
			for (const setup of round % 2 === 0 ? order : [...order].reverse()) {
				if (setup !== 'single') await setWorkers(setup === 'queue-1w' ? 1 : 2);
				samples[setup].push(await measure(setup));
			}
		}
		const twice = [...q.workerOfExecutions().values()].filter((by) => by.length > 1).length;
		const mainRan = q.main.transcript().match(/Worker started execution/g)?.length ?? 0;

		const med = (setup: Setup, k: 'wf10' | 'wf90') => median(samples[setup].map((s) => s[k]));
		const share = (setup: Setup, k: 'wf10By' | 'wf90By') => {
			const total: Record<string, number> = {};
			for (const s of samples[setup])
				for (const [role, n] of Object.entries(s[k])) total[role] = (total[role] ?? 0) + n;
			const sum = Object.values(total).reduce((a, b) => a + b, 0);
			return Object.keys(total).length
				? Object.entries(total)
						.sort()
						.map(([role, n]) => `${role} ${Math.round((100 * n) / sum)}%`)
						.join(', ')
				: '—';
		};
		const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
		const setups: Setup[] = ['single', 'queue-1w', 'queue-2w'];
		console.log(
			`\nn8n ${harness.N8N_VERSION}, queue mode vs a single process, median of ${ROUNDS} mirrored round(s); every update and job stored/run exactly once (counted in PostgreSQL):`,
		);
		console.log(
			`  WF10: ${UPDATES} distinct updates per measurement, ${CLIENTS} concurrent senders (shipped WF10, saving off)`,
		);
		console.log(
			`  WF90: ${JOBS} document_chunk jobs of ${CHARS} characters per measurement, ${RUNNERS} runner loops, ${BATCH} jobs per claim (WF40 per job)`,
		);
		console.log(
			`  workers: n8n worker --concurrency=${CONCURRENCY}; load average before the run ${loadBefore.map((l) => l.toFixed(2)).join(' ')}, after ${os
				.loadavg()
				.map((l) => l.toFixed(2))
				.join(' ')} (${os.cpus().length} cores)\n`,
		);
		console.log(
			markdownTable(
				['setup', 'WF10 updates/s', 'WF90 jobs/s', 'WF10 executions by worker', 'WF90 jobs by worker'],
				setups.map((s) => [
					LABEL[s],
					rate(med(s, 'wf10')),
					rate(med(s, 'wf90')),
					share(s, 'wf10By'),
					share(s, 'wf90By'),
				]),
			),
		);
		console.log('');
		console.log(
			markdownTable(
				['ratio', 'WF10', 'WF90'],
				[
					[
						'queue 1 worker / single',
						ratio(med('queue-1w', 'wf10'), med('single', 'wf10')),
						ratio(med('queue-1w', 'wf90'), med('single', 'wf90')),
					],
					[
						'queue 2 workers / single',
						ratio(med('queue-2w', 'wf10'), med('single', 'wf10')),
						ratio(med('queue-2w', 'wf90'), med('single', 'wf90')),
					],
					[
						'queue 2 workers / 1 worker',
						ratio(med('queue-2w', 'wf10'), med('queue-1w', 'wf10')),
						ratio(med('queue-2w', 'wf90'), med('queue-1w', 'wf90')),
					],
				],
			),
		);
		if (CPU_AVAILABLE) {
			const cpu = (setup: Setup, k: 'wf10Cpu' | 'wf90Cpu', part: keyof CpuShare) =>
				median(samples[setup].map((x) => x[k][part]));
			const cell = (setup: Setup, k: 'wf10Cpu' | 'wf90Cpu', part: keyof CpuShare) =>
				setup === 'single' && part === 'workers' ? '—' : cpu(setup, k, part).toFixed(1);
			const total = (setup: Setup, k: 'wf10Cpu' | 'wf90Cpu') =>
				(cpu(setup, k, 'n8n') + cpu(setup, k, 'workers')).toFixed(1);
			console.log(
				'\nCPU ms per WF10 update and per WF90 job (n8n processes and their task runners, from /proc; PostgreSQL, Redis and the senders not counted,',
			);
			console.log(
				"so queue mode's writes to n8n's own database (PostgreSQL) are not counted while the single process's (its SQLite, in process) are):\n",
			);
			console.log(
				markdownTable(
					[
						'setup',
						'WF10: single / main',
						'WF10: workers',
						'WF10: all n8n',
						'WF90: single / main',
						'WF90: workers',
						'WF90: all n8n',
					],
					setups.map((s) => [
						LABEL[s],
						cell(s, 'wf10Cpu', 'n8n'),
						cell(s, 'wf10Cpu', 'workers'),
						total(s, 'wf10Cpu'),
						cell(s, 'wf90Cpu', 'n8n'),
						cell(s, 'wf90Cpu', 'workers'),
						total(s, 'wf90Cpu'),
					]),
				),
			);
			const mainMs = (k: 'wf10Cpu' | 'wf90Cpu') =>
				median([...samples['queue-1w'], ...samples['queue-2w']].map((x) => x[k].n8n));
			console.log(
				`\n  queue-mode main spends ${mainMs('wf10Cpu').toFixed(1)} ms CPU per WF10 update and ${mainMs('wf90Cpu').toFixed(1)} ms per WF90 job: with a core of its own one main (one Node.js thread)`,
			);
			console.log(
				`  tops out near ${rate(1000 / mainMs('wf10Cpu'))} updates/s and ${rate(1000 / mainMs('wf90Cpu'))} jobs/s, whatever the number of workers (webhook intake scales with \`n8n webhook\` processes, not workers)`,
			);
			console.log(
				`  idle (5 s, nothing sent): single ${idle[0].toFixed(0)}, main ${idle[1].toFixed(0)}, worker-1 ${idle[2].toFixed(0)}, worker-2 ${idle[3].toFixed(0)} ms CPU per second`,
			);
		}
		console.log(
			`\n  n8n executions started by two workers: ${twice}; executions main ran itself: ${mainRan}; bench wall time ${Math.round((performance.now() - started) / 1000)} s`,
		);
	} finally {
		const keep = process.env.BENCH_QUEUE_TRANSCRIPTS;
		if (keep) fs.mkdirSync(keep, { recursive: true });
		if (keep && cluster) cluster.saveTranscripts(keep);
		if (keep && single) fs.writeFileSync(path.join(keep, 'single.log'), single.transcript());
		await cluster?.stop().catch((error: Error) => console.error(`stopping the cluster: ${error.message}`));
		if (single) {
			await single.stop();
			single.remove();
		}
		workflows.remove();
		harness.removePackage(tarball);
		await server?.stop();
		await db.drop();
	}
}

main().catch((error) => {
	console.error(error instanceof Refused ? error.message : error);
	process.exit(1);
});
