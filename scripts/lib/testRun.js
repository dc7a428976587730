'use strict';
/**
 * What `npm test` (scripts/test.js) and `npm run test:compat` (scripts/test-compat.js) share:
 *  - testFiles(dir): the `*.test.ts` files under test/<dir>, as paths relative to the repository, sorted
 *    ([] when the folder is missing);
 *  - workers(name, fallback): a jest worker count from the environment variable `name`: a whole number from
 *    1 to 16, `fallback` when unset or empty; throws (naming the variable) otherwise.
 */
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');

function testFiles(dir) {
	const full = path.join(ROOT, 'test', dir);
	if (!fs.existsSync(full)) return [];
	return fs
		.readdirSync(full, { recursive: true })
		.filter((f) => f.endsWith('.test.ts'))
		.map((f) => path.join('test', dir, f))
		.sort();
}

function workers(name, fallback) {
	const raw = process.env[name];
	if (raw === undefined || raw === '') return fallback;
	const n = Number(raw);
	if (!Number.isInteger(n) || n < 1 || n > 16)
		throw new Error(`${name} must be a whole number from 1 to 16, not ${JSON.stringify(raw)}`);
	return n;
}

module.exports = { testFiles, workers };
