/**
 * The seed-004 engine inside the pipeline: automated transitions of an edited pipeline_runs definition
 * fire after Complete Step (first match in declaration order), and a cascade stopped by the visit
 * limit ends the run FAILED with the reason recorded.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { capture, completeStep, createRun } from '../../nodes/PipelineCapture/actions/run/runs';
import { shippedDefinition } from '../../nodes/PipelineCapture/transport/definition';
import { WorkflowDefinition } from '../../nodes/shared/stateMachine';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
before(async () => {
	db = await setupDatabase();
});
after(async () => {
	await db?.drop();
});

const always = { type: 'group', operator: 'AND', conditions: [] };

/** The shipped definition plus automated transitions out of ANALYZED. */
function withAutomated(transitions: unknown[], extraStates: Record<string, unknown> = {}) {
	const base = structuredClone(shippedDefinition()) as unknown as { states: Record<string, { transitions: unknown[] }> };
	base.states.ANALYZED.transitions.unshift(...transitions);
	Object.assign(base.states, extraStates);
	return WorkflowDefinition.parse(base);
}

async function analysed(def: WorkflowDefinition, result: unknown) {
	const { request_id } = await createRun(db.pool, { user_id: `c-${Math.random()}`, query: 'q' });
	const c = await capture(db.pool, def, { run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	return completeStep(db.pool, def, { run_id: request_id, transition: 'ANALYSIS_DONE', capture_token: c.run.capture_token, result });
}

test('an automated transition whose criterion matches the run fires after Complete Step; otherwise nothing moves', async () => {
	const def = withAutomated([
		{ name: 'SKIP_ASSEMBLY', next: 'READY', criterion: { type: 'simple', jsonPath: '$.analysis_result.needs_context', operatorType: 'EQUALS', value: false } },
	]);
	const skipped = await analysed(def, { needs_context: false });
	assert.deepEqual([skipped.status, skipped.previous_transition], ['READY', 'SKIP_ASSEMBLY']);
	const kept = await analysed(def, { needs_context: true });
	assert.deepEqual([kept.status, kept.previous_transition], ['ANALYZED', 'ANALYSIS_DONE']);
});

test('a guarded automated loop hits the visit limit: the run ends FAILED with the reason', async () => {
	const def = withAutomated(
		[{ name: 'LOOP_OUT', next: 'ASSEMBLING', criterion: always }],
		{ ASSEMBLING: { transitions: [{ name: 'LOOP_BACK', next: 'ANALYZED', criterion: always }, { name: 'ASSEMBLY_DONE', next: 'READY', manual: true }, { name: 'FAIL', next: 'FAILED', manual: true }] } },
	);
	const run = await analysed(def, {});
	assert.equal(run.status, 'FAILED');
	assert.equal((run.error as { code: string }).code, 'CASCADE_LIMIT');
	assert.match((run.error as { message: string }).message, /visited more than 10 times/);
});
