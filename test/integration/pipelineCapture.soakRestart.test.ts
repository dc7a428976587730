/**
 * Issue 26, the capture soak across a real PostgreSQL restart: 500 runs × 8 capture workers (the soak of
 * test/helpers/captureSoak.ts) against an embedded PostgreSQL (real server binaries) that is restarted
 * (fast shutdown: every connection is cut, in-flight statements abort) after the first 100 runs completed,
 * with random reply drops after COMMIT on Capture and Complete Step throughout. Workers retry 503s with the
 * same input. Asserted and printed: 0 double captures, 0 runs stuck, 0 steps whose work ran twice.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll } from '@jest/globals';
import { Pool } from 'pg';
import { captureSoak, replyDropper, STATE_CHANGE_MARKERS } from '../helpers/captureSoak';
import { embeddedPostgresUnreachable, startMigratedEmbedded, type EmbeddedServer } from '../helpers/embeddedPostgres';
import { testSkipIf } from '../helpers/skip';

const RUNS = 500;
const WORKERS = 8;
const SKIP = embeddedPostgresUnreachable();

let server: EmbeddedServer;
let direct: Pool;
let pool: Pool;
let dropper: Awaited<ReturnType<typeof replyDropper>>;

beforeAll(async () => {
	if (SKIP) return;
	const started = await startMigratedEmbedded(2);
	({ server, pool: direct } = started);
	const { connection } = started;
	dropper = await replyDropper({ host: connection.host, port: connection.port }, 0.05, STATE_CHANGE_MARKERS);
	pool = new Pool({ ...connection, host: '127.0.0.1', port: dropper.port, max: WORKERS });
	pool.on('error', () => undefined);
}, 180_000);

afterAll(async () => {
	await pool?.end();
	await direct?.end();
	await dropper?.close();
	await server?.stop();
});

testSkipIf(SKIP)(
	`capture soak across a PostgreSQL restart: ${RUNS} runs × ${WORKERS} workers, random reply drops: 0 / 0 / 0`,
	async () => {
		let restartMs = 0;
		const c = await captureSoak({
			pool,
			check: direct,
			runs: RUNS,
			workers: WORKERS,
			atRuns: 100,
			during: async () => {
				const t = Date.now();
				await server.restart();
				restartMs = Date.now() - t;
			},
		});
		console.log(
			`capture soak across a restart (restart ${restartMs} ms, reply drops ${dropper.dropped()}): ${JSON.stringify(c)}`,
		);
		assert.ok(restartMs > 0, 'the server was restarted during the soak');
		assert.equal(c.doubleCaptures, 0, 'double captures');
		assert.equal(c.stuck, 0, 'runs stuck');
		assert.equal(c.workedTwice, 0, 'steps whose work ran twice');
		assert.equal(c.refused + c.errors, 0, 'no call refused or failed');
		assert.equal(c.answersLogged, RUNS, 'one answer logged per run');
	},
	180_000,
);
