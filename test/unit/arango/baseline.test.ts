import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { createBaseline } from '../../../nodes/ArangoCas/actions/baseline/create.operation';
import { ArangoStub } from '../../helpers/arangoHttp';
import { assertQueriesSafe, failure, RUN } from '../../helpers/arangoOps';

afterEach(() => ArangoStub.reset());

const INPUT = { doc_id: 'docs/doc_1', version_tag: 'v1.0', title: 'MVP Release' };

test('Create baseline: one query; each reachable active atom once (bfs, global uniqueness); 201', async () => {
	const stub = new ArangoStub().cursor(
		[{ outcome: 'OK', illegal: [], baseline_id: 'baselines/b1', frozen_at: 1_700_000_000_000, items: ['atoms/a1', 'atoms/a2'] }],
		{ writesExecuted: 3 },
	);
	const result = await createBaseline.execute(stub.database(), INPUT, RUN);
	assert.deepEqual(result, {
		statusCode: 201,
		data: { baseline_id: 'baselines/b1', tag: 'v1.0', items_snapshotted: 2, frozen_at: 1_700_000_000_000, items: ['atoms/a1', 'atoms/a2'] },
	});
	const [q] = stub.queries();
	assert.deepEqual(q.bindVars, { doc_key: 'doc_1', version_tag: 'v1.0', title: 'MVP Release' });
	assert.match(q.query, /1\.\.10 OUTBOUND doc_id structure_links OPTIONS \{ order: "bfs", uniqueVertices: "global" \}/);
	assert.match(q.query, /type: "snapshot_item"/);
	assertQueriesSafe(stub);
});

test('Create baseline: docs → atoms edges → 422 ILLEGAL_EDGES listing them', async () => {
	const edges = [{ id: 'structure_links/x1', from: 'docs/doc_1', to: 'atoms/a9' }];
	const stub = new ArangoStub().cursor([{ outcome: 'ILLEGAL_EDGES', illegal: edges }]);
	const error = await failure(createBaseline, stub.database(), INPUT);
	assert.deepEqual([error.statusCode, error.kind], [422, 'validation']);
	assert.deepEqual(error.details, { code: 'ILLEGAL_EDGES', edges });
});

test('Create baseline: unknown doc → 404; a tag used twice (unique index, 1210) → 409', async () => {
	const stub = new ArangoStub()
		.cursor([{ outcome: 'NOT_FOUND', illegal: [] }])
		.cursorError(409, 1210, 'AQL: unique constraint violated - in index baselines_doc_tag of type persistent over \'doc_id, tag\' (while executing)');
	const db = stub.database();
	const missing = await failure(createBaseline, db, INPUT);
	assert.deepEqual([missing.statusCode, missing.details.missing], [404, ['docs/doc_1']]);
	const duplicate = await failure(createBaseline, db, INPUT);
	assert.deepEqual([duplicate.statusCode, duplicate.details.code], [409, 'UNIQUE_VIOLATION']);
});

test('Create baseline: version_tag is required (422 naming it)', async () => {
	const stub = new ArangoStub();
	const error = await failure(createBaseline, stub.database(), { ...INPUT, version_tag: ' ' });
	assert.deepEqual([error.statusCode, error.details.field], [422, 'version_tag']);
});
