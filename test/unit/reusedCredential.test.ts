/**
 * reusedCredential (nodes/shared/node/reusedCredential.ts): with reuse on, n8n is asked once per 5 s per
 * (workflow, credential type, credential id), again after 5 s; off, or without a workflow or credential id, on
 * every call; an expired entry is dropped at the next call (no rotated secret kept in the heap).
 */
import assert from 'node:assert/strict';
import { beforeEach, test } from '@jest/globals';
import type { IExecuteFunctions, INode } from 'n8n-workflow';
import { clearReusedCredentials, reusedCredential } from '../../nodes/shared/node/reusedCredential';

const node = (id?: string) =>
	({ credentials: id ? { contractsLlmApi: { id, name: 'Model' } } : {} }) as unknown as INode;

/** A node's execute functions whose getCredentials counts its calls and answers `{ apiKey: 'k<n>' }`. */
function fnOf(workflowId: string | undefined) {
	const calls = { n: 0 };
	const fn = {
		getWorkflow: () => ({ id: workflowId }),
		getCredentials: async () => ({ apiKey: `k${++calls.n}` }),
	} as unknown as IExecuteFunctions;
	return { fn, calls };
}

beforeEach(() => clearReusedCredentials());

test('reuse on: once per 5 s per workflow and credential, read again after 5 s', async () => {
	const { fn, calls } = fnOf('wf-a');
	const read = (now: number, id = 'c1') =>
		reusedCredential(fn, 'contractsLlmApi', 0, { node: node(id), reuse: true, now });
	assert.deepEqual(await read(0), { apiKey: 'k1' });
	assert.deepEqual(await read(4_999), { apiKey: 'k1' });
	assert.equal(calls.n, 1);
	assert.deepEqual(await read(4_999, 'c2'), { apiKey: 'k2' }, 'another credential id is its own entry');
	assert.deepEqual(await read(5_000), { apiKey: 'k3' }, 'after 5 s n8n is asked again');
	const other = fnOf('wf-b');
	assert.deepEqual(
		await reusedCredential(other.fn, 'contractsLlmApi', 0, { node: node('c1'), reuse: true, now: 5_001 }),
		{ apiKey: 'k1' },
		'another workflow reads its own',
	);
	assert.equal(other.calls.n, 1);
});

test('reuse off, or no workflow id, or no credential id: n8n is asked on every call', async () => {
	for (const [workflowId, id, reuse] of [
		['wf-a', 'c1', false],
		[undefined, 'c1', true],
		['wf-a', undefined, true],
	] as const) {
		clearReusedCredentials();
		const { fn, calls } = fnOf(workflowId);
		for (let k = 0; k < 3; k++) await reusedCredential(fn, 'contractsLlmApi', 0, { node: node(id), reuse, now: k });
		assert.equal(calls.n, 3, `${workflowId} ${id} ${reuse}`);
	}
});
