/**
 * The one router of the resource/operation nodes (nodes/shared/node/router.ts), with a toy route and a
 * minimal IExecuteFunctions: operation lookup, the ctx set before the input is read (an identity or
 * input error keeps it), the correlation id (first UUID among the candidates), the Workflow Label, the
 * envelopes, the outputs and the batch path; then the Knowledge Bot node routed through it (a 422 needs
 * no database: the pool is created, never queried).
 */
import assert from 'node:assert/strict';
import { afterAll, test } from '@jest/globals';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { SuccessItem } from '../../nodes/shared/contracts/envelope';
import { ContractError } from '../../nodes/shared/errors';
import {
	findOperation,
	mainOutputs,
	outputNamesOf,
	outputsExpression,
	routeItems,
	type Answer,
	type OutputSpec,
	type Operation,
	type Resource,
	type Route,
} from '../../nodes/shared/node/router';
import { closeAllPools } from '../../nodes/shared/postgres/pool';

afterAll(async () => {
	await closeAllPools();
});

const UUID_A = '11111111-1111-4111-8111-111111111111';
const UUID_B = '22222222-2222-4222-8222-222222222222';

type ToyOperation = Operation<(tag: string, input: Record<string, unknown>) => Promise<Answer>>;

/** The Text field of a toy operation. */
const textField = (operation: string) => [
	{
		displayName: 'Text',
		name: 'text',
		type: 'string' as const,
		default: '',
		displayOptions: { show: { resource: ['toy'], operation: [operation] } },
	},
];
const echo: ToyOperation = {
	value: 'echo',
	name: 'Echo',
	action: 'Echo the input',
	description: 'Answers its input as data',
	fields: textField('echo'),
	execute: async (tag, input) => ({ data: { tag, ...input }, statusCode: 201 }),
};
/** One item per word, on output 1. */
const split: ToyOperation = {
	...echo,
	value: 'split',
	name: 'Split',
	action: 'Split the text',
	fields: textField('split'),
	execute: async (_tag, input) => ({
		many: String(input.text)
			.split(' ')
			.map((word) => ({ word })),
		output: 1,
	}),
};
const RESOURCES: Resource<ToyOperation>[] = [{ value: 'toy', name: 'Toy', operations: [echo, split] }];

/** A minimal IExecuteFunctions; a parameter absent without a fallback throws, as in n8n 2.4.8. */
function context(
	items: INodeExecutionData[],
	params: Record<string, unknown>[],
	continueOnFail = true,
	typeVersion = 1,
): IExecuteFunctions {
	const parameter = (name: string, i: number, fallback?: unknown) => {
		if (name in params[i]) return params[i][name];
		if (fallback === undefined) throw new Error(`Could not get parameter ${name}`);
		return fallback;
	};
	const node = { name: 'Toy Node', type: 'test.toy', typeVersion, position: [0, 0], parameters: {}, id: '1' };
	return {
		getInputData: () => items,
		getNode: () => node,
		getNodeParameter: parameter,
		continueOnFail: () => continueOnFail,
	} as unknown as IExecuteFunctions;
}

function toyRoute(extra: Partial<Route<ToyOperation, string, string>> = {}): Route<ToyOperation, string, string> {
	return {
		label: 'Toy',
		resources: RESOURCES,
		outputs: 2,
		ctxOperation: true,
		connect: async () => 'conn',
		workflow: () => 'TOY',
		incoming: (_fn, item) => ({ correlationIds: [item.json.first, item.json.second] }),
		context: (_fn, conn, routed) => `${conn}:${routed.itemIndex}`,
		execute: async (operation, tag, input) => await operation.execute(tag, input as Record<string, unknown>),
		...extra,
	};
}

test('findOperation: the operation of a resource; an unknown pair names the node', () => {
	assert.equal(findOperation(RESOURCES, 'toy', 'split'), split);
	assert.throws(() => findOperation(RESOURCES, 'toy', 'nope', 'Toy'), /unknown Toy operation toy\/nope/);
	assert.throws(() => findOperation(RESOURCES, 'other', 'echo', 'Toy'), /unknown Toy operation other\/echo/);
});

