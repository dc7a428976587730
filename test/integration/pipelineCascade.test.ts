/**
 * The seed-004 engine inside the pipeline: automated transitions of an edited pipeline_runs definition
 * fire after Complete Step (first match in declaration order); all or nothing: a cascade stopped by the
 * visit limit writes nothing of the step and ends the run FAILED (from the state before the step) with
 * the reason; a SYNC processor failure writes nothing and answers 400 (the run stays where it was).
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { ContractError } from '../../nodes/shared/errors';
import { WorkflowDefinition, type EngineOptions } from '../../nodes/shared/stateMachine';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

const always = { type: 'group', operator: 'AND', conditions: [] };

/** The shipped definition plus automated transitions out of ANALYZED. */
function withAutomated(transitions: unknown[], extraStates: Record<string, unknown> = {}) {
	const base = structuredClone(shippedDefinition()) as unknown as {
		states: Record<string, { transitions: unknown[] }>;
	};
	base.states.ANALYZED.transitions.unshift(...transitions);
	Object.assign(base.states, extraStates);
	return WorkflowDefinition.parse(base);
}

async function captured(def: WorkflowDefinition) {
	const { request_id } = await createRun(db.pool, { user_id: `c-${Math.random()}`, query: 'q' });
	const c = await capture(db.pool, def, { run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	return { request_id, token: c.run.capture_token as string };
}

async function analysed(def: WorkflowDefinition, result: unknown, options: EngineOptions = {}) {
	const { request_id, token } = await captured(def);
	return completeStep(
		db.pool,
		def,
		{ run_id: request_id, transition: 'ANALYSIS_DONE', capture_token: token, result },
		options,
	);
}

async function row(id: string) {
	return (
		await db.pool.query(
			'SELECT status, capture_token, analysis_result, previous_transition, error FROM maas.pipeline_runs WHERE id = $1',
			[id],
		)
	).rows[0];
}

const processor = (name: string, executionMode: string) => ({
	type: 'EXTERNAL',
	name,
	executionMode,
	config: { calculationNodesTags: name },
});

test('an automated transition whose criterion matches the run fires after Complete Step; otherwise nothing moves', async () => {
	const def = withAutomated([
		{
			name: 'SKIP_ASSEMBLY',
			next: 'READY',
			criterion: { type: 'simple', jsonPath: '$.analysis_result.needs_context', operatorType: 'EQUALS', value: false },
		},
	]);
	const skipped = await analysed(def, { needs_context: false });
	assert.deepEqual([skipped.status, skipped.previous_transition], ['READY', 'SKIP_ASSEMBLY']);
	const kept = await analysed(def, { needs_context: true });
	assert.deepEqual([kept.status, kept.previous_transition], ['ANALYZED', 'ANALYSIS_DONE']);
});

test('a guarded automated loop hits the visit limit: the run ends FAILED with the reason', async () => {
	const def = withAutomated([{ name: 'LOOP_OUT', next: 'ASSEMBLING', criterion: always }], {
		ASSEMBLING: {
			transitions: [
				{ name: 'LOOP_BACK', next: 'ANALYZED', criterion: always },
				{ name: 'ASSEMBLY_DONE', next: 'READY', manual: true },
				{ name: 'FAIL', next: 'FAILED', manual: true },
			],
		},
	});
	const run = await analysed(def, { n: 1 });
	assert.equal(run.status, 'FAILED');
	const error = run.error as { code: string; message: string; stopped_at: string; attempted: string[] };
	assert.equal(error.code, 'CASCADE_LIMIT');
	assert.match(error.message, /visited more than 10 times/);
	assert.equal(error.attempted[0], 'ANALYSIS_DONE');
	const stored = await row(run.id);
	assert.equal(
		stored.analysis_result,
		null,
		'nothing of the step was written with the cascade: nothing of the operation applied',
	);
	assert.equal(stored.previous_transition, 'CASCADE_LIMIT');
});

test('the same Complete Step again after it ended the run at the cascade limit (a retry after a lost reply): a replay, not 409', async () => {
	const def = withAutomated([{ name: 'LOOP_OUT', next: 'ASSEMBLING', criterion: always }], {
		ASSEMBLING: {
			transitions: [
				{ name: 'LOOP_BACK', next: 'ANALYZED', criterion: always },
				{ name: 'ASSEMBLY_DONE', next: 'READY', manual: true },
				{ name: 'FAIL', next: 'FAILED', manual: true },
			],
		},
	});
	const { request_id, token } = await captured(def);
	const call = () =>
		completeStep(db.pool, def, { run_id: request_id, transition: 'ANALYSIS_DONE', capture_token: token, result: {} });
	const first = await call();
	const retry = await call();
	assert.deepEqual([first.status, retry.status, 'replayed' in retry], ['FAILED', 'FAILED', true]);
	assert.equal((await row(request_id)).previous_transition, 'CASCADE_LIMIT');
});

test('processors: SYNC failure → 400 WORKFLOW_FAILED, nothing applied; ASYNC_NEW_TX failure → transition completes; no runner → NO_COMPUTE_MEMBER_FOR_TAG', async () => {
	const def = withAutomated([
		{
			name: 'SKIP_ASSEMBLY',
			next: 'READY',
			processors: [processor('soft', 'ASYNC_NEW_TX'), processor('hard', 'SYNC')],
		},
	]);
	const seen: string[] = [];
	const runner = (failing: string[]): EngineOptions => ({
		runProcessor: async (p, _t, entity) => {
			seen.push(
				`${p.name}:${(entity as { status: string }).status}:${JSON.stringify((entity as { analysis_result: unknown }).analysis_result)}`,
			);
			return { success: !failing.includes(p.name) };
		},
	});
	const { request_id, token } = await captured(def);
	await assert.rejects(
		completeStep(
			db.pool,
			def,
			{ run_id: request_id, transition: 'ANALYSIS_DONE', capture_token: token, result: { a: 1 } },
			runner(['hard']),
		),
		(e: ContractError) =>
			e.statusCode === 400 && e.details.code === 'WORKFLOW_FAILED' && e.details.state === 'ANALYZING',
	);
	assert.deepEqual(
		seen,
		['soft:ANALYZED:{"a":1}', 'hard:ANALYZED:{"a":1}'],
		'processors see the run with the step result, as it will be written',
	);
	const stayed = await row(request_id);
	assert.deepEqual([stayed.status, stayed.capture_token, stayed.analysis_result], ['ANALYZING', token, null]);
	// the same worker retries once the processor is back: the soft one failing is only a warning
	const done = await completeStep(
		db.pool,
		def,
		{ run_id: request_id, transition: 'ANALYSIS_DONE', capture_token: token, result: { a: 2 } },
		runner(['soft']),
	);
	assert.deepEqual([done.status, done.previous_transition, done.analysis_result], ['READY', 'SKIP_ASSEMBLY', { a: 2 }]);
	const orphan = await captured(def);
	await assert.rejects(
		completeStep(db.pool, def, {
			run_id: orphan.request_id,
			transition: 'ANALYSIS_DONE',
			capture_token: orphan.token,
			result: {},
		}),
		(e: ContractError) => e.statusCode === 400 && e.details.code === 'NO_COMPUTE_MEMBER_FOR_TAG',
	);
	assert.equal((await row(orphan.request_id)).status, 'ANALYZING');
});

test('a processor on a CAPTURE transition runs for the winner; its SYNC failure rolls the capture back', async () => {
	const base = structuredClone(shippedDefinition()) as unknown as {
		states: Record<string, { transitions: { name: string; processors?: unknown[] }[] }>;
	};
	base.states.NEW.transitions.find((t) => t.name === 'CAPTURE_ANALYSIS')!.processors = [processor('gate', 'SYNC')];
	const def = WorkflowDefinition.parse(base);
	const { request_id } = await createRun(db.pool, { user_id: `c-${Math.random()}`, query: 'q' });
	await assert.rejects(
		capture(
			db.pool,
			def,
			{ run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: 'w' },
			{ runProcessor: async () => ({ success: false, error: 'closed' }) },
		),
		(e: ContractError) => e.statusCode === 400 && e.details.code === 'WORKFLOW_FAILED' && /closed/.test(e.message),
	);
	assert.deepEqual([(await row(request_id)).status, (await row(request_id)).capture_token], ['NEW', null]);
	const won = await capture(
		db.pool,
		def,
		{ run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: 'w' },
		{ runProcessor: async () => true },
	);
	assert.deepEqual([won.captured, won.run.status], [true, 'ANALYZING']);
});
