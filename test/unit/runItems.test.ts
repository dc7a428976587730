import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { ContractError } from '../../nodes/shared/errors';
import { runItems } from '../../nodes/shared/node/runItems';

/** The few IExecuteFunctions members runItems uses: input items, the node, the error mode. */
function context(items: INodeExecutionData[], continueOnFail: boolean): IExecuteFunctions {
	return {
		getInputData: () => items,
		getNode: () => ({
			name: 'Telegram Ingest',
			type: 'n8n-nodes-contracts.telegramIngest',
			typeVersion: 1,
			position: [0, 0],
			parameters: {},
			id: '1',
		}),
		continueOnFail: () => continueOnFail,
	} as unknown as IExecuteFunctions;
}

const items = [{ json: { n: 0 } }, { json: { n: 1 } }, { json: { n: 2 } }];
const handler = async (item: INodeExecutionData, _i: number, state: { ctx?: Record<string, unknown> }) => {
	state.ctx = { correlation_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee', n: item.json.n };
	if (item.json.n === 1)
		throw new ContractError('wrong secret', 403, 'auth', false, {}, { operation: 'select', table: 'core.bots' });
	return { json: { ok: true, n: item.json.n } as never, output: item.json.n === 2 ? 1 : 0 };
};

test('continue mode: a failed item becomes { json: { error } } with ctx and error_context, paired to its input', async () => {
	const out = await runItems(context(items, true), handler, 2);
	assert.equal(out[0].length, 2);
	assert.deepEqual(
		out[1].map((i) => i.pairedItem),
		[{ item: 2 }],
	);
	const failed = out[0].find((i) => (i.pairedItem as { item: number }).item === 1)!;
	assert.deepEqual(Object.keys(failed.json), ['error'], 'only this shape reaches the error output in n8n 2.4.8');
	const error = failed.json.error as Record<string, any>;
	assert.equal(error.status_code, 403);
	assert.equal(error.kind, 'auth');
	assert.equal(error.ctx.n, 1);
	assert.deepEqual(error.error_context, {
		node: 'Telegram Ingest',
		operation: 'select',
		table: 'core.bots',
		correlation_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
		error_message: 'wrong secret',
		status_code: 403,
	});
});

test('stop mode: the first failure throws a NodeOperationError naming the item', async () => {
	await assert.rejects(runItems(context(items, false), handler, 2), (error: unknown) => {
		assert.ok(error instanceof NodeOperationError);
		assert.equal(error.message, 'wrong secret');
		assert.match(String(error.description), /403 \(auth\)/);
		return true;
	});
});

test('non-contract errors become 500 unknown', async () => {
	const out = await runItems(context([{ json: {} }], true), async () => {
		throw new TypeError('boom');
	});
	const error = out[0][0].json.error as Record<string, unknown>;
	assert.deepEqual([error.status_code, error.kind, error.retryable, error.message], [500, 'unknown', false, 'boom']);
});