test('routeItems: one envelope per item, paired, with its status, Workflow Label and correlation id (first UUID)', async () => {
	const items = [
		{ json: { first: 'not-a-uuid', second: UUID_B } },
		{ json: { first: UUID_A, second: UUID_B } },
		{ json: {} },
	];
	const params = [
		{ resource: 'toy', operation: 'echo', text: 'a' },
		{ resource: 'toy', operation: 'echo', text: 'b', options: { workflow: 'WF-X' } },
		{ resource: 'toy', operation: 'echo', text: '' },
	];
	const [done, other] = await routeItems(context(items, params), toyRoute());
	assert.equal(other.length, 0);
	const envelopes = done.map((i) => SuccessItem.parse(i.json));
	assert.deepEqual(
		done.map((i) => i.pairedItem),
		[{ item: 0 }, { item: 1 }, { item: 2 }],
	);
	assert.deepEqual(
		envelopes.map((e) => e.data),
		[{ tag: 'conn:0', text: 'a' }, { tag: 'conn:1', text: 'b' }, { tag: 'conn:2' }],
	);
	assert.deepEqual(
		envelopes.map((e) => e.status_code),
		[201, 201, 201],
	);
	assert.deepEqual(
		envelopes.map((e) => e.meta.source),
		['TOY', 'WF-X', 'TOY'],
	);
	assert.deepEqual(
		envelopes.slice(0, 2).map((e) => e.meta.correlation.correlation_id),
		[UUID_B, UUID_A],
	);
	assert.match(envelopes[2].meta.correlation.correlation_id, /^[0-9a-f-]{36}$/);
	assert.equal(envelopes[0].meta.correlation.node, 'Toy Node');
	assert.equal('ctx' in done[0].json, false, 'no ctx beside the envelope unless the route asks for it');
});

test("routeItems: many results on the answer's output; ctxInOutput puts the final ctx beside each envelope", async () => {
	const [done, split1] = await routeItems(
		context([{ json: { first: UUID_A } }], [{ resource: 'toy', operation: 'split', text: 'x y' }]),
		toyRoute({ ctxInOutput: true }),
	);
	assert.equal(done.length, 0);
	assert.deepEqual(
		split1.map(({ json: { ctx: _ctx, ...envelope } }) => SuccessItem.parse(envelope).data),
		[{ word: 'x' }, { word: 'y' }],
	);
	assert.deepEqual(
		split1.map((i) => i.pairedItem),
		[{ item: 0 }, { item: 0 }],
	);
	assert.deepEqual(split1[0].json.ctx, {
		correlation_id: UUID_A,
		workflow: 'TOY',
		node: 'Toy Node',
		operation: 'toy.split',
		contracts: { errorpipe: 1 },
	});
});

test('routeItems: the ctx is set before the input is read, so an input or unknown-operation error item keeps it', async () => {
	const failing = toyRoute({
		ctxOperation: false,
		incoming: (_fn, item) => ({ correlationIds: [item.json.first], ctx: { job_id: 7 } }),
		execute: async () => {
			throw new ContractError('refused', 403, 'auth', false, { code: 'NOPE' });
		},
	});
	// "text" absent: reading the operation's field throws after the ctx exists
	const [errors] = await routeItems(
		context(
			[{ json: { first: UUID_A } }, { json: { first: UUID_A } }, { json: {} }],
			[
				{ resource: 'toy', operation: 'echo' },
				{ resource: 'toy', operation: 'echo', text: 't' },
				{ resource: 'toy', operation: 'gone' },
			],
		),
		failing,
	);
	const [absent, refused, unknown] = errors.map((i) => i.json.error as Record<string, any>);
	assert.deepEqual(absent.ctx, {
		job_id: 7,
		correlation_id: UUID_A,
		workflow: 'TOY',
		node: 'Toy Node',
		contracts: { errorpipe: 1 },
	});
	assert.deepEqual(
		[refused.status_code, refused.kind, refused.details.code, refused.ctx.job_id],
		[403, 'auth', 'NOPE', 7],
	);
	assert.match(unknown.message, /unknown Toy operation toy\/gone/);
	assert.equal(unknown.ctx.job_id, 7);
	await assert.rejects(
		routeItems(context([{ json: {} }], [{ resource: 'toy', operation: 'gone' }], false), failing),
		/unknown Toy operation/,
	);
});

