/**
 * Issue 29 P7 through n8n's own engine (test/helpers/n8nEngine.ts): the default expressions Pipeline Capture
 * computes from the item itself (Generate's Run ID and Step, Complete Step's Draft Context, readFields
 * DirectDefaults) give what n8n would: the model call's llm_calls row carries Load Step Context's run_id and
 * step, and Complete Step stores the item's draft_context; a Run ID the user set is still n8n's.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { INodeExecutionData } from 'n8n-workflow';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { clearReusedCredentials } from '../../nodes/shared/node/reusedCredential';
import { clearExecutionPools } from '../../nodes/shared/postgres/executionPool';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { ModelStandIn } from '../helpers/modelStandIn';
import { runWorkflow, stopEngine, type EngineNode } from '../helpers/n8nEngine';

let db: TestDatabase;
const model = new ModelStandIn();
beforeAll(async () => {
	db = await setupDatabase();
	await model.up();
});
afterAll(async () => {
	await closeAllPools();
	await db?.drop();
	await model.down();
	stopEngine();
});

const definition = shippedDefinition();

function run(node: EngineNode, items: INodeExecutionData[], workflowId?: string) {
	return runWorkflow({
		nodes: [node],
		items,
		...(workflowId ? { workflowId } : {}),
		executionId: String(Math.floor(Math.random() * 1e9)),
		credentials: {
			postgresContractsApi: { ...db.credential },
			contractsLlmApi: { api: 'openai', baseUrl: model.url, model: 'stand-in' },
		},
	});
}

const pipelineNode = (name: string, parameters: Record<string, unknown>): EngineNode => ({
	name,
	type: 'pipelineCapture',
	typeVersion: 2,
	parameters,
	credentials: { postgresContractsApi: 'Contracts DB', contractsLlmApi: 'Model' },
	onError: 'continueErrorOutput',
});

async function callsOf(runId: string) {
	const { rows } = await db.pool.query('SELECT module FROM maas.llm_calls WHERE run_id = $1', [runId]);
	return rows.map((r) => r.module as string);
}

test('Generate with the default Run ID and Step records the item’s run_id and step; a Run ID set by the user is n8n’s value', async () => {
	const runId = randomUUID();
	const generate = { resource: 'model', operation: 'generate', system: 'be brief', input: 'hello' };
	const done = await run(pipelineNode('Generate', generate), [{ json: { data: { run_id: runId, step: 'analysis' } } }]);
	assert.equal(done.output('Generate', 0).length, 1, JSON.stringify(done.output('Generate', 1)));
	assert.deepEqual(await callsOf(runId), ['analysis']);
	// no step on the item: the Workflow Label (the default Step gives "")
	const unlabelled = randomUUID();
	await run(pipelineNode('Generate', { ...generate, options: { workflow: 'M14' } }), [
		{ json: { data: { run_id: unlabelled } } },
	]);
	assert.deepEqual(await callsOf(unlabelled), ['M14']);
	// a Run ID expression of the user's own
	const own = randomUUID();
	await run(pipelineNode('Generate', { ...generate, runId: '={{ $json.mine }}' }), [
		{ json: { mine: own, data: { run_id: randomUUID(), step: 'response' } } },
	]);
	assert.deepEqual(await callsOf(own), ['response']);
});

test('Complete Step with the default Draft Context stores the item’s draft_context (body first)', async () => {
	const { request_id: id } = await createRun(db.pool, { user_id: `dd-${randomUUID()}`, query: 'q' });
	const analysing = await capture(db.pool, definition, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	const step = { run_id: id, transition: 'ANALYSIS_DONE', capture_token: analysing.run.capture_token, result: {} };
	await completeStep(db.pool, definition, step);
	const assembling = await capture(db.pool, definition, { run_id: id, transition: 'CAPTURE_ASSEMBLY', worker: 'w' });
	const stepNode = pipelineNode('Complete Step', {
		resource: 'run',
		operation: 'completeStep',
		runId: id,
		transition: 'ASSEMBLY_DONE',
		captureToken: assembling.run.capture_token,
		result: 'payload',
	});
	const done = await run(stepNode, [{ json: { body: { draft_context: 'the draft' }, draft_context: 'not this' } }]);
	assert.equal(done.output('Complete Step', 0).length, 1, JSON.stringify(done.output('Complete Step', 1)));
	const { rows } = await db.pool.query(
		'SELECT status, draft_context, final_context_payload FROM maas.pipeline_runs WHERE id = $1',
		[id],
	);
	assert.deepEqual(rows[0], { status: 'READY', draft_context: 'the draft', final_context_payload: 'payload' });
});

test('Generate with Options → Reuse Credential for 5 Seconds reads the model credential (and the PostgreSQL one) through n8n once per 5 s per workflow; off: on every call', async () => {
	clearReusedCredentials();
	clearExecutionPools();
	const generate = { resource: 'model', operation: 'generate', system: 'be brief', input: 'hello' };
	const item = () => [{ json: { data: { run_id: randomUUID(), step: 'analysis' } } }];
	const reads: string[][] = [];
	for (const workflowId of ['wf-a', 'wf-a', 'wf-b']) {
		const done = await run(
			pipelineNode('Generate', { ...generate, options: { reuseCredential: true } }),
			item(),
			workflowId,
		);
		assert.equal(done.output('Generate', 0).length, 1, JSON.stringify(done.output('Generate', 1)));
		reads.push([...done.credentialsRead].sort());
	}
	const both = ['contractsLlmApi', 'postgresContractsApi'];
	assert.deepEqual(reads, [both, [], both], 'the second call of wf-a reused both; wf-b read its own');
	const off: string[][] = [];
	for (let k = 0; k < 2; k++) {
		const done = await run(pipelineNode('Generate', generate), item(), 'wf-a');
		off.push([...done.credentialsRead].sort());
	}
	assert.deepEqual(off, [both, both]);
	clearReusedCredentials();
	clearExecutionPools();
});
