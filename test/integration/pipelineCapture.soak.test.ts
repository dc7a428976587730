/**
 * Issue 26, the capture soak: 500 pipeline runs × 8 capture workers through NEW → COMPLETED, with random
 * reply drops after COMMIT on Capture and Complete Step (a TCP forwarder in front of the real PostgreSQL
 * cuts the connection when the server starts to answer). Workers behave as the shipped ones
 * (test/helpers/captureSoak.ts): each waiting run is announced twice, a 503 is retried with the same input.
 * No Sweep runs, so a run stranded by a lost reply would stay stuck and show up. Asserted and printed:
 * 0 double captures, 0 runs stuck, 0 steps whose work ran twice.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Pool } from 'pg';
import { captureSoak, replyDropper, STATE_CHANGE_MARKERS } from '../helpers/captureSoak';
import { setupDatabase, type TestDatabase } from '../helpers/db';

const RUNS = 500;
const WORKERS = 8;

let db: TestDatabase;
let dropper: Awaited<ReturnType<typeof replyDropper>>;
let pool: Pool;

beforeAll(async () => {
	db = await setupDatabase();
	const target = new URL(db.url);
	dropper = await replyDropper(
		{ host: target.hostname, port: Number(target.port || 5432) },
		0.05,
		STATE_CHANGE_MARKERS,
	);
	pool = new Pool({
		host: '127.0.0.1',
		port: dropper.port,
		database: target.pathname.slice(1),
		user: decodeURIComponent(target.username || 'postgres'),
		password: decodeURIComponent(target.password) || undefined,
		max: WORKERS,
	});
	pool.on('error', () => undefined);
});

afterAll(async () => {
	await pool?.end();
	await dropper?.close();
	await db?.drop();
});

test(`capture soak: ${RUNS} runs × ${WORKERS} workers with random reply drops: 0 double captures, 0 stuck, 0 steps run twice`, async () => {
	const c = await captureSoak({ pool, check: db.pool, runs: RUNS, workers: WORKERS });
	console.log(`capture soak (reply drops ${dropper.dropped()}): ${JSON.stringify(c)}`);
	assert.ok(dropper.dropped() >= 20, `replies were dropped (${dropper.dropped()})`);
	assert.ok(c.replayedCaptures > 0 && c.replayedSteps > 0, 'both kinds of retry were exercised');
	assert.equal(c.doubleCaptures, 0, 'double captures');
	assert.equal(c.stuck, 0, 'runs stuck');
	assert.equal(c.workedTwice, 0, 'steps whose work ran twice');
	assert.equal(c.refused + c.errors, 0, 'no call refused or failed');
	assert.equal(c.answersLogged, RUNS, 'one answer logged per run');
	assert.equal(c.steps, RUNS * 3);
}, 120_000);
