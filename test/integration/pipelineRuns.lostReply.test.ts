/**
 * Issue 26 item 1: every pipeline_runs state change is safe to retry after a lost reply. A TCP proxy
 * between the operations and the real PostgreSQL forwards the state-changing statement and cuts the
 * connection as soon as the server starts to answer (the statement committed, the caller gets 503); the
 * caller then retries as n8n would (same input; for Capture the same call key). Asserted: the end state
 * equals one call, the retry is answered as the first call would have been (`replayed: true`), never a 409
 * that strands the run, and no work runs twice (processors and the step's "work" counted in stand-ins).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { Pool } from 'pg';
import { capture, CAPTURE_REPLAY_WINDOW_SECONDS } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { failRun } from '../../nodes/PipelineCapture/actions/run/fail.operation';
import { sweep } from '../../nodes/PipelineCapture/actions/run/sweep.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { ContractError } from '../../nodes/shared/errors';
import { WorkflowDefinition } from '../../nodes/shared/stateMachine';
import type { TestDatabase } from '../helpers/db';
import { closeProxiedDatabase, setupProxiedDatabase } from '../helpers/proxiedDatabase';
import type { TcpProxy } from '../helpers/tcpProxy';

let db: TestDatabase;
let proxy: TcpProxy;
let proxied: Pool;
beforeAll(async () => {
	({ db, proxy, proxied } = await setupProxiedDatabase());
});
afterAll(() => closeProxiedDatabase({ db, proxy, proxied }));

const plain = shippedDefinition();

/** The shipped definition with one counting SYNC processor on transition `name` of `state`. */
function withProcessor(state: string, name: string) {
	const base = structuredClone(plain) as unknown as {
		states: Record<string, { transitions: { name: string; processors?: unknown[] }[] }>;
	};
	base.states[state].transitions.find((t) => t.name === name)!.processors = [
		{ type: 'EXTERNAL', name: 'count', executionMode: 'SYNC', config: { calculationNodesTags: 'count' } },
	];
	return WorkflowDefinition.parse(base);
}

/** A stand-in processor that counts its runs per run id. */
function counter() {
	const runs = new Map<string, number>();
	return {
		runs,
		runProcessor: async (_processor: unknown, _transition: unknown, entity: unknown) => {
			const id = String((entity as { id: string }).id);
			runs.set(id, (runs.get(id) ?? 0) + 1);
			return { success: true };
		},
	};
}

async function newRun() {
	const { request_id } = await createRun(db.pool, { user_id: `lr-${randomUUID()}`, query: 'q' });
	return request_id;
}

async function row(id: string) {
	return (await db.pool.query('SELECT * FROM maas.pipeline_runs WHERE id = $1', [id])).rows[0];
}

/** `call` with the reply of its first request containing `marker` dropped: it must fail with 503. */
async function withLostReply<T>(marker: string, call: () => Promise<T>): Promise<void> {
	const before = proxy.dropped;
	proxy.dropReplyTo(marker);
	await assert.rejects(call(), (e: ContractError) => e.statusCode === 503 && e.retryable === true);
	assert.equal(proxy.dropped, before + 1, 'the reply was dropped');
}

