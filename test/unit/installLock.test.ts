/**
 * scripts/lib/n8n.js withInstallLock: the lock ensureN8n() installs n8n under, so e2e files on parallel jest
 * workers (and two demos) never run two npm installs into one cache folder. Real processes: four children take
 * the same lock at once; each writes "in" and "out" around a 300 ms hold. The lock is a folder (mkdir is atomic);
 * a lock older than its stale limit (a killed holder) is taken over.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from '@jest/globals';

const harness = path.join(__dirname, '..', '..', 'scripts', 'lib', 'n8n.js');

function child(lock: string, log: string, name: string): Promise<number> {
	const script = `
		const fs = require('node:fs');
		const { withInstallLock } = require(${JSON.stringify(harness)});
		withInstallLock(${JSON.stringify(lock)}, () => {}, () => {
			fs.appendFileSync(${JSON.stringify(log)}, 'in ${name}\\n');
			Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
			fs.appendFileSync(${JSON.stringify(log)}, 'out ${name}\\n');
		});`;
	return new Promise((resolve) =>
		spawn(process.execPath, ['-e', script], { stdio: 'inherit' }).once('exit', (code) => resolve(code ?? 1)),
	);
}

test('four processes taking the lock at once hold it one after another, and the lock is gone afterwards', async () => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-lock-'));
	try {
		const lock = path.join(dir, 'cache', 'n8n-x.lock'); // its parent does not exist yet, as on a fresh machine
		const log = path.join(dir, 'log');
		const codes = await Promise.all(['a', 'b', 'c', 'd'].map((n) => child(lock, log, n)));
		assert.deepEqual(codes, [0, 0, 0, 0]);
		const lines = fs.readFileSync(log, 'utf8').trim().split('\n');
		assert.equal(lines.length, 8);
		for (let i = 0; i < lines.length; i += 2) {
			const name = lines[i].slice(3);
			assert.deepEqual([lines[i], lines[i + 1]], [`in ${name}`, `out ${name}`], `no overlap: ${lines.join(', ')}`);
		}
		assert.equal(fs.existsSync(lock), false);
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

test('a stale lock (its holder killed long ago) is taken over', () => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-lock-'));
	try {
		const lock = path.join(dir, 'n8n-x.lock');
		fs.mkdirSync(lock);
		const old = new Date(Date.now() - 2 * 60 * 60_000);
		fs.utimesSync(lock, old, old);
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const { withInstallLock } = require(harness);
		assert.equal(
			withInstallLock(
				lock,
				() => {},
				() => 'ran',
			),
			'ran',
		);
		assert.equal(fs.existsSync(lock), false);
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});
