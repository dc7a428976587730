/**
 * The ArangoCAS node itself (description and execute), with a minimal IExecuteFunctions: parameters are
 * read per item, the result is a valid SuccessEnvelope paired to its item, and in "continue" mode a
 * failure becomes the error item the Error Pipe reads (kind, status_code, details.code, ctx, error_context
 * with node, operation and collection).
 */
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { SuccessEnvelope } from '../../../nodes/shared/contracts/envelope';
import { ARANGO_DB, ARANGO_URL, ArangoStub } from '../../helpers/arangoHttp';

// The compiled node (npm test builds first): "ArangoCas.node" would resolve to the codex .json beside it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ArangoCas } = require('../../../dist/nodes/ArangoCas/ArangoCas.node.js') as typeof import('../../../nodes/ArangoCas/ArangoCas.node');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { forgetDatabases } = require('../../../dist/nodes/ArangoCas/transport/database.js') as typeof import('../../../nodes/ArangoCas/transport/database');

afterEach(() => {
	ArangoStub.reset();
	forgetDatabases();
});

function context(items: INodeExecutionData[], params: Record<string, unknown>[], continueOnFail: boolean): IExecuteFunctions {
	return {
		getInputData: () => items,
		getNode: () => ({ name: 'Lock Atom', type: 'n8n-nodes-contracts.arangoCas', typeVersion: 1, position: [0, 0], parameters: {}, id: '1' }),
		getCredentials: async () => ({ url: ARANGO_URL, database: ARANGO_DB, authMode: 'basic', username: 'root', password: 'pw', timeoutMs: 5000 }),
		getExecutionId: () => '99',
		getNodeParameter: (name: string, i: number, fallback?: unknown) => (name in params[i] ? params[i][name] : fallback),
		continueOnFail: () => continueOnFail,
	} as unknown as IExecuteFunctions;
}

const lockParams = (atomId: string) => ({ resource: 'atom', operation: 'lock', atomId, userId: 'u1', expectedRev: '_r1', leaseMinutes: 5, options: { workflow: 'A3.6' } });

test('every field belongs to exactly one resource/operation and every operation has its dropdown entry', () => {
	const { properties } = new ArangoCas().description;
	const fields = properties.filter((p) => p.displayOptions?.show?.operation);
	for (const f of fields) {
		assert.equal(f.displayOptions!.show!.resource!.length, 1, f.name);
		assert.equal(f.displayOptions!.show!.operation!.length, 1, f.name);
	}
	const dropdowns = properties.filter((p) => p.name === 'operation');
	assert.equal(dropdowns.length, 4);
	assert.ok(fields.every((f) => f.description && /^[A-Z]/.test(f.description)), 'fields are documented');
});

test('execute: one SuccessEnvelope per item, paired, sent with the item\'s parameters; a failure in continue mode is an error item', async () => {
	const stub = new ArangoStub()
		.cursor([{ outcome: 'OK', atom_rev: '_r2', new_locked_until: 123 }])
		.cursor([{ outcome: 'LOCKED', locked_by: 'u2', locked_until: 456 }]);
	const items = [{ json: { headers: { 'x-correlation-id': 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee' } } }, { json: {} }];
	const [out] = await new ArangoCas().execute.call(context(items, [lockParams('a1'), lockParams('a2')], true));
	assert.equal(out.length, 2);
	assert.deepEqual(out.map((i) => i.pairedItem), [{ item: 0 }, { item: 1 }]);
	const ok = SuccessEnvelope.parse(out[0].json);
	assert.deepEqual([ok.status_code, ok.meta.source, ok.meta.correlation.correlation_id, ok.data.atom_rev], [200, 'A3.6', 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee', '_r2']);
	assert.deepEqual(stub.queries().map((q) => q.bindVars.atom_key), ['a1', 'a2']);
	const error = out[1].json.error as Record<string, any>;
	assert.deepEqual([error.status_code, error.kind, error.details.code, error.details.locked_by], [423, 'locked', 'LOCKED', 'u2']);
	assert.equal(error.ctx.operation, 'atom.lock');
	assert.deepEqual({ node: error.error_context.node, operation: error.error_context.operation, collection: error.error_context.collection }, {
		node: 'Lock Atom',
		operation: 'update',
		collection: 'atoms',
	});
});
