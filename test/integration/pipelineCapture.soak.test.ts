/**
 * Issue 26, the capture soak: 500 pipeline runs × 8 capture workers through NEW → COMPLETED, with random
 * reply drops after COMMIT on Capture and Complete Step (a TCP forwarder in front of the real PostgreSQL
 * cuts the connection when the server starts to answer). Workers behave as the shipped ones: each waiting
 * run is announced twice (two workers race for it); a 503 is retried with the same input (Capture: the same
 * call key, as n8n's Retry On Fail; Complete Step: the same capture token). No Sweep runs, so a run stranded
 * by a lost reply would stay stuck and show up. Asserted and printed: 0 double captures, 0 runs stuck,
 * 0 steps whose work ran twice.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Pool } from 'pg';
import { capture, completeStep } from '../../nodes/PipelineCapture/actions/run/runs';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { ContractError } from '../../nodes/shared/errors';
import { setupDatabase, type TestDatabase } from '../helpers/db';

const RUNS = 500;
const WORKERS = 8;
const DROP_RATE = 0.05;
const MARKERS = ['capture_key = $7', 'completed_steps = array_append'].map((m) => Buffer.from(m));

let db: TestDatabase;
let server: net.Server;
let pool: Pool;
let dropped = 0;
const sockets = new Set<net.Socket>();

beforeAll(async () => {
	db = await setupDatabase();
	const target = new URL(db.url);
	// a forwarder that, for a random DROP_RATE of the state-changing statements, lets the request through
	// and cuts the connection at the server's first reply byte (the statement committed, the reply is lost)
	server = net.createServer((client) => {
		const upstream = net.connect(Number(target.port || 5432), target.hostname);
		let dropReply = false;
		for (const s of [client, upstream]) {
			sockets.add(s);
			s.on('close', () => sockets.delete(s));
			s.on('error', () => (client.destroy(), upstream.destroy()));
		}
		client.on('data', (chunk: Buffer) => {
			if (!dropReply && MARKERS.some((m) => chunk.includes(m)) && Math.random() < DROP_RATE) dropReply = true;
			upstream.write(chunk);
		});
		upstream.on('data', (chunk: Buffer) => {
			if (dropReply) {
				dropped++;
				client.destroy();
				upstream.destroy();
				return;
			}
			client.write(chunk);
		});
		client.on('end', () => upstream.end());
		upstream.on('end', () => client.end());
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	pool = new Pool({
		host: '127.0.0.1',
		port: (server.address() as net.AddressInfo).port,
		database: target.pathname.slice(1),
		user: decodeURIComponent(target.username || 'postgres'),
		password: decodeURIComponent(target.password) || undefined,
		max: WORKERS,
	});
	pool.on('error', () => undefined);
});

afterAll(async () => {
	await pool?.end();
	for (const s of sockets) s.destroy();
	await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
	await db?.drop();
});

const STAGES = [
	{ capture: 'CAPTURE_ANALYSIS', from: 'NEW', done: 'ANALYSIS_DONE', result: (id: string) => ({ run: id }) },
	{ capture: 'CAPTURE_ASSEMBLY', from: 'ANALYZED', done: 'ASSEMBLY_DONE', result: (id: string) => `ctx ${id}` },
	{ capture: 'CAPTURE_RESPONSE', from: 'READY', done: 'RESPONSE_DONE', result: (id: string) => `answer ${id}` },
] as const;

/** `call` retried on a retryable error (503: the reply was lost or the connection dropped), as n8n would. */
async function retrying<T>(call: () => Promise<T>, counts: { retries: number }): Promise<T> {
	for (let attempt = 0; ; attempt++) {
		try {
			return await call();
		} catch (error) {
			if (!(error instanceof ContractError && error.retryable) || attempt >= 50) throw error;
			counts.retries++;
			await new Promise((r) => setTimeout(r, 5 + attempt * 5));
		}
	}
}