test('Capture: reply lost after COMMIT; the retry with the same call key gets the same capture (replayed), its processor runs once, others lose', async () => {
	const def = withProcessor('NEW', 'CAPTURE_ANALYSIS');
	const processors = counter();
	const id = await newRun();
	const key = `exec-1:Capture:0:0`;
	const call = () =>
		capture(
			proxied,
			def,
			{ run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'n8n-1', capture_key: key },
			processors,
		);
	await withLostReply('capture_key = $7', call);
	const committed = await row(id);
	assert.equal(committed.status, 'ANALYZING', 'the first call committed');
	assert.equal(processors.runs.get(id) ?? 0, 0, 'the first call ran no processor (it failed on the capture)');
	const retry = await call();
	assert.deepEqual([retry.captured, retry.replayed, retry.reason], [true, true, null]);
	assert.equal(retry.run.capture_token, committed.capture_token, 'the token the first call committed');
	assert.equal(processors.runs.get(id), 1, 'the processor ran once, on the retry');
	// another caller (another key) loses, as to any winner
	const other = await capture(db.pool, def, {
		run_id: id,
		transition: 'CAPTURE_ANALYSIS',
		worker: 'n8n-2',
		capture_key: 'exec-2:Capture:0:0',
	});
	assert.deepEqual([other.captured, other.reason, other.replayed], [false, 'TAKEN', undefined]);
	// without a key there is no replay (a direct caller keeps the old answer)
	const keyless = await capture(db.pool, def, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'n8n-1' });
	assert.equal(keyless.captured, false);
	// the retried capture's token completes the step
	const done = await completeStep(db.pool, plain, {
		run_id: id,
		transition: 'ANALYSIS_DONE',
		capture_token: retry.run.capture_token,
		result: { ok: 1 },
	});
	assert.equal(done.status, 'ANALYZED');
	assert.equal(processors.runs.get(id), 1);
});

