/**
 * Issue 27 §1: one setting for the n8n version and one for the Node that runs it, for every caller of the
 * harness (scripts/lib/n8n.js: e2e helpers, demo, benches, queue mode). CONTRACTS_N8N_VERSION (exact x.y.z,
 * default 2.4.8) picks the cache folder ensureN8n() installs into; CONTRACTS_N8N_NODE (a path, default the
 * Node running the harness) is the binary every n8n process and CLI command is spawned with; each Node major
 * gets its own install folder (native addons are built for one ABI), Node 20 keeps the folder name of before.
 * The Node stand-in is a shell script that answers `-p process.versions.node` with 24.21.0 and writes the
 * arguments of any other call to a file, so the test sees which binary ran what.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, jest, test } from '@jest/globals';

interface Harness {
	n8nVersion(): string;
	n8nNode(): string;
	n8nInstallDir(o?: { version?: string; node?: string }): string;
	isN8nInstalled(o?: { version?: string; node?: string }): boolean;
	ensureN8n(o?: { version?: string; node?: string }): string;
	createInstance: unknown;
	N8nInstance: new (
		folder: string,
		bin: string,
		log: (line: string) => void,
		node?: string,
	) => { node: string; cli(args: string[]): Promise<string>; env(): Record<string, string | undefined> };
	N8N_VERSION: string;
}

let scratch: string;
let fakeNode: string;
let calls: string;
const saved = { ...process.env };

/** scripts/lib/n8n.js loaded afresh with `env` set (it reads the cache folder and N8N_VERSION at load). */
function load(env: Record<string, string | undefined>): Harness {
	for (const key of ['CONTRACTS_N8N_VERSION', 'CONTRACTS_N8N_NODE', 'N8N_CONTRACTS_CACHE']) delete process.env[key];
	Object.assign(process.env, env);
	let harness: Harness | undefined;
	jest.isolateModules(() => {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		harness = require('../../scripts/lib/n8n.js') as Harness;
	});
	return harness as Harness;
}

beforeEach(() => {
	scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-n8n-setting-'));
	fakeNode = path.join(scratch, 'bin', 'node');
	calls = path.join(scratch, 'calls.txt');
	fs.mkdirSync(path.dirname(fakeNode));
	fs.writeFileSync(
		fakeNode,
		`#!/bin/sh\nif [ "$1" = "-p" ]; then echo 24.21.0; exit 0; fi\nprintf '%s\\n' "$0" "$@" > "${calls}"\n`,
		{ mode: 0o755 },
	);
});

afterEach(() => {
	for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
	Object.assign(process.env, saved);
	fs.rmSync(scratch, { recursive: true, force: true });
});

test('without settings: n8n 2.4.8 on the Node running the harness, in the cache folder of before (n8n-2.4.8)', () => {
	const harness = load({ N8N_CONTRACTS_CACHE: scratch });
	assert.equal(harness.n8nVersion(), '2.4.8');
	assert.equal(harness.N8N_VERSION, '2.4.8');
	assert.equal(harness.n8nNode(), process.execPath);
	const major = Number(process.versions.node.split('.')[0]);
	assert.equal(harness.n8nInstallDir(), path.join(scratch, major === 20 ? 'n8n-2.4.8' : `n8n-2.4.8-node${major}`));
	assert.equal(harness.isN8nInstalled(), false, 'nothing is installed in an empty cache');
});

test('CONTRACTS_N8N_VERSION and CONTRACTS_N8N_NODE choose the version, the Node and a folder per Node major', () => {
	const harness = load({ N8N_CONTRACTS_CACHE: scratch, CONTRACTS_N8N_VERSION: '2.41.1', CONTRACTS_N8N_NODE: fakeNode });
	assert.equal(harness.n8nVersion(), '2.41.1');
	assert.equal(harness.N8N_VERSION, '2.41.1');
	assert.equal(harness.n8nNode(), fakeNode);
	assert.equal(harness.n8nInstallDir(), path.join(scratch, 'n8n-2.41.1-node24'));
});

test('a version that is not exact, or a Node path that does not exist, is refused naming the setting', () => {
	let harness = load({ N8N_CONTRACTS_CACHE: scratch });
	process.env.CONTRACTS_N8N_VERSION = 'latest';
	assert.throws(() => harness.n8nVersion(), /CONTRACTS_N8N_VERSION must be an exact version/);
	process.env.CONTRACTS_N8N_VERSION = '2.41';
	assert.throws(() => harness.n8nVersion(), /CONTRACTS_N8N_VERSION/);
	assert.throws(() => load({ CONTRACTS_N8N_VERSION: '^2.41.1' }), /CONTRACTS_N8N_VERSION/, 'already at load');
	harness = load({ N8N_CONTRACTS_CACHE: scratch, CONTRACTS_N8N_NODE: path.join(scratch, 'no-node') });
	assert.throws(() => harness.n8nNode(), /CONTRACTS_N8N_NODE: .*no-node does not exist/);
});

test('an installed n8n is reused, and its CLI commands run on the Node it was installed for', async () => {
	const harness = load({ N8N_CONTRACTS_CACHE: scratch, CONTRACTS_N8N_VERSION: '2.41.1', CONTRACTS_N8N_NODE: fakeNode });
	const dir = path.join(scratch, 'n8n-2.41.1-node24');
	const script = path.join(dir, 'node_modules', 'n8n', 'bin', 'n8n');
	fs.mkdirSync(path.dirname(script), { recursive: true });
	fs.writeFileSync(script, '');
	fs.writeFileSync(path.join(dir, '.installed'), 'test');
	assert.equal(harness.isN8nInstalled(), true);
	const bin = harness.ensureN8n();
	assert.equal(bin, script, 'no install: the cached CLI script');
	// the setting is cleared afterwards: the instance still uses the Node the CLI was installed for
	delete process.env.CONTRACTS_N8N_NODE;
	const instance = new harness.N8nInstance(path.join(scratch, 'user'), bin, () => {});
	fs.mkdirSync(path.join(scratch, 'user'));
	assert.equal(instance.node, fakeNode);
	await instance.cli(['list:workflow']);
	assert.deepEqual(fs.readFileSync(calls, 'utf8').trim().split('\n'), [fakeNode, script, 'list:workflow']);
	// n8n spawns its JS task runner as `node` from PATH: the same Node comes first there
	assert.equal(instance.env().PATH?.split(path.delimiter)[0], path.dirname(fakeNode));
	// an explicit node wins
	const other = new harness.N8nInstance(path.join(scratch, 'user'), bin, () => {}, process.execPath);
	assert.equal(other.node, process.execPath);
});
