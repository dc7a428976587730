/**
 * Tests need nothing outside the repository (issue 27 §3): the data they read lives under test/fixtures/,
 * each file listed with its source in test/fixtures/README.md. When the project's shared folder is next to
 * the repository (a development checkout: ../shared/reference, ../shared/seeds), each copy still equals its
 * source; in a fresh clone that comparison is skipped, with the reason printed.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from '@jest/globals';
import { testSkipIf } from '../helpers/skip';

const ROOT = path.resolve(__dirname, '..', '..');
const FIXTURES = path.join(ROOT, 'test', 'fixtures');
const SHARED = path.resolve(ROOT, '..', 'shared');

/** Repository copy → its source in the shared folder. */
const COPIES: Record<string, string> = {
	'arangodb/arangodb-3.12-http-examples.json': 'reference/arangodb-3.12-http-examples.json',
	'seeds/000_19f47329cfec8acb.txt': 'seeds/000_19f47329cfec8acb.txt',
};

function filesUnder(dir: string, skip: (rel: string) => boolean): string[] {
	const out: string[] = [];
	const walk = (d: string) => {
		for (const name of readdirSync(d)) {
			const full = path.join(d, name);
			const rel = path.relative(ROOT, full);
			if (skip(rel)) continue;
			if (statSync(full).isDirectory()) walk(full);
			else out.push(rel);
		}
	};
	walk(dir);
	return out;
}

test('every fixture file is listed in test/fixtures/README.md, and every listed file exists', () => {
	const readme = readFileSync(path.join(FIXTURES, 'README.md'), 'utf8');
	const files = filesUnder(FIXTURES, () => false)
		.map((f) => path.relative(FIXTURES, f))
		.filter((f) => f !== 'README.md');
	assert.ok(files.length >= 4, files.join(', '));
	for (const file of files) assert.ok(readme.includes(`\`${file}\``), `${file} is not listed with its source`);
	for (const copy of Object.keys(COPIES)) assert.ok(files.includes(copy), `${copy} is missing`);
});

test('no test, bench or script reads the shared folder outside the repository', () => {
	const sources = ['test', 'bench', 'scripts'].flatMap((d) =>
		filesUnder(path.join(ROOT, d), (rel) => rel.startsWith(path.join('test', 'fixtures'))),
	);
	const outside = [
		/\.\.\/shared\/(reference|seeds)/, // a literal ../shared/reference path
		/'shared',\s*'(reference|seeds)'/, // path.resolve(..., 'shared', 'reference', ...)
	];
	const offenders = sources.filter((rel) => {
		if (rel === path.join('test', 'unit', 'fixtureCopies.test.ts')) return false;
		const text = readFileSync(path.join(ROOT, rel), 'utf8');
		return outside.some((re) => re.test(text));
	});
	assert.deepEqual(offenders, []);
});

const sharedMissing = existsSync(SHARED)
	? ''
	: `${SHARED} does not exist (a fresh clone): the fixture copies are not compared with their source`;

testSkipIf(sharedMissing)('each fixture copy equals its source in ../shared', () => {
	for (const [copy, source] of Object.entries(COPIES)) {
		const from = path.join(SHARED, source);
		if (!existsSync(from)) continue;
		assert.ok(
			readFileSync(path.join(FIXTURES, copy)).equals(readFileSync(from)),
			`test/fixtures/${copy} differs from ${from}: copy it again and update the date in test/fixtures/README.md`,
		);
	}
});
