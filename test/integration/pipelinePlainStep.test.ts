/**
 * Issue 29 P7: Complete Step of a plain step (isPlainStep: no criterion, no processor, no cascade — every step
 * of the shipped definition) is one statement, the compare-and-set write, with the answers the read before it
 * gave: the run moved on, a replay for a token whose step committed, 409 ILLEGAL_TRANSITION for a run not
 * under this capture (legal transitions listed), 404 for an unknown run. A step the engine has work for
 * (criterion, processors, cascade) still reads the run first.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { Pool } from 'pg';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep, isPlainStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { edgeNamed, shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { ContractError } from '../../nodes/shared/errors';
import { WorkflowDefinition } from '../../nodes/shared/stateMachine';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await closeAllPools();
	await db?.drop();
});

const shipped = shippedDefinition();

type Editable = { states: Record<string, { transitions: Record<string, unknown>[] }> };

/** The shipped definition changed by `edit` (on a copy), parsed again. */
function changed(edit: (d: Editable) => void): WorkflowDefinition {
	const copy = structuredClone(shipped) as unknown as Editable;
	edit(copy);
	return WorkflowDefinition.parse(copy);
}

/** db.pool with a count of the statements sent through it. */
function counting() {
	const statements: string[] = [];
	const pool = {
		query: (...args: Parameters<Pool['query']>) => {
			statements.push(String(typeof args[0] === 'string' ? args[0] : (args[0] as { text: string }).text));
			return (db.pool.query as (...a: unknown[]) => unknown)(...args);
		},
	} as unknown as Pool;
	return { pool, statements };
}

async function capturedRun(definition = shipped) {
	const { request_id } = await createRun(db.pool, { user_id: `plain-${randomUUID()}`, query: 'q' });
	const c = await capture(db.pool, definition, { run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	return { id: request_id, token: c.run.capture_token as string };
}

async function refusal(call: Promise<unknown>): Promise<ContractError> {
	try {
		await call;
	} catch (error) {
		assert.ok(error instanceof ContractError, String(error));
		return error;
	}
	assert.fail('expected a ContractError');
}

test('isPlainStep: every completion of the shipped definition; not with a criterion, processors or a cascade', () => {
	for (const name of ['ANALYSIS_DONE', 'ASSEMBLY_DONE', 'RESPONSE_DONE'])
		assert.equal(isPlainStep(shipped, edgeNamed(shipped, name)), true, name);
	const done = (d: Editable) => d.states.ANALYZING.transitions.find((t) => t.name === 'ANALYSIS_DONE')!;
	const withCriterion = changed((d) => {
		done(d).criterion = { type: 'simple', jsonPath: '$.user_id', operatorType: 'NOT_NULL' };
	});
	const withProcessor = changed((d) => {
		done(d).processors = [
			{ type: 'EXTERNAL', name: 'p', executionMode: 'SYNC', config: { calculationNodesTags: 'p' } },
		];
	});
	const withCascade = changed((d) => {
		d.states.ANALYZED.transitions.unshift({ name: 'SKIP', next: 'READY' });
	});
	const withDisabledCascade = changed((d) => {
		d.states.ANALYZED.transitions.unshift({ name: 'SKIP', next: 'READY', disabled: true });
	});
	for (const [definition, plain] of [
		[withCriterion, false],
		[withProcessor, false],
		[withCascade, false],
		[withDisabledCascade, true],
	] as const)
		assert.equal(isPlainStep(definition, edgeNamed(definition, 'ANALYSIS_DONE')), plain);
});

test('a plain step is one statement: moved on, then replayed for the same token, both with the run as written', async () => {
	const { id, token } = await capturedRun();
	const { pool, statements } = counting();
	const input = { run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: { needs_context: false } };
	const done = await completeStep(pool, shipped, input);
	assert.equal(statements.length, 1);
	assert.deepEqual(
		[done.status, done.previous_transition, done.warnings, 'replayed' in done],
		['ANALYZED', 'ANALYSIS_DONE', [], false],
	);
	assert.deepEqual(done.analysis_result, { needs_context: false });
	assert.ok(!('completed_steps' in done) && !('capture_key' in done), 'bookkeeping is not returned');
	const again = await completeStep(pool, shipped, input);
	assert.equal(statements.length, 2);
	assert.deepEqual([again.status, again.warnings, (again as { replayed?: true }).replayed], ['ANALYZED', [], true]);
	assert.ok(!('completed_steps' in again));
	const { rows } = await db.pool.query(
		'SELECT status, capture_token, cardinality(completed_steps) AS steps FROM maas.pipeline_runs WHERE id = $1',
		[id],
	);
	assert.deepEqual(rows[0], { status: 'ANALYZED', capture_token: null, steps: 1 });
});

test('a plain step refused: 409 ILLEGAL_TRANSITION for another token or another state (legal listed), 404 for no run; nothing written', async () => {
	const { id, token } = await capturedRun();
	const other = await refusal(
		completeStep(db.pool, shipped, {
			run_id: id,
			transition: 'ANALYSIS_DONE',
			capture_token: randomUUID(),
			result: {},
		}),
	);
	assert.equal(other.statusCode, 409);
	assert.equal(other.details.code, 'ILLEGAL_TRANSITION');
	assert.deepEqual(other.details.legal, ['ANALYSIS_DONE', 'RELEASE', 'FAIL']);
	assert.match(other.message, /under another capture token/);
	const wrongStep = await refusal(
		completeStep(db.pool, shipped, { run_id: id, transition: 'ASSEMBLY_DONE', capture_token: token, result: 'x' }),
	);
	assert.deepEqual([wrongStep.statusCode, wrongStep.details.status], [409, 'ANALYZING']);
	assert.match(wrongStep.message, /is ANALYZING, not ASSEMBLING/);
	const missing = await refusal(
		completeStep(db.pool, shipped, {
			run_id: randomUUID(),
			transition: 'ANALYSIS_DONE',
			capture_token: token,
			result: {},
		}),
	);
	assert.deepEqual([missing.statusCode, missing.details.code], [404, 'NOT_FOUND']);
	const { rows } = await db.pool.query(
		'SELECT status, capture_token, analysis_result FROM maas.pipeline_runs WHERE id = $1',
		[id],
	);
	assert.deepEqual(rows[0], { status: 'ANALYZING', capture_token: token, analysis_result: null });
});

test('a step with a cascade still reads the run first (two statements) and follows the cascade', async () => {
	const definition = changed((d) => {
		d.states.ANALYZED.transitions.unshift({ name: 'SKIP', next: 'READY' });
	});
	const { id, token } = await capturedRun(definition);
	const { pool, statements } = counting();
	const run = await completeStep(pool, definition, {
		run_id: id,
		transition: 'ANALYSIS_DONE',
		capture_token: token,
		result: {},
	});
	assert.equal(statements.length, 2);
	assert.deepEqual([run.status, run.previous_transition], ['READY', 'SKIP']);
});
