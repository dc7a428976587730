/** pipeline_runs on real PostgreSQL (seed 001 + the shipped seed-004 definition): capture exactly once. */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Client } from 'pg';
import { capture, captureOperation } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { failRun } from '../../nodes/PipelineCapture/actions/run/fail.operation';
import { getStatus } from '../../nodes/PipelineCapture/actions/run/getStatus.operation';
import { sweep } from '../../nodes/PipelineCapture/actions/run/sweep.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { ContractError } from '../../nodes/shared/errors';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
const def = shippedDefinition();
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

const STEPS = [
	['CAPTURE_ANALYSIS', 'ANALYSIS_DONE', { needs_context: false }],
	['CAPTURE_ASSEMBLY', 'ASSEMBLY_DONE', '<context>payload</context>'],
	['CAPTURE_RESPONSE', 'RESPONSE_DONE', 'The answer.'],
] as const;

async function expectError(promise: Promise<unknown>, status: number, code: string): Promise<ContractError> {
	try {
		await promise;
	} catch (error) {
		assert.ok(error instanceof ContractError, String(error));
		assert.deepEqual([error.statusCode, error.details.code], [status, code], error.message);
		return error;
	}
	assert.fail(`expected ${status} ${code}`);
}

test('Create Run: NEW + raw_logs user_query in one statement, and a small NOTIFY on pipeline_events', async () => {
	const listener = new Client({ connectionString: db.url });
	await listener.connect();
	const events: Record<string, unknown>[] = [];
	listener.on('notification', (m) => events.push(JSON.parse(m.payload!)));
	await listener.query('LISTEN pipeline_events');
	const created = await createRun(db.pool, { user_id: 'u1', query: 'What did I ask yesterday?' });
	assert.equal(created.status, 'processing');
	const { rows } = await db.pool.query(
		'SELECT r.status, l.message_type, l.content FROM maas.pipeline_runs r JOIN maas.raw_logs l ON l.run_id = r.id WHERE r.id = $1',
		[created.request_id],
	);
	assert.deepEqual(rows, [{ status: 'NEW', message_type: 'user_query', content: 'What did I ask yesterday?' }]);
	for (let i = 0; i < 50 && events.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
	await listener.end();
	assert.deepEqual(events, [{ id: created.request_id, status: 'NEW', operation: 'INSERT' }]);
	await expectError(createRun(db.pool, { user_id: 'u1', query: ' ' }), 422, 'VALIDATION');
});

test('Capture: 20 concurrent workers on one run → exactly one captures, the others see "already captured"', async () => {
	const { request_id } = await createRun(db.pool, { user_id: 'u2', query: 'q' });
	const results = await Promise.all(
		Array.from({ length: 20 }, (_, i) =>
			capture(db.pool, def, { run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: `w${i}` }),
		),
	);
	assert.equal(results.filter((r) => r.captured).length, 1);
	assert.ok(results.every((r) => r.run.status === 'ANALYZING'));
});

test('Capture race, 300 runs × 4 workers: one winner per run, and every loser\'s "Not Captured" reports the state that won (TAKEN, ANALYZING), never the stale NEW', async () => {
	const { rows } = await db.pool.query<{ id: string }>(
		"INSERT INTO maas.pipeline_runs (user_id, user_query) SELECT 'race-' || g, 'q' FROM generate_series(1, 300) g RETURNING id",
	);
	const worker = (w: number) => ({
		pool: db.pool,
		definition: async () => def,
		worker: `w${w}`,
		llm: async () => assert.fail('no model'),
	});
	const outputs = await Promise.all(
		rows.flatMap((r) =>
			[0, 1, 2, 3].map((w) => captureOperation.execute(worker(w), { run_id: r.id, transition: 'CAPTURE_ANALYSIS' })),
		),
	);
	const winners = new Map<string, number>();
	const losers = new Map<string, number>();
	for (const out of outputs) {
		const data = out.data!;
		if (out.output === 0) {
			winners.set(String(data.run_id), (winners.get(String(data.run_id)) ?? 0) + 1);
		} else {
			const key = JSON.stringify({ captured: data.captured, status: data.status, reason: data.reason });
			losers.set(key, (losers.get(key) ?? 0) + 1);
		}
	}
	assert.equal(winners.size, 300);
	assert.ok(
		[...winners.values()].every((n) => n === 1),
		'exactly one winner per run',
	);
	assert.deepEqual([...losers], [[JSON.stringify({ captured: false, status: 'ANALYZING', reason: 'TAKEN' }), 900]]);
}, 120_000);

test('Capture refused by the blocking rule: "Not Captured" with the run still NEW and reason BLOCKED', async () => {
	await createRun(db.pool, { user_id: 'u-blocked', query: 'first' });
	const second = await createRun(db.pool, { user_id: 'u-blocked', query: 'second' });
	const out = await captureOperation.execute(
		{ pool: db.pool, definition: async () => def, worker: 'w', llm: async () => assert.fail('no model') },
		{ run_id: second.request_id, transition: 'CAPTURE_ANALYSIS' },
	);
	assert.equal(out.output, 1);
	assert.deepEqual([out.data!.status, out.data!.reason], ['NEW', 'BLOCKED']);
});

test('the whole path NEW → COMPLETED, results stored with their step, then the polling answer', async () => {
	const { request_id } = await createRun(db.pool, { user_id: 'u3', query: 'q' });
	assert.deepEqual(await getStatus(db.pool, { run_id: request_id, user_id: 'u3' }), {
		request_id,
		status: 'processing',
	});
	for (const [take, done, result] of STEPS) {
		const c = await capture(db.pool, def, { run_id: request_id, transition: take, worker: 'w' });
		assert.ok(c.captured);
		await completeStep(db.pool, def, {
			run_id: request_id,
			transition: done,
			capture_token: c.run.capture_token,
			result,
			draft_context: take === 'CAPTURE_ASSEMBLY' ? 'draft' : undefined,
		});
	}
	const { rows } = await db.pool.query(
		'SELECT status, analysis_result, draft_context, final_context_payload, final_answer FROM maas.pipeline_runs WHERE id = $1',
		[request_id],
	);
	assert.deepEqual(rows[0], {
		status: 'COMPLETED',
		analysis_result: { needs_context: false },
		draft_context: 'draft',
		final_context_payload: '<context>payload</context>',
		final_answer: 'The answer.',
	});
	assert.deepEqual(await getStatus(db.pool, { run_id: request_id, user_id: null }), {
		request_id,
		status: 'completed',
		answer: 'The answer.',
	});
	await expectError(failRun(db.pool, def, { run_id: request_id, error: { message: 'late' } }), 409, 'ALREADY_TERMINAL');
});

test('illegal transitions are refused with the legal ones listed; a wrong capture token cannot complete', async () => {
	const { request_id } = await createRun(db.pool, { user_id: 'u4', query: 'q' });
	const illegal = await expectError(
		capture(db.pool, def, { run_id: request_id, transition: 'JUMP', worker: 'w' }),
		409,
		'ILLEGAL_TRANSITION',
	);
	assert.ok((illegal.details.legal as string[]).includes('CAPTURE_ANALYSIS'));
	const c = await capture(db.pool, def, { run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	const wrong = await expectError(
		completeStep(db.pool, def, {
			run_id: request_id,
			transition: 'ANALYSIS_DONE',
			capture_token: '00000000-0000-4000-8000-000000000000',
			result: {},
		}),
		409,
		'ILLEGAL_TRANSITION',
	);
	assert.deepEqual(wrong.details.legal, ['ANALYSIS_DONE', 'RELEASE', 'FAIL']);
	await expectError(
		completeStep(db.pool, def, {
			run_id: request_id,
			transition: 'RESPONSE_DONE',
			capture_token: c.run.capture_token,
			result: 'x',
		}),
		409,
		'ILLEGAL_TRANSITION',
	);
	await expectError(
		capture(db.pool, def, {
			run_id: '7d4c8d2e-0000-4000-8000-000000000000',
			transition: 'CAPTURE_ANALYSIS',
			worker: 'w',
		}),
		404,
		'NOT_FOUND',
	);
	await expectError(getStatus(db.pool, { run_id: 'not-a-uuid', user_id: 'u4' }), 422, 'VALIDATION');
});

test('Fail: from any non-terminal state, with the error; the polling answer says failed', async () => {
	const { request_id } = await createRun(db.pool, { user_id: 'u5', query: 'q' });
	await capture(db.pool, def, { run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	await failRun(db.pool, def, { run_id: request_id, error: { message: 'model timed out 3 times' } });
	// the stored message is internal (no 4xx status): the caller reads the fixed text (issue 25 §4)
	assert.deepEqual(await getStatus(db.pool, { run_id: request_id, user_id: 'u5' }), {
		request_id,
		status: 'failed',
		error: 'the request could not be completed (status 500); the correlation_id identifies it in the error log',
	});
	const refused = await createRun(db.pool, { user_id: 'u5', query: 'q' });
	await failRun(db.pool, def, {
		run_id: refused.request_id,
		error: { message: 'the query is too long', kind: 'validation', status_code: 422 },
	});
	assert.equal(
		(await getStatus(db.pool, { run_id: refused.request_id, user_id: 'u5' })).error,
		'the query is too long',
	);
});

test('Sweep: a run stuck in progress goes back to waiting (its old worker can no longer complete); a waiting run is re-emitted', async () => {
	const stuck = await createRun(db.pool, { user_id: 'u6', query: 'q' });
	const waiting = await createRun(db.pool, { user_id: 'u6', query: 'q2' });
	const old = await capture(db.pool, def, { run_id: stuck.request_id, transition: 'CAPTURE_ANALYSIS', worker: 'slow' });
	await db.pool.query("UPDATE maas.pipeline_runs SET updated_at = now() - interval '10 minutes' WHERE id = ANY($1)", [
		[stuck.request_id, waiting.request_id],
	]);
	const swept = await sweep(db.pool, def, { stuck_after_seconds: 300, lost_after_seconds: 60, limit: 100 });
	assert.deepEqual(swept.released, [{ id: stuck.request_id, status: 'NEW' }]);
	assert.ok(swept.waiting.some((w) => w.id === waiting.request_id));
	const again = await capture(db.pool, def, {
		run_id: stuck.request_id,
		transition: 'CAPTURE_ANALYSIS',
		worker: 'fresh',
	});
	assert.ok(again.captured);
	await expectError(
		completeStep(db.pool, def, {
			run_id: stuck.request_id,
			transition: 'ANALYSIS_DONE',
			capture_token: old.run.capture_token,
			result: {},
		}),
		409,
		'ILLEGAL_TRANSITION',
	);
	await completeStep(db.pool, def, {
		run_id: stuck.request_id,
		transition: 'ANALYSIS_DONE',
		capture_token: again.run.capture_token,
		result: {},
	});
});

test('20 concurrent workers over 2,000 runs: every step of every run captured exactly once, every run completed once', async () => {
	const ids: string[] = [];
	const { rows } = await db.pool.query<{ id: string }>(
		`WITH runs AS (INSERT INTO maas.pipeline_runs (user_id, user_query) SELECT 'load-' || g, 'q' || g FROM generate_series(1, 2000) g RETURNING id) SELECT id FROM runs`,
	);
	ids.push(...rows.map((r) => r.id));
	const wins = new Map<string, number>();
	const waitingStates = ['NEW', 'ANALYZED', 'READY'];
	const take = { NEW: STEPS[0], ANALYZED: STEPS[1], READY: STEPS[2] } as Record<string, (typeof STEPS)[number]>;
	const worker = async (w: number) => {
		for (;;) {
			const { rows: batch } = await db.pool.query<{ id: string; status: string }>(
				"SELECT id, status FROM maas.pipeline_runs WHERE user_id LIKE 'load-%' AND status = ANY($1) ORDER BY random() LIMIT 25",
				[waitingStates],
			);
			if (batch.length === 0) {
				const { rows: left } = await db.pool.query(
					"SELECT count(*)::int AS n FROM maas.pipeline_runs WHERE user_id LIKE 'load-%' AND status NOT IN ('COMPLETED', 'FAILED')",
				);
				if (left[0].n === 0) return;
				continue;
			}
			for (const run of batch) {
				const [capture_, done, result] = take[run.status];
				const c = await capture(db.pool, def, { run_id: run.id, transition: capture_, worker: `w${w}` });
				if (!c.captured) continue;
				const key = `${run.id}:${capture_}`;
				wins.set(key, (wins.get(key) ?? 0) + 1);
				await completeStep(db.pool, def, {
					run_id: run.id,
					transition: done,
					capture_token: c.run.capture_token,
					result,
				});
			}
		}
	};
	await Promise.all(Array.from({ length: 20 }, (_, w) => worker(w)));
	assert.equal(wins.size, 6000, 'every run × 3 steps was captured');
	assert.ok(
		[...wins.values()].every((n) => n === 1),
		'and never twice',
	);
	const { rows: final } = await db.pool.query(
		"SELECT status, count(*)::int AS n FROM maas.pipeline_runs WHERE user_id LIKE 'load-%' GROUP BY status",
	);
	assert.deepEqual(final, [{ status: 'COMPLETED', n: 2000 }]);
	assert.equal(ids.length, 2000);
}, 300_000);
