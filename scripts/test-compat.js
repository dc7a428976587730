#!/usr/bin/env node
'use strict';
/**
 * `npm run test:compat` (issue 27 §1): the compatibility suite on the newest n8n the registry installs, on
 * Node 24 from the registry (no system install needed):
 *  1. ensureNode(24) (scripts/lib/nodeRuntime.js) and ensureN8n({ version, node }) (scripts/lib/n8n.js) —
 *     each installs once into the cache (N8N_CONTRACTS_CACHE, default ~/.cache/n8n-nodes-contracts);
 *  2. `npm run build`, then the unit, integration and live tests with jest running on that Node (TEST_WORKERS
 *     workers, default 3, as in `npm test`; property tests with PROPERTY_RUNS 2,000 unless set:
 *     COMPAT_PROPERTY_RUNS), then jest on COMPAT_TESTS (WF10/WF99, the canvas test, the queue-mode e2e) with
 *     CONTRACTS_N8N_VERSION and CONTRACTS_N8N_NODE set, so every n8n process runs that n8n on that Node;
 *  3. `npm run demo -- --once` with the same settings (its own database, dropped afterwards), whose output must
 *     show a cited answer, an answer pushed over the WebSocket that is the run's final_answer, and a metrics
 *     scrape with HTTP 200 counting a completed run (the demo itself ends 0 even when one of these is missing).
 * Prints the time of each step; exit code 0 when every step passed, 1 otherwise.
 * Settings: CONTRACTS_N8N_VERSION (default COMPAT_N8N_VERSION below), COMPAT_NODE_MAJOR (default 24),
 * DATABASE_URL (else 127.0.0.1:5432, else an embedded server). Arguments: `--no-demo` skips step 3,
 * `--no-jest` step 2, `--no-unit` only its unit/integration part; anything else is passed on to jest.
 */
const { spawn } = require('node:child_process');
const path = require('node:path');
const { Client } = require('pg');
const { ensureNode } = require('./lib/nodeRuntime');
const { resolvePostgres, withDatabase } = require('./lib/postgres');
const { testFiles, workers } = require('./lib/testRun');

/**
 * The newest n8n that installs from the npm registry here (November 2026): 2.41.3 is `latest` but needs
 * @n8n/agents 0.26.2, which the registry does not serve; 2.41.2 was never published. Raise it when a newer
 * one installs (docs/testing.md "Other n8n and Node versions").
 */
const COMPAT_N8N_VERSION = '2.41.1';
/**
 * Runs of a property test (test/helpers/property.ts PROPERTY_RUNS, default 10,000) in the Node 24 unit and
 * integration run: the same properties with seeds of their own, a fifth of the runs (the longest of them,
 * errorPipe.property, took 102 s of the run at 10,000).
 */
const COMPAT_PROPERTY_RUNS = 2_000;
const COMPAT_TESTS = ['test/e2e/wf10_wf99.test.ts', 'test/e2e/canvas.test.ts', 'test/e2e/queue_mode.test.ts'];
const ROOT = path.join(__dirname, '..');
const UNIT_DIRS = ['unit', 'integration', 'live'];

