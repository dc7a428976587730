#!/usr/bin/env node
'use strict';
/**
 * `npm test`: builds the package, then runs with jest (jest.config.js; one file at a time)
 *   test/unit        pure logic,
 *   test/integration real PostgreSQL,
 *   test/e2e         a real n8n 2.4.8 with the packed package (skipped with SKIP_E2E=1, and said so),
 *   test/live        a real ArangoDB at ARANGO_URL (its tests report themselves skipped when it is unset).
 * PostgreSQL is resolved once (DATABASE_URL, else 127.0.0.1:5432, else embedded) and handed to every
 * test file through DATABASE_URL; each file creates and drops its own database.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { resolvePostgres } = require('./lib/postgres');

const root = path.join(__dirname, '..');

function run(cmd, args, env) {
	const result = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
	return result.status ?? 1;
}

function testFiles(dir) {
	const full = path.join(root, 'test', dir);
	if (!fs.existsSync(full)) return [];
	return fs
		.readdirSync(full, { recursive: true })
		.filter((f) => f.endsWith('.test.ts'))
		.map((f) => path.join('test', dir, f))
		.sort();
}

async function main() {
	if (run('npm', ['run', '--silent', 'build']) !== 0) return 1;
	const server = await resolvePostgres({ log: (m) => console.log(m) });
	console.log(`PostgreSQL for tests: ${server.source}`);
	try {
		const suites = ['unit', 'integration'];
		if (process.env.SKIP_E2E === '1') console.log('e2e tests skipped: SKIP_E2E=1');
		else suites.push('e2e');
		suites.push('live');
		if (!process.env.ARANGO_URL)
			console.log('ArangoDB live suite: ARANGO_URL not set, its tests are reported as skipped');
		const files = suites.flatMap(testFiles);
		const jest = require.resolve('jest/bin/jest');
		return run(process.execPath, [jest, '--runTestsByPath', ...files, ...process.argv.slice(2)], {
			DATABASE_URL: server.url,
		});
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
