/**
 * Processors of Capture and Complete Step run before the write, outside any transaction (issue 13): no
 * row lock or pool connection is held while a sub-workflow runs; the write is a compare-and-set on the
 * capture token, so a run lost meanwhile (Fail, Sweep) is not overwritten and a duplicate Complete Step
 * writes nothing twice (issue 26: it is answered as a replay); failures are counted and end the run FAILED at Max Processor Failures; ASYNC_NEW_TX
 * warnings are returned and recorded in ops.errors (storable text, whatever the sub-workflow answered);
 * an import may put processors on FAIL / RELEASE / ARCHIVE (test/integration/pipelineOwnProcessors.test.ts
 * runs them).
 * Real PostgreSQL; the processors are in-process runners (the n8n sub-workflow path is in
 * test/e2e/pipeline_processors.test.ts).
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Client } from 'pg';
import { importOperation } from '../../nodes/PipelineCapture/actions/stateMachine/import.operation';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { failRun } from '../../nodes/PipelineCapture/actions/run/fail.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { ContractError } from '../../nodes/shared/errors';
import { WorkflowDefinition } from '../../nodes/shared/stateMachine';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

type Transitions = Record<string, { transitions: { name: string; processors?: unknown[] }[] }>;
const processor = (name: string, executionMode = 'SYNC') => ({
	type: 'EXTERNAL',
	name,
	executionMode,
	config: { calculationNodesTags: name },
});

/** The shipped definition with `processors` on transition `name` of `state`. */
function withProcessors(state: string, name: string, processors: unknown[]) {
	const base = structuredClone(shippedDefinition()) as unknown as { states: Transitions };
	base.states[state].transitions.find((t) => t.name === name)!.processors = processors;
	return WorkflowDefinition.parse(base);
}

const plain = shippedDefinition();

async function newRun() {
	const { request_id } = await createRun(db.pool, { user_id: `p-${Math.random()}`, query: 'q' });
	return request_id;
}

