/**
 * `npm run demo` interrupted (issue 16, "the newcomer's first ten minutes"): the demo runs as a child
 * (`node --import tsx scripts/demo.ts`, its own database via DEMO_DATABASE and log folder via DEMO_LOG_DIR)
 * and gets SIGINT, as from Ctrl-C. Then: it exits with 130 after its cleanup, no process with its n8n user
 * folder is left, the user folder and the packed package are gone, and n8n's log file is kept.
 *  - "during the imports" (always): SIGINT once the log shows the `n8n import:workflow` command (the one CLI
 *    call that imports every workflow; n8n's REST API publishes them after n8n starts, issue 27 §3): the demo
 *    starts nothing more (n8n does not start, nothing is published: the instance is closed) and prints no error.
 *  - "while n8n runs" (DEMO_SIGNALS_E2E=1): SIGINT once the demo prints that n8n is running; also the owner
 *    login it printed was set up (n8n's log says so: the harness created that account to publish), the log
 *    shows one import call, no `n8n publish:workflow` and one REST publishing pass, and n8n no longer answers.
 *    Opt-in because the demo needed about 3 minutes to get there on a busy 2-core machine (175 s: one
 *    `n8n publish:workflow` process per workflow); since issue 27 §3 about a minute (53 s here), so it could
 *    join the default run; the cleanup itself is unit-tested (test/unit/cleanupOnSignals.test.ts).
 * Skipped (with the reason) when the n8n of this run (CONTRACTS_N8N_VERSION, default 2.4.8) is not installed in the cache yet (the first install takes minutes;
 * any other e2e test or `npm run demo` installs it).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { testSkipIf } from '../helpers/skip';
import { Client } from 'pg';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');

const ROOT = path.join(__dirname, '..', '..');
const CACHE = process.env.N8N_CONTRACTS_CACHE || path.join(os.homedir(), '.cache', 'n8n-nodes-contracts');

/** Pids of the processes whose environment names `N8N_USER_FOLDER=<folder>` (Linux /proc; [] elsewhere). */
function processesOf(folder: string): number[] {
	if (!fs.existsSync('/proc/self/environ')) return [];
	const needle = `N8N_USER_FOLDER=${folder}\0`;
	const pids: number[] = [];
	for (const entry of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(entry)) continue;
		try {
			if (`${fs.readFileSync(`/proc/${entry}/environ`, 'latin1')}\0`.includes(needle)) pids.push(Number(entry));
		} catch {
			// gone, or not ours to read
		}
	}
	return pids;
}

/** A demo child with its own database and log folder; `stop()` kills it if still running and drops both. */
function startDemo() {
	const database = `contracts_demo_sig_${process.pid}_${Date.now() % 100000}`;
	const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-demo-logs-'));
	const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
		cwd: ROOT,
		env: { ...process.env, DEMO_DATABASE: database, DEMO_LOG_DIR: logDir, DEMO_SKIP_BUILD: '1' },
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	const demo = {
		out: '',
		logFile: path.join(logDir, 'n8n.log'),
		started: Date.now(),
		exited: new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
			child.once('exit', (code, signal) => resolve({ code, signal })),
		),
		/** Waits until `ready()` is true (polled every 500 ms); fails when the demo exits first or after `timeoutMs`. */
		async until(what: string, ready: () => boolean, timeoutMs = 180_000) {
			while (!ready()) {
				const early = await Promise.race([demo.exited, new Promise((r) => setTimeout(() => r(null), 500))]);
				assert.equal(early, null, `the demo exited before ${what}:\n${demo.out.slice(-4000)}`);
				assert.ok(
					Date.now() - demo.started < timeoutMs,
					`not ${what} after ${timeoutMs / 1000} s:\n${demo.out.slice(-4000)}`,
				);
			}
			return Date.now() - demo.started;
		},
		/** SIGINT; resolves with the exit and the time it took (fails after 60 s). */
		async interrupt() {
			const at = Date.now();
			child.kill('SIGINT');
			const end = await Promise.race([
				demo.exited,
				new Promise<null>((r) => setTimeout(() => r(null), 60_000).unref()),
			]);
			assert.ok(end, `the demo did not exit within 60 s of SIGINT:\n${demo.out.slice(-4000)}`);
			return { ...end, ms: Date.now() - at };
		},
		async stop() {
			if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
			fs.rmSync(logDir, { recursive: true, force: true });
			const serverUrl = process.env.DATABASE_URL;
			const admin = new Client({
				connectionString: serverUrl
					? new URL('/postgres', serverUrl).toString()
					: 'postgres://postgres@127.0.0.1:5432/postgres',
			});
			await admin.connect().then(
				() => admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).finally(() => admin.end()),
				() => undefined,
			);
		},
	};
	child.stdout.on('data', (c: Buffer) => (demo.out += c.toString()));
	child.stderr.on('data', (c: Buffer) => (demo.out += c.toString()));
	return demo;
}