test('Complete Step: reply lost after COMMIT; the retry with the same token is answered replayed (not 409), nothing written or run twice', async () => {
	const def = withProcessor('RESPONDING', 'RESPONSE_DONE');
	const processors = counter();
	const id = await newRun();
	// up to RESPONDING on the direct pool
	let token = (await capture(db.pool, plain, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w' })).run
		.capture_token as string;
	await completeStep(db.pool, plain, { run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: {} });
	token = (await capture(db.pool, plain, { run_id: id, transition: 'CAPTURE_ASSEMBLY', worker: 'w' })).run
		.capture_token as string;
	await completeStep(db.pool, plain, { run_id: id, transition: 'ASSEMBLY_DONE', capture_token: token, result: 'ctx' });
	token = (await capture(db.pool, plain, { run_id: id, transition: 'CAPTURE_RESPONSE', worker: 'w' })).run
		.capture_token as string;
	const call = () =>
		completeStep(
			proxied,
			def,
			{ run_id: id, transition: 'RESPONSE_DONE', capture_token: token, result: 'the answer' },
			processors,
		);
	await withLostReply('completed_steps = array_append', call);
	assert.equal((await row(id)).status, 'COMPLETED', 'the first call committed');
	const retry = await call();
	assert.deepEqual([retry.status, retry.replayed, retry.warnings], ['COMPLETED', true, []]);
	assert.equal(processors.runs.get(id), 1, 'the processor ran once (the retry ran none)');
	const logs = await db.pool.query(
		"SELECT count(*)::int AS n FROM maas.raw_logs WHERE run_id = $1 AND message_type = 'assistant_response'",
		[id],
	);
	assert.equal(logs.rows[0].n, 1, 'the answer was logged once');
	const after = await row(id);
	assert.deepEqual([after.final_answer, after.capture_token, after.completed_steps.length], ['the answer', null, 3]);
	assert.ok(
		!JSON.stringify(after.completed_steps).includes(token),
		'the row keeps a digest of the token, not the token',
	);
	// a wrong token is still refused
	await assert.rejects(
		completeStep(db.pool, plain, {
			run_id: id,
			transition: 'RESPONSE_DONE',
			capture_token: randomUUID(),
			result: 'x',
		}),
		(e: ContractError) => e.statusCode === 409 && e.details.code === 'ILLEGAL_TRANSITION',
	);
});

test('Complete Step: a retry that arrives after the next step was captured and completed is still a replay', async () => {
	const id = await newRun();
	const first = (await capture(db.pool, plain, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w' })).run
		.capture_token as string;
	const call = () =>
		completeStep(proxied, plain, { run_id: id, transition: 'ANALYSIS_DONE', capture_token: first, result: { a: 1 } });
	await withLostReply('completed_steps = array_append', call);
	const next = (await capture(db.pool, plain, { run_id: id, transition: 'CAPTURE_ASSEMBLY', worker: 'w2' })).run
		.capture_token as string;
	await completeStep(db.pool, plain, { run_id: id, transition: 'ASSEMBLY_DONE', capture_token: next, result: 'c' });
	const retry = await call();
	assert.deepEqual([retry.status, retry.replayed], ['READY', true]);
	assert.deepEqual((await row(id)).analysis_result, { a: 1 });
});

test('Fail: reply lost after COMMIT; the retry with the same error is answered replayed (not 409 ALREADY_TERMINAL); another error still is 409', async () => {
	const id = await newRun();
	await capture(db.pool, plain, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	const error = { message: 'model down', code: 'UPSTREAM' };
	const call = () => failRun(proxied, plain, { run_id: id, error, call_key: 'fail-key-1' });
	await withLostReply("previous_transition = 'FAIL'", call);
	const retry = await call();
	assert.deepEqual([retry.status, retry.replayed, retry.error], ['FAILED', true, error]);
	assert.equal('fail_key' in retry, false, 'the bookkeeping is not in the output');
	const after = await row(id);
	assert.deepEqual([after.status, after.previous_transition, after.error], ['FAILED', 'FAIL', error]);
	// the same error from another caller (another key, or none) is not this call's replay
	for (const call_key of ['fail-key-2', null]) {
		await assert.rejects(
			failRun(db.pool, plain, { run_id: id, error, call_key }),
			(e: ContractError) => e.statusCode === 409 && e.details.code === 'ALREADY_TERMINAL',
		);
	}
	await assert.rejects(
		failRun(db.pool, plain, { run_id: id, error: { message: 'something else' } }),
		(e: ContractError) => e.statusCode === 409 && e.details.code === 'ALREADY_TERMINAL',
	);
});

test("Release (a capture's processor failed): the release's reply lost; one failure counted, the run back once, the caller's retry captures it", async () => {
	const def = withProcessor('NEW', 'CAPTURE_ANALYSIS');
	const id = await newRun();
	let attempts = 0;
	const failingOnce = {
		runProcessor: async () => (++attempts === 1 ? { success: false, error: 'down' } : { success: true }),
		maxProcessorFailures: 3,
	};
	const key = 'exec-r:Capture:0:0';
	const call = () =>
		capture(proxied, def, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w', capture_key: key }, failingOnce);
	const before = proxy.dropped;
	proxy.dropReplyTo('processor_failures + 1');
	// the processor's failure is what the caller gets (400), whatever became of the reply
	await assert.rejects(call(), (e: ContractError) => e.statusCode === 400);
	assert.equal(proxy.dropped, before + 1);
	const released = await row(id);
	assert.deepEqual(
		[released.status, released.previous_transition, released.capture_token, released.processor_failures],
		['NEW', 'RELEASE', null, 1],
		'released once, counted once',
	);
	const retry = await call();
	assert.deepEqual([retry.captured, retry.replayed], [true, undefined]);
	assert.equal(attempts, 2);
	assert.equal((await row(id)).processor_failures, 1);
});

test('Sweep: reply lost after COMMIT; the retry releases nothing more, the run is captured exactly once after it, the stale worker is refused', async () => {
	const id = await newRun();
	const stale = (await capture(db.pool, plain, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'dead' })).run
		.capture_token as string;
	await db.pool.query("UPDATE maas.pipeline_runs SET updated_at = now() - interval '1 hour' WHERE id = $1", [id]);
	const call = () => sweep(proxied, plain, { stuck_after_seconds: 600, lost_after_seconds: 600, limit: 10_000 });
	await withLostReply("previous_transition = 'RELEASE'", call);
	const released = await row(id);
	assert.deepEqual([released.status, released.previous_transition, released.capture_token], ['NEW', 'RELEASE', null]);
	const updatedAt = released.updated_at.getTime();
	const retry = await call();
	assert.ok(!retry.released.some((r) => r.id === id), 'the retry released nothing again');
	assert.equal((await row(id)).updated_at.getTime(), updatedAt, 'the retry did not touch the run');
	// the released run is captured by exactly one of 8 workers; the dead worker's token completes nothing
	const wins = (
		await Promise.all(
			Array.from({ length: 8 }, (_, i) =>
				capture(db.pool, plain, {
					run_id: id,
					transition: 'CAPTURE_ANALYSIS',
					worker: `w${i}`,
					capture_key: `e${i}:C:0:0`,
				}),
			),
		)
	).filter((c) => c.captured);
	assert.equal(wins.length, 1);
	await assert.rejects(
		completeStep(db.pool, plain, { run_id: id, transition: 'ANALYSIS_DONE', capture_token: stale, result: {} }),
		(e: ContractError) => e.statusCode === 409,
	);
});

test('Capture: the same call key from another worker, or after the replay window, is not a replay (TAKEN, no token)', async () => {
	const def = withProcessor('NEW', 'CAPTURE_ANALYSIS');
	const processors = counter();
	const id = await newRun();
	const key = JSON.stringify(['instance-a', 'wf', '1', 'Capture', 0, 0]);
	const first = await capture(
		db.pool,
		def,
		{ run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'n8n-a', capture_key: key },
		processors,
	);
	assert.equal(first.captured, true);
	// another n8n instance / worker whose execution id collides: same key, another worker
	const other = await capture(
		db.pool,
		def,
		{ run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'n8n-b', capture_key: key },
		processors,
	);
	assert.deepEqual([other.captured, other.reason, other.replayed], [false, 'TAKEN', undefined]);
	// the same worker and key, but the capture is older than the replay window (a re-run, an id used again)
	await db.pool.query(
		`UPDATE maas.pipeline_runs SET updated_at = now() - make_interval(secs => $2::float8 + 1) WHERE id = $1`,
		[id, CAPTURE_REPLAY_WINDOW_SECONDS],
	);
	const late = await capture(
		db.pool,
		def,
		{ run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'n8n-a', capture_key: key },
		processors,
	);
	assert.deepEqual([late.captured, late.reason, late.replayed], [false, 'TAKEN', undefined]);
	assert.equal(processors.runs.get(id), 1, 'the processor ran for the winner only');
});

test("Capture: a retry after the capture's processors succeeded (Retry On Fail re-runs every item) replays without running them again", async () => {
	const def = withProcessor('NEW', 'CAPTURE_ANALYSIS');
	const processors = counter();
	const id = await newRun();
	const input = { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'n8n-1', capture_key: 'k-processed' };
	const first = await capture(db.pool, def, input, processors);
	assert.equal(first.captured, true);
	assert.equal(processors.runs.get(id), 1);
	assert.equal((await row(id)).capture_processed, true, 'recorded with the capture');
	const again = await capture(db.pool, def, input, processors);
	assert.deepEqual([again.captured, again.replayed], [true, true]);
	assert.equal(again.run.capture_token, first.run.capture_token);
	assert.equal(processors.runs.get(id), 1, 'the SYNC processor did not run twice');
});

test('the retry bookkeeping (completed_steps, capture_key, capture_processed, fail_key) is in no output and not in what processors receive', async () => {
	const def = withProcessor('ANALYZING', 'ANALYSIS_DONE');
	const seen: Record<string, unknown>[] = [];
	const runProcessor = async (_p: unknown, _t: unknown, entity: unknown) => {
		seen.push(entity as Record<string, unknown>);
		return { success: true };
	};
	const captureDef = withProcessor('NEW', 'CAPTURE_ANALYSIS');
	const id = await newRun();
	const input = { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'n8n-1', capture_key: 'k-strip' };
	const captured = await capture(db.pool, captureDef, input, { runProcessor });
	const replay = await capture(db.pool, captureDef, input, { runProcessor });
	const done = await completeStep(
		db.pool,
		def,
		{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: captured.run.capture_token, result: { a: 1 } },
		{ runProcessor },
	);
	const again = await completeStep(db.pool, def, {
		run_id: id,
		transition: 'ANALYSIS_DONE',
		capture_token: captured.run.capture_token,
		result: { a: 1 },
	});
	assert.equal(seen.length, 2);
	for (const shown of [captured.run, replay.run, done, again, ...seen]) {
		for (const column of ['completed_steps', 'capture_key', 'capture_processed', 'fail_key']) {
			assert.equal(column in shown, false, `${column} leaked`);
		}
	}
	assert.equal(again.replayed, true);
});