async function capturedRun() {
	const id = await newRun();
	const c = await capture(db.pool, plain, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	return { id, token: c.run.capture_token as string };
}

async function row(id: string) {
	return (
		await db.pool.query(
			'SELECT status, capture_token, analysis_result, previous_transition, error, processor_failures FROM maas.pipeline_runs WHERE id = $1',
			[id],
		)
	).rows[0];
}

/** Whether another session can lock the run's row right now (NOWAIT: fails at once when it is held). */
async function rowIsFree(id: string): Promise<boolean> {
	const client = new Client({ connectionString: db.url });
	await client.connect();
	try {
		await client.query('BEGIN');
		await client.query('SELECT 1 FROM maas.pipeline_runs WHERE id = $1 FOR UPDATE NOWAIT', [id]);
		await client.query('ROLLBACK');
		return true;
	} catch (error) {
		if ((error as { code?: string }).code === '55P03') return false; // lock_not_available
		throw error;
	} finally {
		await client.end();
	}
}

test('Complete Step: while its processor runs, the run row is not locked and no transaction is open', async () => {
	const def = withProcessors('ANALYZING', 'ANALYSIS_DONE', [processor('check')]);
	const { id, token } = await capturedRun();
	const seen: { free: boolean; idleInTx: number }[] = [];
	const done = await completeStep(
		db.pool,
		def,
		{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: { a: 1 } },
		{
			runProcessor: async () => {
				const idle = await db.pool.query(
					"SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
				);
				seen.push({ free: await rowIsFree(id), idleInTx: idle.rows[0].n });
				return { success: true };
			},
		},
	);
	assert.deepEqual(seen, [{ free: true, idleInTx: 0 }]);
	assert.equal(done.status, 'ANALYZED');
	assert.deepEqual((await row(id)).analysis_result, { a: 1 });
});

test('Capture: while its processor runs, the run row is not locked', async () => {
	const def = withProcessors('NEW', 'CAPTURE_ANALYSIS', [processor('gate')]);
	const id = await newRun();
	const free: boolean[] = [];
	const won = await capture(
		db.pool,
		def,
		{ run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w' },
		{ runProcessor: async () => (free.push(await rowIsFree(id)), true) },
	);
	assert.deepEqual(free, [true]);
	assert.deepEqual([won.captured, won.run.status], [true, 'ANALYZING']);
});

test("a run failed while Complete Step's processor ran is not overwritten: 409, nothing of the step written", async () => {
	const def = withProcessors('ANALYZING', 'ANALYSIS_DONE', [processor('slow')]);
	const { id, token } = await capturedRun();
	await assert.rejects(
		completeStep(
			db.pool,
			def,
			{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: { late: true } },
			{
				runProcessor: async () => {
					await failRun(db.pool, def, { run_id: id, error: { message: 'operator stopped it' } });
					return { success: true };
				},
			},
		),
		(e: ContractError) =>
			e.statusCode === 409 && e.details.code === 'ILLEGAL_TRANSITION' && e.details.status === 'FAILED',
	);
	const after = await row(id);
	assert.deepEqual(
		[after.status, after.analysis_result, (after.error as { message: string }).message],
		['FAILED', null, 'operator stopped it'],
	);
});

test('a duplicate Complete Step (same token, at the same time): the step is written once, the other call is answered as a replay', async () => {
	// issue 26: nothing is held while the processors run (no working token a lost reply could strand), so
	// a concurrent duplicate with the same token runs its processors too; the compare-and-set lets one
	// write, and the other, finding its token's step done, answers replayed (not 409)
	const def = withProcessors('ANALYZING', 'ANALYSIS_DONE', [processor('once')]);
	const { id, token } = await capturedRun();
	let calls = 0;
	let release!: () => void;
	const gate = new Promise<void>((resolve) => (release = resolve));
	const options = { runProcessor: async () => (calls++, await gate, true) };
	const call = (n: number) =>
		completeStep(
			db.pool,
			def,
			{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: { n } },
			options,
		);
	const first = call(1);
	while (calls === 0) await new Promise((r) => setTimeout(r, 5));
	const second = call(2);
	while (calls === 1) await new Promise((r) => setTimeout(r, 5));
	release();
	const answers = await Promise.all([first, second]);
	assert.deepEqual(answers.map((a) => [a.status, 'replayed' in a]).sort(), [
		['ANALYZED', false],
		['ANALYZED', true],
	]);
	const written = (await row(id)).analysis_result as { n: number };
	assert.ok(written.n === 1 || written.n === 2, 'one of the two results, written once');
	// a later retry with the same token is a replay too: nothing runs, nothing changes
	const retry = await call(3);
	assert.equal(calls, 2, 'the retry ran no processor');
	assert.deepEqual([retry.status, 'replayed' in retry, (await row(id)).analysis_result], ['ANALYZED', true, written]);
});

test('a refused Complete Step (criterion not met) leaves the worker its capture token', async () => {
	const base = structuredClone(shippedDefinition()) as unknown as {
		states: Record<string, { transitions: { name: string; criterion?: unknown }[] }>;
	};
	base.states.ANALYZING.transitions.find((t) => t.name === 'ANALYSIS_DONE')!.criterion = {
		type: 'simple',
		jsonPath: '$.analysis_result.ok',
		operatorType: 'EQUALS',
		value: true,
	};
	const def = WorkflowDefinition.parse(base);
	const { id, token } = await capturedRun();
	await assert.rejects(
		completeStep(db.pool, def, {
			run_id: id,
			transition: 'ANALYSIS_DONE',
			capture_token: token,
			result: { ok: false },
		}),
		(e: ContractError) => e.details.code === 'CRITERION_NOT_MET',
	);
	assert.equal((await row(id)).capture_token, token);
	const done = await completeStep(db.pool, def, {
		run_id: id,
		transition: 'ANALYSIS_DONE',
		capture_token: token,
		result: { ok: true },
	});
	assert.equal(done.status, 'ANALYZED');
});

test('Complete Step: processor failures are counted; the run ends FAILED at Max Processor Failures (0 = never)', async () => {
	const def = withProcessors('ANALYZING', 'ANALYSIS_DONE', [processor('broken')]);
	const failing = { runProcessor: async () => ({ success: false, error: 'upstream down' }) };
	const { id, token } = await capturedRun();
	const attempt = () =>
		completeStep(
			db.pool,
			def,
			{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: {} },
			{ ...failing, maxProcessorFailures: 2 },
		);
	await assert.rejects(
		attempt(),
		(e: ContractError) => e.statusCode === 400 && e.details.failures === 1 && e.details.run_status === 'ANALYZING',
	);
	const between = await row(id);
	assert.deepEqual(
		[between.status, between.capture_token, between.processor_failures],
		['ANALYZING', token, 1],
		'the worker keeps its capture for a retry',
	);
	await assert.rejects(
		attempt(),
		(e: ContractError) => e.statusCode === 400 && e.details.failures === 2 && e.details.run_status === 'FAILED',
	);
	const ended = await row(id);
	assert.deepEqual(
		[ended.status, ended.capture_token, ended.previous_transition, (ended.error as { code: string }).code],
		['FAILED', null, 'FAIL', 'PROCESSOR_FAILURES'],
	);
	assert.match((ended.error as { message: string }).message, /upstream down/);

	const unlimited = await capturedRun();
	for (let i = 1; i <= 4; i++) {
		await assert.rejects(
			completeStep(
				db.pool,
				def,
				{ run_id: unlimited.id, transition: 'ANALYSIS_DONE', capture_token: unlimited.token, result: {} },
				{ ...failing, maxProcessorFailures: 0 },
			),
			(e: ContractError) => e.details.failures === i && e.details.run_status === 'ANALYZING',
		);
	}
});

test('Capture: a failing processor gives the run back (RELEASE, not notified); the last allowed failure ends it FAILED', async () => {
	const def = withProcessors('NEW', 'CAPTURE_ANALYSIS', [processor('gate')]);
	const id = await newRun();
	const listener = new Client({ connectionString: db.url });
	await listener.connect();
	const notified: string[] = [];
	listener.on('notification', (n) => {
		const event = JSON.parse(n.payload ?? '{}') as { id: string; status: string };
		if (event.id === id) notified.push(event.status);
	});
	await listener.query('LISTEN pipeline_events');
	try {
		const failing = { runProcessor: async () => ({ success: false }), maxProcessorFailures: 2 };
		await assert.rejects(
			capture(db.pool, def, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w' }, failing),
			(e: ContractError) => e.details.failures === 1 && e.details.run_status === 'NEW',
		);
		const released = await row(id);
		assert.deepEqual([released.status, released.capture_token, released.previous_transition], ['NEW', null, 'RELEASE']);
		await assert.rejects(
			capture(db.pool, def, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w' }, failing),
			(e: ContractError) => e.details.failures === 2 && e.details.run_status === 'FAILED',
		);
		assert.equal((await row(id)).status, 'FAILED');
		await new Promise((r) => setTimeout(r, 200));
		assert.deepEqual(
			notified,
			['ANALYZING', 'ANALYZING', 'FAILED'],
			'the give-back is not notified (no hot retry): the Sweep re-emits it later; FAILED is',
		);
	} finally {
		await listener.end();
	}
});

test('ASYNC_NEW_TX warnings: returned and recorded in ops.errors as storable text, whatever the sub-workflow answered', async () => {
	const def = withProcessors('ANALYZING', 'ANALYSIS_DONE', [processor('soft', 'ASYNC_NEW_TX')]);
	const { id, token } = await capturedRun();
	const hostile = `bad\u0000answer \ud800 ${'x'.repeat(5000)}`;
	const done = await completeStep(
		db.pool,
		def,
		{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: { a: 1 } },
		{
			runProcessor: async () => ({ success: false, error: hostile }),
			origin: { workflow: 'MaaS', node: 'Complete Analysis' },
		},
	);
	assert.equal(done.status, 'ANALYZED');
	assert.equal(done.warnings.length, 1);
	const { rows } = await db.pool.query(
		"SELECT correlation_id, workflow, node, kind, status_code, message, details FROM ops.errors WHERE details->>'run_id' = $1",
		[id],
	);
	assert.equal(rows.length, 1);
	const [r] = rows;
	assert.deepEqual(
		[r.workflow, r.node, r.kind, r.status_code, r.details.code, r.details.severity, r.details.transition],
		['MaaS', 'Complete Analysis', 'upstream', 400, 'PROCESSOR_WARNING', 'warning', 'ANALYSIS_DONE'],
	);
	assert.equal(r.correlation_id, id, 'a run without a correlation_id is recorded under its own id');
	assert.ok(
		!r.message.includes('\u0000') && !/[\ud800-\udbff](?![\udc00-\udfff])/.test(r.message),
		'NUL and lone surrogates replaced',
	);
	assert.ok(r.message.length <= 1000 && r.message.startsWith('processor soft'));
	assert.equal(r.message, done.warnings[0]);

	const capDef = withProcessors('NEW', 'CAPTURE_ANALYSIS', [processor('soft', 'ASYNC_NEW_TX')]);
	const other = await newRun();
	const won = await capture(
		db.pool,
		capDef,
		{ run_id: other, transition: 'CAPTURE_ANALYSIS', worker: 'w' },
		{ runProcessor: async () => ({ success: false, error: 'late' }) },
	);
	assert.deepEqual([won.captured, won.warnings.length], [true, 1]);
	const recorded = await db.pool.query(
		"SELECT count(*)::int AS n FROM ops.errors WHERE details->>'run_id' = $1 AND details->>'code' = 'PROCESSOR_WARNING'",
		[other],
	);
	assert.equal(recorded.rows[0].n, 1);
});

test('Import for pipeline_runs accepts processors on FAIL, RELEASE and ARCHIVE; ARCHIVE only as COMPLETED → COMPLETED (naming the others)', async () => {
	// issue 26 item 2: Fail, the Sweep and Archive run their transitions' processors, so a definition may declare them
	const base = structuredClone(shippedDefinition()) as unknown as {
		name: string;
		states: Record<string, { transitions?: Record<string, unknown>[] }>;
	};
	const transitions = (state: string) => base.states[state].transitions as { name: string; processors?: unknown[] }[];
	transitions('ANALYZING').find((t) => t.name === 'RELEASE')!.processors = [processor('audit')];
	transitions('NEW').find((t) => t.name === 'FAIL')!.processors = [processor('audit')];
	base.states.COMPLETED = {
		transitions: [{ name: 'ARCHIVE', next: 'COMPLETED', manual: true, processors: [processor('index')] }],
	};
	const ctx = { pool: db.pool } as Parameters<typeof importOperation.execute>[0];
	const ref = { model: 'pipeline_runs', model_version: 1 };
	const accepted = await importOperation.execute(ctx, { body: { importMode: 'MERGE', workflows: [base] }, ...ref });
	assert.equal(accepted.data?.success, true);
	const stored = await db.pool.query<{ definition: { states: Record<string, { transitions: unknown[] }> } }>(
		"SELECT definition FROM ops.workflow_definitions WHERE model = 'pipeline_runs' AND name = $1",
		[base.name],
	);
	assert.equal(stored.rows.length, 1);
	assert.equal(stored.rows[0].definition.states.COMPLETED.transitions.length, 1, 'ARCHIVE stored');

	// ARCHIVE anywhere else, or leaving COMPLETED for another state, is refused and nothing is written
	const wrong = structuredClone(base);
	wrong.name = 'wrong-archive';
	(wrong.states.COMPLETED.transitions as { next: string }[])[0].next = 'FAILED';
	wrong.states.READY.transitions!.push({ name: 'ARCHIVE', next: 'READY', manual: true });
	const before = (await db.pool.query('SELECT count(*)::int AS n FROM ops.workflow_definitions')).rows[0].n;
	await assert.rejects(
		importOperation.execute(ctx, { body: { importMode: 'MERGE', workflows: [wrong] }, ...ref }),
		(e: ContractError) =>
			e.statusCode === 400 &&
			e.details.code === 'VALIDATION_FAILED' &&
			(e.details.problems as string[]).length === 2 &&
			(e.details.problems as string[]).some((p) => p.startsWith('states.COMPLETED.transitions[0]')) &&
			(e.details.problems as string[]).some((p) => p.startsWith('states.READY.transitions[2]')),
	);
	assert.equal(
		(await db.pool.query('SELECT count(*)::int AS n FROM ops.workflow_definitions')).rows[0].n,
		before,
		'a refused import writes nothing',
	);
	await db.pool.query("DELETE FROM ops.workflow_definitions WHERE model = 'pipeline_runs'");
});

test('Complete Step refuses a result PostgreSQL cannot store before holding the run: 422 naming the field, no processor, token kept', async () => {
	const def = withProcessors('ANALYZING', 'ANALYSIS_DONE', [processor('never')]);
	const { id, token } = await capturedRun();
	let calls = 0;
	const options = { runProcessor: async () => (calls++, true) };
	for (const [result, draft, field] of [
		[{ text: 'lone \ud800' }, undefined, 'result.text'],
		[{ ['k\u0000']: 1 }, undefined, 'result.k\u0000'],
		[{ a: 1 }, 'nul \u0000 in draft', 'draft_context'],
	] as const) {
		await assert.rejects(
			completeStep(
				db.pool,
				def,
				{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result, draft_context: draft },
				options,
			),
			(e: ContractError) => e.statusCode === 422 && e.details.field === field,
		);
	}
	assert.equal(calls, 0);
	assert.equal((await row(id)).capture_token, token);
	assert.equal(
		(
			await completeStep(
				db.pool,
				def,
				{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: { a: 1 } },
				options,
			)
		).status,
		'ANALYZED',
	);
});

test('a final write that fails after the processors gives the worker its token back, so it can retry', async () => {
	const def = withProcessors('ANALYZING', 'ANALYSIS_DONE', [processor('alter')]);
	const { id, token } = await capturedRun();
	let first = true;
	const options = {
		runProcessor: async () => {
			// no lock is held while processors run: a DDL can go through and make the write fail once
			if (first)
				await db.pool.query(
					"ALTER TABLE maas.pipeline_runs ADD CONSTRAINT no_boom CHECK (analysis_result IS NULL OR NOT analysis_result ? 'boom')",
				);
			first = false;
			return true;
		},
	};
	try {
		await assert.rejects(
			completeStep(
				db.pool,
				def,
				{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: { boom: 1 } },
				options,
			),
			(e: ContractError) => e.statusCode === 500,
		);
	} finally {
		await db.pool.query('ALTER TABLE maas.pipeline_runs DROP CONSTRAINT IF EXISTS no_boom');
	}
	const after = await row(id);
	assert.deepEqual([after.status, after.capture_token, after.analysis_result], ['ANALYZING', token, null]);
	assert.equal(
		(
			await completeStep(
				db.pool,
				def,
				{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: { boom: 1 } },
				options,
			)
		).status,
		'ANALYZED',
	);
});

test('ASYNC_NEW_TX warnings before a SYNC failure are in the 400 and recorded; a huge Max Processor Failures is clamped, not a database error', async () => {
	const def = withProcessors('ANALYZING', 'ANALYSIS_DONE', [processor('soft', 'ASYNC_NEW_TX'), processor('hard')]);
	const { id, token } = await capturedRun();
	await assert.rejects(
		completeStep(
			db.pool,
			def,
			{ run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: {} },
			{ runProcessor: async () => ({ success: false, error: 'down' }), maxProcessorFailures: 3e9 },
		),
		(e: ContractError) =>
			e.statusCode === 400 &&
			(e.details.warnings as string[]).length === 1 &&
			e.details.failures === 1 &&
			e.details.run_status === 'ANALYZING',
	);
	const recorded = await db.pool.query(
		"SELECT count(*)::int AS n FROM ops.errors WHERE details->>'run_id' = $1 AND details->>'code' = 'PROCESSOR_WARNING'",
		[id],
	);
	assert.equal(recorded.rows[0].n, 1);
	assert.equal((await row(id)).capture_token, token);
});

test('a Complete Step refused because the run was failed meanwhile reports the committed state (not its stale snapshot)', async () => {
	const { id, token } = await capturedRun();
	const other = new Client({ connectionString: db.url });
	await other.connect();
	try {
		await other.query('BEGIN');
		await other.query("UPDATE maas.pipeline_runs SET status = 'FAILED', capture_token = NULL WHERE id = $1", [id]);
		const refused = completeStep(db.pool, plain, {
			run_id: id,
			transition: 'ANALYSIS_DONE',
			capture_token: token,
			result: {},
		}).then(
			() => null,
			(e: ContractError) => e,
		);
		await new Promise((r) => setTimeout(r, 150)); // the hold now waits for the row lock
		await other.query('COMMIT');
		const error = await refused;
		assert.ok(error instanceof ContractError);
		assert.deepEqual([error.statusCode, error.details.status], [409, 'FAILED']);
	} finally {
		await other.end();
	}
});