/** The checks after the cleanup: exit 130, the cleanup's lines, no process with the folder, folder and packed package gone, log kept. */
function assertCleanedUp(
	demo: ReturnType<typeof startDemo>,
	end: { code: number | null; signal: NodeJS.Signals | null },
	folder: string,
) {
	assert.deepEqual({ code: end.code, signal: end.signal }, { code: 130, signal: null }, demo.out.slice(-3000));
	assert.match(demo.out, /SIGINT: cleaning up \([^)]*stop n8n, remove its user folder/);
	assert.match(demo.out, /cleanup done\n/);
	const pack = demo.out.match(/remove the packed package (\S+?)[;)]/)?.[1];
	assert.ok(pack, 'the cleanup names the packed package');
	assert.deepEqual(processesOf(folder), [], 'no process of the demo is left with its n8n user folder');
	assert.equal(fs.existsSync(folder), false, `the user folder ${folder} is removed`);
	assert.equal(fs.existsSync(pack), false, `the packed package ${pack} is removed`);
	assert.ok(fs.existsSync(demo.logFile), `n8n's log ${demo.logFile} is kept`);
	assert.match(
		demo.out,
		new RegExp(`n8n's log: ${demo.logFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} `),
		'the log path is printed at start',
	);
}

/** The demo's line once n8n runs, e.g. "n8n 2.4.8 (Node 20.20.2) running at http://… (user folder /tmp/…)". */
const RUNNING = new RegExp(
	`n8n ${harness.N8N_VERSION.replace(/\./g, '\\.')} \\(Node [\\d.]+\\) running at (\\S+) \\(user folder (\\S+)\\)`,
);
const installed = harness.isN8nInstalled();
const notInstalled = `n8n ${harness.N8N_VERSION} is not installed for Node ${harness.nodeVersionOf(harness.n8nNode())} in ${CACHE} yet (the first install takes minutes; run any e2e test or npm run demo once)`;

testSkipIf(!installed && notInstalled)(
	"Ctrl-C during the demo's imports: nothing more starts, the user folder is removed, the log kept",
	async () => {
		const demo = startDemo();
		try {
			const readyAfter = await demo.until(
				'importing the workflows',
				() =>
					fs.existsSync(demo.logFile) &&
					fs.readFileSync(demo.logFile, 'utf8').includes('--- harness: n8n import:workflow'),
			);
			const folder = demo.out.match(/n8n user folder: (\S+) \(removed when/)?.[1];
			assert.ok(folder && fs.existsSync(folder), `the user folder is known and exists (${folder})`);
			const end = await demo.interrupt();
			assertCleanedUp(demo, end, folder);
			assert.doesNotMatch(demo.out, RUNNING, 'n8n was not started after the signal');
			assert.doesNotMatch(
				fs.readFileSync(demo.logFile, 'utf8'),
				/--- harness: publishing|Editor is now accessible/,
				'n8n did not start, nothing was published',
			);
			assert.doesNotMatch(demo.out, /Error|at async/, 'the interrupted step prints no error');
			console.log(
				`SIGINT ${(readyAfter / 1000).toFixed(0)} s after the start, during the import; exited ${(end.ms / 1000).toFixed(1)} s later`,
			);
		} finally {
			await demo.stop();
		}
	},
	150_000,
);

testSkipIf(
	(!installed && notInstalled) ||
		(process.env.DEMO_SIGNALS_E2E !== '1' &&
			'the demo needs about a minute to start n8n (53 s here, 175 s before issue 27 §3): set DEMO_SIGNALS_E2E=1 to run this'),
)(
	'Ctrl-C while n8n runs: n8n stopped, owner was set up, user folder removed, log kept (DEMO_SIGNALS_E2E=1)',
	async () => {
		const demo = startDemo();
		try {
			const ready = RUNNING;
			const readyAfter = await demo.until('n8n running', () => ready.test(demo.out), 240_000);
			const [, url, folder] = demo.out.match(ready)!;
			assert.ok(fs.existsSync(folder), 'the user folder exists while n8n runs');
			assert.ok(
				processesOf(folder).length > 0 || !fs.existsSync('/proc/self/environ'),
				'n8n runs with that user folder',
			);
			assert.match(
				demo.out,
				/n8n login \(a demo account of this run, n8n's owner\): email demo@example\.com, password Demo-\S+-7/,
			);
			const end = await demo.interrupt();
			assertCleanedUp(demo, end, folder);
			await assert.rejects(fetch(`${url}/healthz`), 'n8n no longer answers');
			const log = fs.readFileSync(demo.logFile, 'utf8');
			assert.match(log, /Editor is now accessible via/, "n8n's log file has n8n's own lines");
			assert.match(log, /Owner was set up successfully/, "n8n's log records the owner setup");
			assert.match(log, /--- harness: n8n import:workflow/, "the CLI imports' output is in the log too");
			assert.equal(log.split('--- harness: n8n import:workflow').length - 1, 1, 'one import call for every workflow');
			assert.doesNotMatch(log, /publish:workflow/, 'no n8n publish:workflow process per workflow');
			assert.match(
				log,
				/--- harness: published \d+ workflows through n8n's REST API in [\d.]+ s as owner demo@example\.com \(created\)/,
			);
			console.log(
				`n8n running ${(readyAfter / 1000).toFixed(0)} s after the start; exited ${(end.ms / 1000).toFixed(1)} s after SIGINT; log ${log.length} characters`,
			);
		} finally {
			await demo.stop();
		}
	},
	300_000,
);
