#!/usr/bin/env node
'use strict';
/**
 * `npm test`: builds the package, then runs with jest (jest.config.js; each file in a fresh process)
 *   test/unit        pure logic,
 *   test/integration real PostgreSQL,
 *   test/live        a real ArangoDB at ARANGO_URL (its tests report themselves skipped when it is unset),
 *                    these three in one jest run on TEST_WORKERS parallel workers (default 3: each file
 *                    creates and drops its own database and listens on its own ports; on 2 cores many files
 *                    wait on timers, sockets and PostgreSQL, so a third worker still shortens the run);
 *   test/e2e         a real n8n (2.4.8, or CONTRACTS_N8N_VERSION) with the packed package, in a second jest run
 *                    on E2E_WORKERS workers (default 2: every file has its own database, n8n user folder,
 *                    ports and Redis key prefix, and much of an e2e file's time is waiting on n8n's
 *                    schedules and HTTP; 1 when timings must not share the cores); skipped with SKIP_E2E=1.
 * Jest's own arguments after `--` go to both runs (e.g. `npm test -- -t lease`).
 * PostgreSQL is resolved once (DATABASE_URL, else 127.0.0.1:5432, else embedded) and handed to every
 * test file through DATABASE_URL. Exit code: 0 when both runs pass, else the first failing run's.
 * Prints each run's wall time (seconds).
 */
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { resolvePostgres } = require('./lib/postgres');
const { testFiles, workers } = require('./lib/testRun');

const root = path.join(__dirname, '..');

function run(cmd, args, env) {
	const result = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
	return result.status ?? 1;
}

async function main() {
	const testWorkers = workers('TEST_WORKERS', 3);
	const e2eWorkers = workers('E2E_WORKERS', 2);
	if (run('npm', ['run', '--silent', 'build']) !== 0) return 1;
	const server = await resolvePostgres({ log: (m) => console.log(m) });
	console.log(`PostgreSQL for tests: ${server.source}`);
	try {
		if (!process.env.ARANGO_URL)
			console.log('ArangoDB live suite: ARANGO_URL not set, its tests are reported as skipped');
		const jest = require.resolve('jest/bin/jest');
		const env = { DATABASE_URL: server.url };
		const runs = [
			{
				name: 'unit, integration and live',
				files: ['unit', 'integration', 'live'].flatMap(testFiles),
				workers: testWorkers,
			},
		];
		if (process.env.SKIP_E2E === '1') console.log('e2e tests skipped: SKIP_E2E=1');
		else runs.push({ name: 'e2e', files: testFiles('e2e'), workers: e2eWorkers });
		if (process.env.SKIP_E2E !== '1') {
			// installed once here (a cold cache: minutes), not by the first e2e files of parallel workers
			const started = Date.now();
			require('./lib/n8n').ensureN8n({ log: (m) => console.log(m) });
			console.log(`n8n for the e2e tests ready (${((Date.now() - started) / 1000).toFixed(0)} s)`);
		}
		let code = 0;
		for (const r of runs) {
			const started = Date.now();
			console.log(
				`\n=== jest: ${r.name} (${r.files.length} files, ${r.workers} worker${r.workers > 1 ? 's' : ''}) ===`,
			);
			const status = run(
				process.execPath,
				[jest, `--maxWorkers=${r.workers}`, '--runTestsByPath', ...r.files, ...process.argv.slice(2)],
				env,
			);
			console.log(
				`=== jest: ${r.name} ${status === 0 ? 'passed' : `failed (${status})`} in ${((Date.now() - started) / 1000).toFixed(0)} s ===`,
			);
			if (status !== 0 && code === 0) code = status;
		}
		return code;
	} finally {
		await server.stop();
	}
}

main().then(
	(code) => process.exit(code),
	(error) => {
		console.error(error);
		process.exit(1);
	},
);