/** What the demo's output must show (scripts/demo.ts and its parts in scripts/demo/ print these lines). */
const DEMO_CHECKS = [
	['a reply sent to Telegram', /reply sent to Telegram \(message \d+\)/],
	// scripts/demo/bot.ts prints each cited chunk as `source [n] rank r chunk #id — document id …` (issue 30)
	['a cited answer (citation [1] of a stored document)', /^ {4}source \[1\] rank 1 chunk #\d+ — document \d+ /m],
	['an answer pushed over the WebSocket', /pushed over ws \([\d.]+ s after the 201\) → \{/],
	['the pushed answer is the run’s final_answer', /final_answer is the pushed answer/],
	['a metrics scrape answered 200', /GET \/webhook\/metrics .*→ HTTP 200/],
	['the scrape counts a completed run', /contracts_pipeline_finished_runs_total\{status="COMPLETED"\} [1-9]/],
	['the demo checked n8n’s log for secrets', /secrets \(.*\): in none of the lines above/],
	['how an outside client calls it (token files, not tokens)', /SCRAPE_TOKEN=\$\(cat \S+demo-client-scrape-token\)/],
	['the demo’s own time', /demo ready in \d+ s/],
];

const seconds = (ms) => `${(ms / 1000).toFixed(0)} s`;

/** Runs `cmd args` with output shown (and kept when `keep`); resolves { code, out }. */
function run(cmd, args, env, { keep = false } = {}) {
	return new Promise((resolve) => {
		const child = spawn(cmd, args, {
			cwd: ROOT,
			// a key set to undefined in `env` is left out
			env: Object.fromEntries(Object.entries({ ...process.env, ...env }).filter(([, v]) => v !== undefined)),
			stdio: ['ignore', keep ? 'pipe' : 'inherit', keep ? 'pipe' : 'inherit'],
		});
		let out = '';
		if (keep) {
			for (const stream of [child.stdout, child.stderr])
				stream.on('data', (chunk) => {
					out += chunk.toString();
					process.stdout.write(chunk);
				});
		}
		child.once('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), out }));
	});
}

async function dropDatabase(serverUrl, name) {
	const client = new Client({ connectionString: withDatabase(serverUrl, 'postgres') });
	await client.connect();
	try {
		await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
	} finally {
		await client.end();
	}
}

async function main() {
	const args = process.argv.slice(2);
	const withDemo = !args.includes('--no-demo');
	const withJest = !args.includes('--no-jest');
	const withUnit = withJest && !args.includes('--no-unit');
	const jestArgs = args.filter((a) => !['--no-demo', '--no-jest', '--no-unit'].includes(a));
	const e2eWorkers = workers('E2E_WORKERS', 2);
	const testWorkers = workers('TEST_WORKERS', 3);
	const version = process.env.CONTRACTS_N8N_VERSION || COMPAT_N8N_VERSION;
	const major = Number(process.env.COMPAT_NODE_MAJOR || 24);
	const times = [];
	const results = [];
	const timed = async (what, fn) => {
		const started = Date.now();
		try {
			return await fn();
		} finally {
			times.push(`${what}: ${seconds(Date.now() - started)}`);
		}
	};

	const started = Date.now();
	const node = await timed(`Node ${major} (ensureNode)`, () => ensureNode(major, { log: console.log }));
	console.log(`Node ${node.version}: ${node.bin}`);
	// scripts/lib/n8n.js reads CONTRACTS_N8N_VERSION when loaded: set it first
	process.env.CONTRACTS_N8N_VERSION = version;
	process.env.CONTRACTS_N8N_NODE = node.bin;
	const harness = require('./lib/n8n');
	const bin = await timed(`n8n ${version} (ensureN8n, ${harness.isN8nInstalled() ? 'cached' : 'cold install'})`, () =>
		harness.ensureN8n({ version, node: node.bin, log: console.log }),
	);
	console.log(`n8n ${version}: ${bin}, run by ${node.bin}`);
	const env = { CONTRACTS_N8N_VERSION: version, CONTRACTS_N8N_NODE: node.bin };

	if ((await timed('build', () => run('npm', ['run', '--silent', 'build'], {}))).code !== 0) {
		console.error('build failed');
		return 1;
	}
	const server = await resolvePostgres({ log: console.log });
	try {
		const jest = require.resolve('jest/bin/jest');
		if (withUnit) {
			const files = UNIT_DIRS.flatMap(testFiles);
			const { code } = await timed(`unit, integration and live on Node ${node.version} (jest)`, () =>
				run(node.bin, [jest, `--maxWorkers=${testWorkers}`, '--runTestsByPath', ...files, ...jestArgs], {
					DATABASE_URL: server.url,
					// the unit and integration tests run as under `npm test`: the n8n settings are the e2e part's
					CONTRACTS_N8N_VERSION: undefined,
					CONTRACTS_N8N_NODE: undefined,
					// what the tests spawn as `node` runs on the same Node
					PATH: `${path.dirname(node.bin)}${path.delimiter}${process.env.PATH || ''}`,
					// the properties at full strength (10,000 runs) ran on the machine's Node in `npm test`; here each
					// runs with a seed of its own and COMPAT_PROPERTY_RUNS runs (PROPERTY_RUNS, when set, wins)
					PROPERTY_RUNS: process.env.PROPERTY_RUNS || String(COMPAT_PROPERTY_RUNS),
				}),
			);
			results.push([`unit, integration and live tests (${files.length} files) on Node ${node.version}`, code === 0]);
		}
		if (withJest) {
			const { code } = await timed('e2e tests (jest)', () =>
				run(process.execPath, [jest, `--maxWorkers=${e2eWorkers}`, '--runTestsByPath', ...COMPAT_TESTS, ...jestArgs], {
					...env,
					DATABASE_URL: server.url,
				}),
			);
			results.push([`e2e: ${COMPAT_TESTS.join(', ')}`, code === 0]);
		}
		if (withDemo) {
			const database = `contracts_compat_${process.pid}`;
			try {
				const { code, out } = await timed('demo --once', () =>
					run(
						process.execPath,
						['--import', 'tsx', 'scripts/demo.ts', '--once'],
						{ ...env, DATABASE_URL: server.url, DEMO_DATABASE: database },
						{ keep: true },
					),
				);
				results.push(['demo --once exited 0', code === 0]);
				for (const [what, pattern] of DEMO_CHECKS) results.push([`demo: ${what}`, pattern.test(out)]);
			} finally {
				await dropDatabase(server.url, database).catch((error) =>
					console.error(`could not drop ${database}: ${error.message}`),
				);
			}
		}
	} finally {
		await server.stop();
	}

	console.log(`\nCompatibility suite: n8n ${version} on Node ${node.version}`);
	for (const [what, ok] of results) console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${what}`);
	console.log(`  times: ${times.join('; ')}; total ${seconds(Date.now() - started)}`);
	return results.every(([, ok]) => ok) ? 0 : 1;
}

if (require.main === module)
	main().then(
		(code) => process.exit(code),
		(error) => {
			console.error(error);
			process.exit(1);
		},
	);

module.exports = { COMPAT_N8N_VERSION, COMPAT_TESTS, DEMO_CHECKS };
