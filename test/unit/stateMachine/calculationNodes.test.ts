/** The Pipeline Capture side of EXTERNAL processors: the Calculation Nodes parameter and the n8n sub-workflow call. */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import type { IExecuteFunctions } from 'n8n-workflow';
import { calculationNodesOf, subWorkflowCaller } from '../../../nodes/PipelineCapture/engine/calculationNodes';

test('calculationNodesOf: trimmed ids, comma-separated tags; blank ids dropped; other operations get none', () => {
	const fns = {
		getNodeParameter: (name: string) => {
			assert.equal(name, 'calculationNodes');
			return {
				node: [{ workflowId: ' wf1 ', tags: 'a, b,,c ' }, { workflowId: '', tags: 'x' }, { workflowId: 'wf2' }],
			};
		},
	} as unknown as IExecuteFunctions;
	assert.deepEqual(calculationNodesOf(fns, 0, 'run', 'completeStep'), [
		{ workflowId: 'wf1', tags: ['a', 'b', 'c'] },
		{ workflowId: 'wf2', tags: [] },
	]);
	assert.deepEqual(calculationNodesOf(fns, 0, 'run', 'getStatus'), []);
	assert.deepEqual(calculationNodesOf(fns, 0, 'job', 'claimJobs'), []);
});

test('subWorkflowCaller: one JSON item to the workflow id, parent execution named; answers the first item of the output', async () => {
	const calls: unknown[][] = [];
	const fns = {
		getWorkflow: () => ({ id: 'parent-wf' }),
		executeWorkflow: async (...args: unknown[]) => {
			calls.push(args);
			return { executionId: 'sub-1', data: [[{ json: { success: false, error: 'no' } }, { json: { ignored: true } }]] };
		},
	} as unknown as IExecuteFunctions;
	const when = new Date('2026-01-02T03:04:05.000Z');
	const answer = await subWorkflowCaller(fns, 'exec-9')('wf-7', {
		processor: { name: 'p', executionMode: 'SYNC', context: '', tags: [] },
		transition: { name: 'T', next: 'N' },
		entity: { at: when },
	});
	assert.deepEqual(answer, { success: false, error: 'no' });
	assert.deepEqual(calls[0][0], { id: 'wf-7' });
	assert.deepEqual(calls[0][1], [
		{
			json: {
				processor: { name: 'p', executionMode: 'SYNC', context: '', tags: [] },
				transition: { name: 'T', next: 'N' },
				entity: { at: '2026-01-02T03:04:05.000Z' },
			},
		},
	]);
	assert.deepEqual(calls[0][3], { parentExecution: { executionId: 'exec-9', workflowId: 'parent-wf' } });
	const empty = {
		getWorkflow: () => ({ id: 'p' }),
		executeWorkflow: async () => ({ executionId: 'x', data: [] }),
	} as unknown as IExecuteFunctions;
	assert.equal(
		await subWorkflowCaller(empty, 'e')('w', {
			processor: { name: 'p', executionMode: 'SYNC', context: '', tags: [] },
			transition: { name: 'T', next: 'N' },
		}),
		undefined,
	);
});