test(`capture soak: ${RUNS} runs × ${WORKERS} workers with random reply drops: 0 double captures, 0 stuck, 0 steps run twice`, async () => {
	const def = shippedDefinition();
	const { rows } = await db.pool.query<{ id: string }>(
		`INSERT INTO maas.pipeline_runs (user_id, user_query) SELECT 'soak-' || g, 'q' FROM generate_series(1, $1) g RETURNING id`,
		[RUNS],
	);
	const stageOf = new Map(rows.map((r) => [r.id, 0]));
	// each waiting run is announced twice: two workers race for it
	const queue: string[] = rows.flatMap((r) => [r.id, r.id]);
	const captures = new Map<string, number>(); // `${run}:${stage}` → captures won (replays included)
	const work = new Map<string, number>(); // `${run}:${stage}` → times the step's work ran
	const counts = { retries: 0, replayedCaptures: 0, replayedSteps: 0, refused: 0, errors: 0 };
	let calls = 0;
	const worker = async (w: number) => {
		while (queue.length > 0) {
			const id = queue.shift()!;
			const stage = stageOf.get(id)!;
			if (stage >= STAGES.length) continue;
			const s = STAGES[stage];
			const key = `exec-${w}-${calls++}:Capture:0:0`;
			try {
				const c = await retrying(
					() => capture(pool, def, { run_id: id, transition: s.capture, worker: `w${w}`, capture_key: key }),
					counts,
				);
				if (!c.captured) continue;
				if (c.replayed) counts.replayedCaptures++;
				const k = `${id}:${stage}`;
				captures.set(k, (captures.get(k) ?? 0) + 1);
				// the step's work (the model call), counted
				work.set(k, (work.get(k) ?? 0) + 1);
				await new Promise((r) => setImmediate(r));
				const done = await retrying(
					() =>
						completeStep(pool, def, {
							run_id: id,
							transition: s.done,
							capture_token: c.run.capture_token,
							result: s.result(id),
						}),
					counts,
				);
				if ('replayed' in done) counts.replayedSteps++;
				stageOf.set(id, stage + 1);
				if (stage + 1 < STAGES.length) queue.push(id, id);
			} catch (error) {
				if (error instanceof ContractError && error.statusCode === 409) counts.refused++;
				else counts.errors++;
			}
		}
	};
	const started = Date.now();
	await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
	const ms = Date.now() - started;
	const final = await db.pool.query<{ status: string; n: number }>(
		`SELECT status, count(*)::int AS n FROM maas.pipeline_runs WHERE id = ANY($1::uuid[]) GROUP BY status`,
		[rows.map((r) => r.id)],
	);
	const stuck = final.rows.filter((r) => r.status !== 'COMPLETED').reduce((n, r) => n + r.n, 0);
	const doubleCaptures = [...captures.values()].filter((n) => n > 1).length;
	const workedTwice = [...work.values()].filter((n) => n > 1).length;
	const answers = await db.pool.query<{ n: number }>(
		`SELECT count(*)::int AS n FROM maas.raw_logs WHERE run_id = ANY($1::uuid[]) AND message_type = 'assistant_response'`,
		[rows.map((r) => r.id)],
	);
	console.log(
		`capture soak: ${RUNS} runs × ${WORKERS} workers in ${ms} ms; replies dropped ${dropped}, retries ${counts.retries}, ` +
			`replayed captures ${counts.replayedCaptures}, replayed steps ${counts.replayedSteps}, 409 ${counts.refused}, ` +
			`other errors ${counts.errors}; double captures ${doubleCaptures}, runs stuck ${stuck}, steps whose work ran twice ${workedTwice}, ` +
			`answers logged ${answers.rows[0].n}`,
	);
	assert.ok(dropped >= 20, `replies were dropped (${dropped})`);
	assert.ok(counts.replayedCaptures > 0 && counts.replayedSteps > 0, 'both kinds of retry were exercised');
	assert.equal(doubleCaptures, 0, 'double captures');
	assert.equal(stuck, 0, 'runs stuck');
	assert.equal(workedTwice, 0, 'steps whose work ran twice');
	assert.equal(counts.refused + counts.errors, 0, 'no call refused or failed');
	assert.equal(answers.rows[0].n, RUNS, 'one answer logged per run');
	assert.equal(captures.size, RUNS * STAGES.length);
}, 120_000);
