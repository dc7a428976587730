/**
 * Issue 29 P7: the router reads the node once per execution (getNode deep-copies it) and its Resource,
 * Operation and Options as stored when they hold no expression (parameters.ts plainParameter), asking n8n
 * only for a stored expression or a parameter the node does not store; the answers are the same.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { SuccessItem } from '../../nodes/shared/contracts/envelope';
import { routeItems, type Answer, type Operation, type Route } from '../../nodes/shared/node/router';

type EchoOperation = Operation<(input: Record<string, unknown>) => Promise<Answer>>;

const echo: EchoOperation = {
	value: 'echo',
	name: 'Echo',
	action: 'Echo',
	description: 'Answers its input',
	fields: [
		{
			displayName: 'Text',
			name: 'text',
			type: 'string',
			default: '',
			displayOptions: { show: { resource: ['toy'], operation: ['echo'] } },
		},
	],
	execute: async (input) => ({ data: input }),
};

function route(nodes: unknown[]): Route<EchoOperation, string, string> {
	return {
		label: 'Toy',
		resources: [{ value: 'toy', name: 'Toy', operations: [echo] }],
		connect: async (_fn, node) => {
			nodes.push(node);
			return 'conn';
		},
		workflow: () => 'TOY',
		incoming: () => ({ correlationIds: [] }),
		context: () => 'ctx',
		execute: async (operation, _ctx, input) => await operation.execute(input as Record<string, unknown>),
	};
}

/** An execute context whose node stores `stored`; n8n's getNodeParameter answers `evaluated` and is counted. */
function context(stored: Record<string, unknown>, evaluated: Record<string, unknown>, items: INodeExecutionData[]) {
	const asked: string[] = [];
	let copies = 0;
	const fn = {
		getInputData: () => items,
		getNode: () => {
			copies++;
			return {
				name: 'Toy',
				type: 'test.toy',
				typeVersion: 1,
				position: [0, 0],
				parameters: structuredClone(stored),
				id: '1',
			};
		},
		getNodeParameter: (name: string, _i: number, fallback?: unknown) => {
			asked.push(name);
			return name in evaluated ? evaluated[name] : fallback;
		},
		continueOnFail: () => true,
	} as unknown as IExecuteFunctions;
	return { fn, asked, copies: () => copies };
}

test('stored Resource / Operation / Options are read as stored, the node copied once; the fields still through n8n', async () => {
	const stored = { resource: 'toy', operation: 'echo', options: { workflow: 'WF-S' }, text: 'plain' };
	const nodes: unknown[] = [];
	const { fn, asked, copies } = context(stored, { text: 'from n8n' }, [{ json: {} }, { json: {} }]);
	const [done] = await routeItems(fn, route(nodes));
	assert.deepEqual(asked, ['text', 'text']);
	assert.equal(copies(), 1);
	assert.equal((nodes[0] as { name: string }).name, 'Toy', 'connect receives the node');
	const envelopes = done.map((i) => SuccessItem.parse(i.json));
	assert.deepEqual(
		envelopes.map((e) => [e.meta.source, e.data.text]),
		[
			['WF-S', 'from n8n'],
			['WF-S', 'from n8n'],
		],
	);
});

test('an expression in Options, or parameters the node does not store, are n8n’s values', async () => {
	const { fn, asked } = context(
		{ resource: 'toy', operation: 'echo', options: { workflow: '={{ $json.label }}' } },
		{ options: { workflow: 'WF-E' }, text: 't' },
		[{ json: { label: 'WF-E' } }],
	);
	const [done] = await routeItems(fn, route([]));
	assert.ok(asked.includes('options'));
	assert.ok(!asked.includes('resource') && !asked.includes('operation'));
	assert.equal(SuccessItem.parse(done[0].json).meta.source, 'WF-E');
	const bare = context({}, { resource: 'toy', operation: 'echo', text: 'x' }, [{ json: {} }]);
	const [answered] = await routeItems(bare.fn, route([]));
	assert.deepEqual(SuccessItem.parse(answered[0].json).data, { text: 'x' });
	assert.ok(bare.asked.includes('resource') && bare.asked.includes('operation') && bare.asked.includes('options'));
});
