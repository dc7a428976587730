/**
 * Seed 004 EXTERNAL processors in a real n8n 2.4.8: Pipeline Capture → Complete Step dispatches the
 * ANALYSIS_DONE processor (calculationNodesTags "approval") to the sub-workflow its Calculation Nodes
 * parameter lists, through n8n's own sub-workflow execution, with the run attached (attachEntity). The
 * sub-workflow approves when the step's result says so: approved → the run moves on; refused → 400
 * WORKFLOW_FAILED and nothing applied (the run stays captured in ANALYZING, no result stored).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { PIPELINE_MODEL, shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { importWorkflows, WorkflowDefinition } from '../../nodes/shared/stateMachine';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { startN8n, type RunningN8n } from '../helpers/n8n';

let db: TestDatabase;
let n8n: RunningN8n;
let definition: WorkflowDefinition;

beforeAll(async () => {
	db = await setupDatabase();
	const shipped = JSON.parse(
		readFileSync(path.join(__dirname, '..', '..', 'db', 'state-machines', 'pipeline_runs.json'), 'utf8'),
	);
	const done = shipped.workflows[0].states.ANALYZING.transitions.find(
		(t: { name: string }) => t.name === 'ANALYSIS_DONE',
	);
	done.processors = [
		{
			type: 'EXTERNAL',
			name: 'approve',
			executionMode: 'SYNC',
			config: { attachEntity: true, calculationNodesTags: 'approval', responseTimeoutMs: 60000 },
		},
	];
	await importWorkflows(db.pool, PIPELINE_MODEL, { importMode: 'replace', workflows: shipped.workflows });
	definition = WorkflowDefinition.parse(shipped.workflows[0]);
	assert.notDeepEqual(definition, shippedDefinition());
	n8n = await startN8n(
		db.url,
		[
			path.join(__dirname, 'workflows', 'test_calc_node.json'),
			path.join(__dirname, 'workflows', 'test_processor_caller.json'),
		],
		['test/processor'],
	);
}, 30 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await db?.drop();
});

async function capturedRun() {
	const { request_id } = await createRun(db.pool, { user_id: `p-${Math.random()}`, query: 'q' });
	const c = await capture(db.pool, definition, { run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: 'e2e' });
	return { run_id: request_id, capture_token: c.run.capture_token as string };
}

async function complete(body: unknown) {
	const res = await fetch(`${n8n.url}/webhook/test/processor`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify(body),
	});
	return { status: res.status, body: (await res.json()) as any };
}

async function row(id: string) {
	return (
		await db.pool.query('SELECT status, analysis_result, capture_token FROM maas.pipeline_runs WHERE id = $1', [id])
	).rows[0];
}

test('an approving calculation node: the step completes', async () => {
	const run = await capturedRun();
	const res = await complete({ ...run, result: { approve: true } });
	assert.equal(res.body.data?.status, 'ANALYZED', `${JSON.stringify(res.body)}\n${n8n.logs()}`);
	assert.deepEqual(await row(run.run_id), {
		status: 'ANALYZED',
		analysis_result: { approve: true },
		capture_token: null,
	});
}, 120_000);

test('a refusing calculation node: 400 WORKFLOW_FAILED naming it, nothing applied', async () => {
	const run = await capturedRun();
	const res = await complete({ ...run, result: { approve: false } });
	assert.equal(res.body.error?.details?.code, 'WORKFLOW_FAILED', `${JSON.stringify(res.body)}\n${n8n.logs()}`);
	assert.equal(res.body.error?.status_code ?? res.body.status_code, 400);
	assert.match(res.body.error.message, /not approved by approve \(approval\)/);
	assert.deepEqual(await row(run.run_id), {
		status: 'ANALYZING',
		analysis_result: null,
		capture_token: run.capture_token,
	});
}, 120_000);
