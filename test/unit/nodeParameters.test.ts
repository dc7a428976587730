/**
 * shared/node/parameters.ts: a value is read as stored only when it holds no expression at any depth;
 * anything else (or a missing value) goes through n8n's getNodeParameter.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import type { IExecuteFunctions, INode } from 'n8n-workflow';
import { defaultExpressionParameter, hasExpression, plainParameter } from '../../nodes/shared/node/parameters';

test('hasExpression: strings starting with "=", at any depth of objects and arrays', () => {
	assert.equal(hasExpression('={{ 1 }}'), true);
	assert.equal(hasExpression('plain = text'), false);
	assert.equal(hasExpression({ a: { b: ['x', '={{ $json.y }}'] } }), true);
	assert.equal(hasExpression({ a: 1, b: [true, null, 'x'] }), false);
	assert.equal(hasExpression(5), false);
});

test('plainParameter / defaultExpressionParameter: n8n is asked exactly when the stored value needs it', () => {
	const asked: string[] = [];
	const fn = {
		getNodeParameter: (name: string, _i: number, fallback: unknown) => (
			asked.push(name),
			`n8n:${name}:${String(fallback)}`
		),
	} as unknown as IExecuteFunctions;
	const node = {
		parameters: {
			plain: 'telegram_update',
			options: { maxAttempts: 3 },
			expr: '={{ 1 }}',
			nested: { w: '={{ 2 }}' },
			key: '={{ d }}',
		},
	} as unknown as INode;
	assert.equal(plainParameter(fn, node, 'plain', 0), 'telegram_update');
	assert.deepEqual(plainParameter(fn, node, 'options', 0, {}), { maxAttempts: 3 });
	assert.deepEqual(asked, []);
	assert.equal(plainParameter(fn, node, 'expr', 0), 'n8n:expr:undefined');
	assert.equal(plainParameter(fn, node, 'nested', 0), 'n8n:nested:undefined');
	assert.equal(plainParameter(fn, node, 'missing', 0, 'data'), 'n8n:missing:data');
	assert.equal(
		defaultExpressionParameter(fn, node, 'key', 0, '={{ d }}', () => 'direct'),
		'direct',
	);
	assert.equal(
		defaultExpressionParameter(fn, node, 'key', 0, '={{ other }}', () => 'direct'),
		'n8n:key:',
	);
	assert.deepEqual(asked, ['expr', 'nested', 'missing', 'key']);
});
