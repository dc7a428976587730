/**
 * Issue 26 item 2 through the Pipeline Capture node itself (real PostgreSQL, a minimal IExecuteFunctions
 * whose executeWorkflow stands in for the calculation node's sub-workflow): with a definition imported
 * that puts processors on FAIL and ARCHIVE, Fail and Archive call the sub-workflows of their Calculation
 * Nodes; a SYNC failure of FAIL's processor still fails the run (Done, `processor_error`); of ARCHIVE's, the
 * error item (400) until Max Processor Failures, then archived anyway; an
 * ASYNC_NEW_TX failure is in the Done item's `warnings` and in ops.errors (with the node's name); the Sweep lists a
 * RELEASE refused by its processor as a "refused" item.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { SuccessItem } from '../../nodes/shared/contracts/envelope';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { setupDatabase, type TestDatabase } from '../helpers/db';
// The compiled node (npm test builds first): "PipelineCapture.node" would resolve to the codex .json beside it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { PipelineCapture } =
	require('../../dist/nodes/PipelineCapture/PipelineCapture.node.js') as typeof import('../../nodes/PipelineCapture/PipelineCapture.node');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const distPools =
	require('../../dist/nodes/shared/postgres/pool.js') as typeof import('../../nodes/shared/postgres/pool');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { shippedDefinition } =
	require('../../dist/nodes/PipelineCapture/engine/definition.js') as typeof import('../../nodes/PipelineCapture/engine/definition');

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await distPools.closeAllPools();
	await closeAllPools();
	await db?.drop();
});

/** What the stand-in sub-workflows were sent, and what they answer (by workflow id). */
const calls: { workflowId: string; request: Record<string, unknown> }[] = [];
const answers: Record<string, Record<string, unknown>> = {
	'sub-ok': { success: true },
	'sub-fail': { success: false, error: 'audit service refused' },
};

function run(params: Record<string, unknown>[], items: INodeExecutionData[] = params.map(() => ({ json: {} }))) {
	const context = {
		getInputData: () => items,
		getNode: () => ({
			name: 'Own Processors',
			type: 'n8n-nodes-contracts.pipelineCapture',
			typeVersion: 2,
			position: [0, 0],
			parameters: {},
			id: '1',
		}),
		getCredentials: async () => db.credential,
		getExecutionId: () => '77',
		getInstanceId: () => 'test-instance',
		getWorkflow: () => ({ id: 'wf-own', name: 'own', active: false }),
		getWorkflowDataProxy: () => ({ $runIndex: 0 }),
		getNodeParameter: (name: string, i: number, fallback?: unknown) => (name in params[i] ? params[i][name] : fallback),
		continueOnFail: () => true,
		executeWorkflow: async (info: { id: string }, input: INodeExecutionData[]) => {
			calls.push({ workflowId: info.id, request: input[0].json as Record<string, unknown> });
			return { data: [[{ json: answers[info.id] }]] };
		},
	} as unknown as IExecuteFunctions;
	return new PipelineCapture().execute.call(context);
}

/** Imports the shipped machine with processor `mode` (tags `tag`) on every FAIL and on ARCHIVE. */
async function importWith(mode: string, tag: string) {
	const def = structuredClone(shippedDefinition()) as unknown as {
		states: Record<string, { transitions?: { name: string; processors?: unknown[] }[] }>;
	};
	const processors = [
		{ type: 'EXTERNAL', name: 'audit', executionMode: mode, config: { calculationNodesTags: tag, attachEntity: true } },
	];
	for (const state of Object.values(def.states))
		for (const t of state.transitions ?? []) if (t.name === 'FAIL') t.processors = processors;
	def.states.COMPLETED = { transitions: [{ name: 'ARCHIVE', next: 'COMPLETED', manual: true, processors } as never] };
	const [imported] = await run([
		{
			resource: 'stateMachine',
			operation: 'import',
			body: { importMode: 'REPLACE', workflows: [def] },
			model: 'pipeline_runs',
			modelVersion: 1,
		},
	]);
	assert.equal(SuccessItem.parse(imported[0].json).data.success, true);
}

