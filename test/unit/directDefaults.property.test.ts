/**
 * Issue 29 P7: the default expressions the router computes from the item itself (readFields DirectDefaults:
 * Generate's Run ID and Step, Complete Step's Draft Context) give what n8n's own expression engine gives
 * (n8n-workflow's Expression, as n8n 2.4.8 evaluates `={{ … }}` parameters) for any item json, whenever the
 * computed value is taken (a primitive); and readFields asks n8n exactly when the stored value is not that
 * default or the computed value is not a primitive.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { Workflow, type IDataObject, type IExecuteFunctions, type INode, type INodeTypes } from 'n8n-workflow';
import { fromData, RUN_ID_DEFAULT, STEP_DEFAULT } from '../../nodes/PipelineCapture/actions/model/generate.operation';
import { fieldsOf, fromBody, fromBodyValue, readFields, type DirectDefault } from '../../nodes/shared/node/fields';
import { hostileString, propertyParams } from '../helpers/property';

const type = { description: { properties: [] } };
const nodeTypes = {
	getByName: () => type,
	getByNameAndVersion: () => type,
	getKnownTypes: () => ({}),
} as unknown as INodeTypes;
const node: INode = { id: '1', name: 'N', type: 't', typeVersion: 1, position: [0, 0], parameters: {} };
const workflow = new Workflow({ id: 'w', nodes: [node], connections: {}, nodeTypes, active: false });

/** `expression` as n8n evaluates a node parameter for an item whose json is `json`. */
const n8nValue = (expression: string, json: IDataObject): unknown =>
	workflow.expression.getParameterValue(expression, null, 0, 0, 'N', [{ json }], 'manual', {});

const isPrimitive = (v: unknown) => v === null || (typeof v !== 'object' && typeof v !== 'function');

const CASES: [string, DirectDefault][] = [
	[RUN_ID_DEFAULT, fromData('run_id')],
	[STEP_DEFAULT, fromData('step')],
	[fromBody('draft_context'), fromBodyValue('draft_context')],
];

/** Values an item's keys take: JSON of any shape, hostile strings, falsy values. */
const value = fc.oneof(fc.jsonValue({ maxDepth: 2 }), hostileString(), fc.constantFrom(0, '', false, null, -1, 'x'));
/** An object holding (or not) the keys the defaults read. */
const holder = fc.record(
	{ run_id: value, step: value, draft_context: value, other: value },
	{ requiredKeys: [] },
) as fc.Arbitrary<Record<string, unknown>>;
const item = fc.record(
	{ data: fc.oneof(holder, value), body: fc.oneof(holder, value), draft_context: value, run_id: value },
	{ requiredKeys: [] },
) as fc.Arbitrary<IDataObject>;

test('each direct default equals n8n’s evaluation of its expression whenever its value is a primitive', () => {
	fc.assert(
		fc.property(item, (json) => {
			for (const [expression, direct] of CASES) {
				const mine = direct(json);
				if (!isPrimitive(mine)) continue;
				assert.ok(Object.is(mine, n8nValue(expression, json)), `${expression} on ${JSON.stringify(json)}`);
			}
		}),
		propertyParams('direct defaults = n8n expressions', { numRuns: 2_000 }),
	);
});

test('readFields: computed while the stored value is the default and the result a primitive; else read through n8n', () => {
	const fields = fieldsOf({ resource: 'model', operation: 'generate' }, [
		{ displayName: 'Run ID', name: 'runId', default: RUN_ID_DEFAULT },
		{ displayName: 'Step', name: 'step', default: STEP_DEFAULT },
		{ displayName: 'Draft', name: 'draftContext' },
	]);
	const asked: string[] = [];
	const fn = {
		getNodeParameter: (name: string) => {
			asked.push(name);
			return `n8n:${name}`;
		},
	} as unknown as IExecuteFunctions;
	const read = (parameters: INode['parameters'], json: IDataObject) => {
		asked.length = 0;
		const values = { runId: fromData('run_id'), step: fromData('step'), draftContext: fromBodyValue('draft_context') };
		return readFields(fn, 0, fields, { node: { ...node, parameters }, json, values });
	};
	const defaults = { runId: RUN_ID_DEFAULT, step: STEP_DEFAULT, draftContext: fromBody('draft_context') };
	assert.deepEqual(read(defaults, { data: { run_id: 'r1', step: 'analysis' }, body: { draft_context: 'd' } }), {
		run_id: 'r1',
		step: 'analysis',
		draft_context: 'd',
	});
	assert.deepEqual(asked, []);
	// empty reads as missing, as from n8n
	assert.deepEqual(read(defaults, {}), { run_id: undefined, step: undefined, draft_context: undefined });
	assert.deepEqual(asked, []);
	// an object value goes through n8n
	assert.deepEqual(read(defaults, { data: { run_id: { a: 1 } } }).run_id, 'n8n:runId');
	assert.deepEqual(asked, ['runId']);
	// a value the user set (an expression or not) goes through n8n
	read({ ...defaults, step: '={{ $json.x }}', draftContext: 'plain' }, { data: { step: 's' } });
	assert.deepEqual(asked, ['step', 'draftContext']);
	// without DirectDefaults every field goes through n8n
	asked.length = 0;
	readFields(fn, 0, fields);
	assert.deepEqual(asked, ['runId', 'step', 'draftContext']);
});
