/**
 * The packed package as a user installs it (issue 27).
 * - The harness leaves no contracts-pack-* folder behind (§3): createInstance() without a tarball packs one
 *   for itself and removes it once installed into the user folder's .n8n/nodes, also when the install fails.
 *   Checked in a private TMPDIR, so other processes' temp folders do not count.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');

const ROOT = path.join(__dirname, '..', '..');
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };

let tmp: string;
let savedTmpdir: string | undefined;

beforeAll(() => {
	tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-tarball-test-'));
	savedTmpdir = process.env.TMPDIR;
	// os.tmpdir() reads TMPDIR on every call: the harness's temp folders of this file go here
	process.env.TMPDIR = tmp;
});

afterAll(() => {
	if (savedTmpdir === undefined) delete process.env.TMPDIR;
	else process.env.TMPDIR = savedTmpdir;
	fs.rmSync(tmp, { recursive: true, force: true });
});

test('createInstance packs, installs into .n8n/nodes and removes its tarball: only the user folder is left', () => {
	assert.equal(os.tmpdir(), tmp);
	const instance = harness.createInstance({ bin: '/nonexistent/n8n' });
	try {
		assert.deepEqual(fs.readdirSync(tmp), [path.basename(instance.folder)]);
		const installed = path.join(instance.folder, '.n8n', 'nodes', 'node_modules', PKG.name, 'package.json');
		assert.equal(JSON.parse(fs.readFileSync(installed, 'utf8')).version, PKG.version);
	} finally {
		instance.remove();
	}
	assert.deepEqual(fs.readdirSync(tmp), []);
}, 180_000);

test('a failed install removes the tarball too', () => {
	const notAFolder = path.join(tmp, 'a-file');
	fs.writeFileSync(notAFolder, '');
	assert.throws(() => harness.createInstance({ bin: '/nonexistent/n8n', userFolder: path.join(notAFolder, 'x') }));
	assert.deepEqual(fs.readdirSync(tmp), ['a-file']);
	fs.rmSync(notAFolder);
}, 180_000);

test('removePackage removes a packPackage folder and nothing else', () => {
	const tarball = harness.packPackage();
	assert.match(path.basename(path.dirname(tarball)), /^contracts-pack-/);
	assert.ok(fs.existsSync(tarball));
	const other = fs.mkdtempSync(path.join(tmp, 'other-'));
	fs.writeFileSync(path.join(other, 'x.tgz'), '');
	harness.removePackage(path.join(other, 'x.tgz'));
	assert.ok(fs.existsSync(other), 'a folder not made by packPackage stays');
	harness.removePackage(tarball);
	harness.removePackage(tarball);
	assert.deepEqual(fs.readdirSync(tmp), [path.basename(other)]);
	fs.rmSync(other, { recursive: true });
}, 180_000);