test('routeItems: an operation with a batch gets every prepared item in one call; its per-item errors stay paired', async () => {
	const calls: string[][] = [];
	const batched = toyRoute({
		batch: (operation) =>
			operation.value === 'echo'
				? async (entries) => {
						calls.push(entries.map((e) => e.context));
						return entries.map((e, k) =>
							k === 1 ? new ContractError('not held', 409, 'conflict', false) : { data: { at: e.context } },
						);
					}
				: undefined,
	});
	const params = [0, 1, 2].map((n) => ({ resource: 'toy', operation: 'echo', text: `t${n}` }));
	const [done] = await routeItems(
		context(
			[0, 1, 2].map(() => ({ json: {} })),
			params,
		),
		batched,
	);
	assert.deepEqual(calls, [['conn:0', 'conn:1', 'conn:2']]);
	assert.deepEqual(
		done.map((i) => i.pairedItem),
		[{ item: 0 }, { item: 1 }, { item: 2 }],
	);
	assert.equal((done[1].json.error as Record<string, unknown>).status_code, 409);
	assert.deepEqual(
		[done[0], done[2]].map((i) => SuccessItem.parse(i.json).data),
		[{ at: 'conn:0' }, { at: 'conn:2' }],
	);
});

/** Outputs that follow the operation: Split declares two, Echo none (one "Done"); before version 2, always two. */
const FOLLOW: OutputSpec = { names: ['Done'], fixedBefore: { version: 2, names: ['Done', 'Other'] } };
const SPLIT_OUTPUTS = ['Done', 'Words'];
const FOLLOWING: Resource<ToyOperation>[] = [
	{ value: 'toy', name: 'Toy', operations: [echo, { ...split, outputs: SPLIT_OUTPUTS }] },
];

test("outputNamesOf / outputsExpression: the operation's outputs (else the spec's names); the fixed ones before fixedBefore.version", () => {
	const [plain, splitting] = FOLLOWING[0].operations;
	assert.deepEqual(outputNamesOf(FOLLOW, plain, 2), ['Done']);
	assert.deepEqual(outputNamesOf(FOLLOW, splitting, 2), SPLIT_OUTPUTS);
	assert.deepEqual(outputNamesOf(FOLLOW, undefined, 2), ['Done']);
	assert.deepEqual(outputNamesOf(FOLLOW, plain, 1), ['Done', 'Other']);
	assert.deepEqual(outputNamesOf({ names: ['Done'] }, splitting, 1), SPLIT_OUTPUTS);
	// the expression n8n evaluates, with $parameter and $nodeVersion bound as n8n binds them
	const evaluate = (expression: string, parameter: Record<string, unknown>, nodeVersion: number) =>
		// eslint-disable-next-line @typescript-eslint/no-implied-eval
		new Function('$parameter', '$nodeVersion', `return (${/^=\{\{([\s\S]*)\}\}$/.exec(expression)![1]});`)(
			parameter,
			nodeVersion,
		) as unknown;
	const expression = outputsExpression(FOLLOWING, FOLLOW);
	for (const [operation, version] of [
		[plain, 1],
		[plain, 2],
		[splitting, 1],
		[splitting, 2],
	] as const)
		assert.deepEqual(
			evaluate(expression, { resource: 'toy', operation: operation.value }, version),
			mainOutputs(outputNamesOf(FOLLOW, operation, version)),
			`${operation.value} v${version}`,
		);
	assert.deepEqual(evaluate(outputsExpression(FOLLOWING, { names: ['A'] }), { resource: 'x', operation: 'y' }, 1), [
		{ type: 'main', displayName: 'A' },
	]);
});

