/**
 * scripts/lib/cleanupOnSignals.js (the demo's cleanup on Ctrl-C / SIGTERM / SIGHUP), driven by an
 * EventEmitter in place of the process: steps run newest first, once; a failing step does not stop the
 * others; the exit code is 128 + the signal unless set; a second signal runs the force steps and exits
 * at once, naming what was not done.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from '@jest/globals';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { createCleanup } = require('../../scripts/lib/cleanupOnSignals');

function harness() {
	const target = new EventEmitter();
	const lines: string[] = [];
	const exits: number[] = [];
	let exited: (code: number) => void = () => {};
	const exitPromise = new Promise<number>((r) => (exited = r));
	const cleanup = createCleanup({
		log: (l: string) => lines.push(l),
		exit: (code: number) => (exits.push(code), exited(code)),
		target,
	});
	cleanup.install();
	return { target, lines, exits, exitPromise, cleanup };
}

test('a signal runs every step newest first, once, then exits with 128 + its number', async () => {
	const h = harness();
	const order: string[] = [];
	h.cleanup.add('first', () => order.push('first'));
	h.cleanup.add('second', async () => {
		await new Promise((r) => setTimeout(r, 10));
		order.push('second');
	});
	const undo = h.cleanup.add('undone by the script', () => order.push('never'));
	undo();
	h.target.emit('SIGTERM', 'SIGTERM');
	assert.equal(h.cleanup.stopping, true);
	assert.equal(await h.exitPromise, 143);
	assert.deepEqual(order, ['second', 'first']);
	assert.deepEqual(await h.cleanup.run(), [], 'run() again: the same result, nothing runs twice');
	assert.deepEqual(order, ['second', 'first']);
	assert.match(h.lines[0], /SIGTERM: cleaning up \(second; first\)/);
	h.cleanup.uninstall();
	assert.equal(h.target.listenerCount('SIGINT'), 0);
});

test('a step registered while the cleanup runs (by a step of the script under way) runs too', async () => {
	const h = harness();
	const order: string[] = [];
	h.cleanup.add('slow', async () => {
		await new Promise((r) => setTimeout(r, 20));
		order.push('slow');
	});
	h.target.emit('SIGINT', 'SIGINT');
	h.cleanup.add('late', () => order.push('late'));
	assert.equal(await h.exitPromise, 130);
	assert.deepEqual(order, ['slow', 'late']);
});

test('a failing step is reported and the others still run; exitCode 0 makes a signal the normal end', async () => {
	const h = harness();
	const order: string[] = [];
	h.cleanup.add('stop server', () => order.push('stop server'));
	h.cleanup.add('remove folder', () => {
		throw new Error('EBUSY: folder busy\nstack…');
	});
	h.cleanup.exitCode = 0;
	h.target.emit('SIGHUP', 'SIGHUP');
	assert.equal(await h.exitPromise, 0);
	assert.deepEqual(order, ['stop server']);
	assert.ok(h.lines.includes('cleanup: remove folder failed: EBUSY: folder busy'));
	assert.ok(h.lines.includes('cleanup done except: remove folder'));
});

test('a second Ctrl-C runs the force steps and exits at once, naming what was left', async () => {
	const h = harness();
	const forced: string[] = [];
	h.cleanup.add('stop n8n, remove /tmp/contracts-n8n-x', () => new Promise(() => {}), {
		force: () => forced.push('SIGKILL n8n'),
	});
	h.target.emit('SIGINT', 'SIGINT');
	await new Promise((r) => setTimeout(r, 20));
	assert.deepEqual(h.exits, [], 'the first Ctrl-C waits for the cleanup');
	h.target.emit('SIGINT', 'SIGINT');
	assert.deepEqual(h.exits, [130], 'the second exits synchronously');
	assert.deepEqual(forced, ['SIGKILL n8n']);
	assert.match(h.lines.at(-1)!, /SIGINT again: exiting now; not done: stop n8n, remove \/tmp\/contracts-n8n-x/);
});
