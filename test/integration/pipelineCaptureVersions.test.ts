/**
 * Pipeline Capture's two versions on real PostgreSQL, with a minimal IExecuteFunctions whose node carries
 * its version and parameters as n8n's does: version 2 returns one output array per output of the operation
 * (Capture: Done + Not Captured; Claim Jobs, Fail, …: Done), so n8n's engine puts error items on the
 * next index; version 1 returns Done + Not Captured for every operation, as before.
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

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await distPools.closeAllPools();
	await closeAllPools();
	await db?.drop();
});

/** Runs the node at `typeVersion` with the same Resource / Operation for every item (they take no expressions). */
function run(typeVersion: number, params: Record<string, unknown>[]): Promise<INodeExecutionData[][]> {
	const context = {
		getInputData: () => params.map(() => ({ json: {} })),
		getNode: () => ({
			name: 'Pipeline Capture',
			type: 'n8n-nodes-contracts.pipelineCapture',
			typeVersion,
			position: [0, 0],
			parameters: { resource: params[0].resource, operation: params[0].operation },
			id: '1',
		}),
		getCredentials: async () => db.credential,
		getExecutionId: () => '7',
		// n8n gives every execute context these; Capture builds its call key from them (issue 26)
		getInstanceId: () => 'test-instance',
		getWorkflow: () => ({ id: 'wf-test', name: 'test', active: false }),
		getWorkflowDataProxy: () => ({ $runIndex: 0 }),
		getNodeParameter: (name: string, i: number, fallback?: unknown) => (name in params[i] ? params[i][name] : fallback),
		continueOnFail: () => true,
	} as unknown as IExecuteFunctions;
	return new PipelineCapture().execute.call(context);
}

async function newRun(): Promise<string> {
	const { rows } = await db.pool.query<{ id: string }>(
		"INSERT INTO maas.pipeline_runs (user_id, user_query) VALUES ('u-versions', 'q') RETURNING id",
	);
	return rows[0].id;
}

test('version 2 Capture: two arrays, the winner on Done and the loser on Not Captured', async () => {
	const id = await newRun();
	const capture = { resource: 'run', operation: 'capture', runId: id, transition: 'CAPTURE_ANALYSIS' };
	const outputs = await run(2, [capture, capture]);
	assert.deepEqual(
		outputs.map((o) => o.length),
		[1, 1],
	);
	assert.equal(SuccessItem.parse(outputs[1][0].json).data.captured, false);
});

test('version 2 Claim Jobs: one array (Done); version 1: Done and an empty Not Captured', async () => {
	await db.pool.query("INSERT INTO ops.jobs (job_type) SELECT 'versions-test' FROM generate_series(1, 4)");
	const claim = { resource: 'job', operation: 'claimJobs', jobType: 'versions-test', batchSize: 2 };
	const v2 = await run(2, [claim]);
	assert.deepEqual(
		v2.map((o) => o.length),
		[2],
	);
	const v1 = await run(1, [claim]);
	assert.deepEqual(
		v1.map((o) => o.length),
		[2, 0],
	);
});

test('version 2 Fail with a run id that is no UUID: one array holding the 422 error item (n8n moves it to main[1])', async () => {
	const outputs = await run(2, [{ resource: 'run', operation: 'fail', runId: 'not-a-uuid', error: { message: 'x' } }]);
	assert.equal(outputs.length, 1);
	const error = outputs[0][0].json.error as Record<string, unknown>;
	assert.equal(error.status_code, 422);
});