test("routeItems with an OutputSpec: one output array per output of the operation at the node's version", async () => {
	const route = toyRoute({ resources: FOLLOWING, outputs: FOLLOW });
	const echoParams = [{ resource: 'toy', operation: 'echo', text: 'a' }];
	const splitParams = [{ resource: 'toy', operation: 'split', text: 'x y' }];
	const v2 = await routeItems(context([{ json: {} }], echoParams, true, 2), route);
	assert.equal(v2.length, 1, 'Echo v2: Done only (n8n appends the error output as main[1])');
	assert.equal(v2[0].length, 1);
	const v1 = await routeItems(context([{ json: {} }], echoParams, true, 1), route);
	assert.deepEqual(
		v1.map((o) => o.length),
		[1, 0],
		'Echo v1: Done and Other, as before',
	);
	const words = await routeItems(context([{ json: {} }], splitParams, true, 2), route);
	assert.deepEqual(
		words.map((o) => o.length),
		[0, 2],
	);
	// an error item stays on output 0, where n8n's engine moves it to the error output
	const failing = toyRoute({
		resources: FOLLOWING,
		outputs: FOLLOW,
		execute: async () => {
			throw ContractError.conflict('taken');
		},
	});
	const [errors, ...rest] = await routeItems(context([{ json: {} }], echoParams, true, 2), failing);
	assert.equal(rest.length, 0);
	assert.equal((errors[0].json.error as Record<string, unknown>).status_code, 409);
});

test('routeItems: an answer on an output the node does not have is an error item (500) naming it, not a crash', async () => {
	// Split answers on output 1; declared with one output it does not have one
	const route = toyRoute({
		resources: [{ value: 'toy', name: 'Toy', operations: [{ ...split, outputs: ['Done'] }] }],
		outputs: FOLLOW,
	});
	const [[item], ...rest] = await routeItems(
		context([{ json: {} }], [{ resource: 'toy', operation: 'split', text: 'x' }], true, 2),
		route,
	);
	assert.equal(rest.length, 0);
	const error = item.json.error as Record<string, unknown>;
	assert.equal(error.status_code, 500);
	assert.match(String(error.message), /Toy toy\/split answered on output 1; the node has 1/);
});

test('Knowledge Bot through the router: a 422 keeps the travelling ctx (its correlation id, no operation key), the seed workflow as label', async () => {
	// the .ts path: "KnowledgeBot.node" alone would resolve to the codex .json beside it
	const source = '../../nodes/KnowledgeBot/KnowledgeBot.node.ts';
	const { KnowledgeBot } = (await import(source)) as typeof import('../../nodes/KnowledgeBot/KnowledgeBot.node');
	const fn = {
		getInputData: () => [{ json: {} }],
		getNode: () => ({
			name: 'Normalize URL',
			type: 'n8n-nodes-contracts.knowledgeBot',
			typeVersion: 1,
			position: [0, 0],
			parameters: {},
			id: '1',
		}),
		// never connected: the request fails validation before any query
		getCredentials: async () => ({ host: '127.0.0.1', port: 1, database: 'none', user: 'none' }),
		getNodeParameter: (name: string, _i: number, fallback?: unknown) =>
			({
				resource: 'url',
				operation: 'normalize',
				req: JSON.stringify({ tenant_id: 'x', url: '' }),
				ctx: { job_id: 5, correlation_id: UUID_A },
			})[name] ?? fallback,
		continueOnFail: () => true,
	} as unknown as IExecuteFunctions;
	const [[item]] = await new KnowledgeBot().execute.call(fn);
	const error = item.json.error as Record<string, any>;
	assert.equal(error.status_code, 422);
	assert.deepEqual(error.ctx, {
		job_id: 5,
		correlation_id: UUID_A,
		workflow: 'WF30',
		node: 'Normalize URL',
		contracts: { errorpipe: 1 },
	});
});

test('a success item carries no `error` key: n8n takes a first item whose json.error is defined (null too) for a failed try and, with Retry On Fail, runs the node again (issue 29 P7)', async () => {
	const items = [{ json: { first: UUID_A } }, { json: {} }];
	const params = [
		{ resource: 'toy', operation: 'echo', text: 'a' },
		{ resource: 'toy', operation: 'split', text: 'b c' },
	];
	const [done, other] = await routeItems(context(items, params), toyRoute());
	const all = [...done, ...other];
	assert.equal(all.length, 3);
	for (const item of all) {
		assert.equal(item.json.ok, true);
		assert.equal('error' in item.json, false, JSON.stringify(item.json));
		// n8n 2.4.8's test (n8n-core workflow-execute.js): runNodeData.data?.[0]?.[0]?.json?.error !== undefined
		assert.equal(item.json.error !== undefined, false);
	}
});