/** The Calculation Nodes parameter: tag `ok` → sub-ok, tag `fail` → sub-fail. */
const calculationNodes = {
	node: [
		{ workflowId: 'sub-ok', tags: 'ok' },
		{ workflowId: 'sub-fail', tags: 'fail' },
	],
};

async function newRun(status = 'NEW') {
	const { rows } = await db.pool.query<{ id: string }>(
		`INSERT INTO maas.pipeline_runs (user_id, user_query, status, final_answer) VALUES ($1, 'q', $2, 'a') RETURNING id`,
		[`node-${Math.random()}`, status],
	);
	return rows[0].id;
}

async function row(id: string) {
	return (await db.pool.query('SELECT status, error, archived_at FROM maas.pipeline_runs WHERE id = $1', [id])).rows[0];
}

test('Fail with a SYNC FAIL processor that fails: its sub-workflow is called with the run; the run is FAILED anyway (Done item with processor_error), the failure counted and in ops.errors', async () => {
	await importWith('SYNC', 'fail');
	const id = await newRun();
	calls.length = 0;
	const [done] = await run([
		{ resource: 'run', operation: 'fail', runId: id, error: { message: 'gave up' }, calculationNodes },
	]);
	assert.equal(done.length, 1);
	const data = SuccessItem.parse(done[0].json).data as {
		status: string;
		warnings: string[];
		processor_error: { code: string; message: string };
	};
	assert.deepEqual([data.status, data.processor_error.code], ['FAILED', 'WORKFLOW_FAILED']);
	assert.match(data.processor_error.message, /audit service refused/);
	assert.deepEqual(await row(id), { status: 'FAILED', error: { message: 'gave up' }, archived_at: null });
	assert.equal(calls.length, 1);
	assert.deepEqual(
		[
			calls[0].workflowId,
			(calls[0].request.transition as { name: string }).name,
			(calls[0].request.entity as { status: string }).status,
		],
		['sub-fail', 'FAIL', 'FAILED'],
	);
	const { rows } = await db.pool.query<{ node: string; code: string }>(
		"SELECT node, details->>'code' AS code FROM ops.errors WHERE details->>'run_id' = $1 AND details->>'severity' = 'error'",
		[id],
	);
	assert.deepEqual(rows, [{ node: 'Own Processors', code: 'WORKFLOW_FAILED' }]);
});

test('Fail without Calculation Nodes (as the shipped Fail Run nodes) under a definition with FAIL processors: the run is FAILED (NO_COMPUTE_MEMBER_FOR_TAG in processor_error), never left in progress', async () => {
	await importWith('SYNC', 'ok');
	const id = await newRun('ANALYZING');
	const [done] = await run([{ resource: 'run', operation: 'fail', runId: id, error: { message: 'gave up' } }]);
	const data = SuccessItem.parse(done[0].json).data as { status: string; processor_error: { code: string } };
	assert.deepEqual([data.status, data.processor_error.code], ['FAILED', 'NO_COMPUTE_MEMBER_FOR_TAG']);
	assert.equal((await row(id)).status, 'FAILED');
	const counted = await db.pool.query('SELECT processor_failures FROM maas.pipeline_runs WHERE id = $1', [id]);
	assert.equal(counted.rows[0].processor_failures, 1);
});

test('Fail and Archive with ASYNC_NEW_TX processors that fail: Done, with the warning in the item and in ops.errors under the node name', async () => {
	await importWith('ASYNC_NEW_TX', 'fail');
	const id = await newRun();
	const [failed] = await run([
		{ resource: 'run', operation: 'fail', runId: id, error: { message: 'gave up' }, calculationNodes },
	]);
	const data = SuccessItem.parse(failed[0].json).data as { status: string; warnings: string[] };
	assert.equal(data.status, 'FAILED');
	assert.equal(data.warnings.length, 1);
	const completed = await newRun('COMPLETED');
	const [archived] = await run([
		{ resource: 'run', operation: 'archive', runId: completed, summary: 'sum', calculationNodes },
	]);
	const archive = SuccessItem.parse(archived[0].json).data as { lsm_id: number; warnings: string[] };
	assert.equal(archive.warnings.length, 1);
	assert.ok((await row(completed)).archived_at);
	const { rows } = await db.pool.query<{ node: string; transition: string }>(
		"SELECT node, details->>'transition' AS transition FROM ops.errors WHERE details->>'code' = 'PROCESSOR_WARNING' AND details->>'run_id' = ANY($1::text[]) ORDER BY id",
		[[id, completed]],
	);
	assert.deepEqual(rows, [
		{ node: 'Own Processors', transition: 'FAIL' },
		{ node: 'Own Processors', transition: 'ARCHIVE' },
	]);
});

test('Archive with a SYNC ARCHIVE processor: success archives the run; no Calculation Node for its tag is the error item (400 NO_COMPUTE_MEMBER_FOR_TAG), nothing stored', async () => {
	await importWith('SYNC', 'ok');
	const id = await newRun('COMPLETED');
	const [archived] = await run([
		{ resource: 'run', operation: 'archive', runId: id, summary: 'sum', calculationNodes },
	]);
	assert.deepEqual(SuccessItem.parse(archived[0].json).data.warnings, []);
	assert.ok((await row(id)).archived_at);

	const other = await newRun('COMPLETED');
	const [errors] = await run([{ resource: 'run', operation: 'archive', runId: other, summary: 'sum' }]);
	const error = errors[0].json.error as Record<string, any>;
	assert.deepEqual(
		[error.status_code, error.details.code, error.details.failures, error.details.limit],
		[400, 'NO_COMPUTE_MEMBER_FOR_TAG', 1, 3],
	);
	assert.equal((await row(other)).archived_at, null);
	// Max Processor Failures reached (the node field): archived anyway, the failure in the Done item
	const [done] = await run([
		{ resource: 'run', operation: 'archive', runId: other, summary: 'sum', maxProcessorFailures: 2 },
	]);
	const data = SuccessItem.parse(done[0].json).data as { processor_error: { code: string; failures: number } };
	assert.deepEqual([data.processor_error.code, data.processor_error.failures], ['NO_COMPUTE_MEMBER_FOR_TAG', 2]);
	assert.ok((await row(other)).archived_at);
});

test('Sweep with a SYNC RELEASE processor that fails: the stuck run is an item with swept "refused" and the error; one that succeeds is released', async () => {
	const def = structuredClone(shippedDefinition()) as unknown as {
		states: Record<string, { transitions?: { name: string; processors?: unknown[] }[] }>;
	};
	const tagged = (tag: string) => [
		{ type: 'EXTERNAL', name: 'audit', executionMode: 'SYNC', config: { calculationNodesTags: tag } },
	];
	def.states.ANALYZING.transitions!.find((t) => t.name === 'RELEASE')!.processors = tagged('fail');
	def.states.ASSEMBLING.transitions!.find((t) => t.name === 'RELEASE')!.processors = tagged('ok');
	await run([
		{
			resource: 'stateMachine',
			operation: 'import',
			body: { importMode: 'REPLACE', workflows: [def] },
			model: 'pipeline_runs',
			modelVersion: 1,
		},
	]);
	const stuck = await newRun('ANALYZING');
	const other = await newRun('ASSEMBLING');
	await db.pool.query(
		"UPDATE maas.pipeline_runs SET capture_token = gen_random_uuid(), updated_at = now() - interval '1 hour' WHERE id = ANY($1::uuid[])",
		[[stuck, other]],
	);
	const [items] = await run([
		{
			resource: 'run',
			operation: 'sweep',
			stuckAfterSeconds: 60,
			lostAfterSeconds: 86_400,
			limit: 50,
			calculationNodes,
		},
	]);
	const byId = new Map(
		items.map((i) => {
			const data = SuccessItem.parse(i.json).data as { id: string; swept: string; error?: { code: string } };
			return [data.id, data];
		}),
	);
	assert.deepEqual(
		[byId.get(stuck)?.swept, byId.get(stuck)?.error?.code, (await row(stuck)).status],
		['refused', 'WORKFLOW_FAILED', 'ANALYZING'],
	);
	assert.deepEqual([byId.get(other)?.swept, (await row(other)).status], ['released', 'ANALYZED']);
});
