import assert from 'node:assert/strict';
import { publicError } from '../../../nodes/shared/envelopeBuilders';
import { afterEach, test } from '@jest/globals';
import { createBaseline } from '../../../nodes/ArangoCas/actions/baseline/create.operation';
import { ArangoStub } from '../../helpers/arangoHttp';
import { assertQueriesSafe, failure, RUN } from '../../helpers/arangoOps';

afterEach(() => ArangoStub.reset());

const INPUT = { doc_id: 'docs/doc_1', version_tag: 'v1.0', title: 'MVP Release', user_id: 'alice' };

test('Create baseline: one query; each reachable active atom once (bfs, global uniqueness); 201', async () => {
	const stub = new ArangoStub().cursor(
		[
			{
				outcome: 'OK',
				illegal: [],
				baseline_id: 'baselines/b1',
				frozen_at: 1_700_000_000_000,
				items: ['atoms/a1', 'atoms/a2'],
			},
		],
		{ writesExecuted: 3 },
	);
	const result = await createBaseline.execute(stub.database(), INPUT, RUN);
	assert.deepEqual(result, {
		statusCode: 201,
		data: {
			baseline_id: 'baselines/b1',
			tag: 'v1.0',
			items_snapshotted: 2,
			frozen_at: 1_700_000_000_000,
			items: ['atoms/a1', 'atoms/a2'],
			created_by: 'alice',
		},
	});
	const [q] = stub.queries();
	assert.deepEqual(q.bindVars, { doc_key: 'doc_1', version_tag: 'v1.0', title: 'MVP Release', user_id: 'alice' });
	assert.match(q.query, /INTO baselines/);
	assert.match(q.query, /created_by: @user_id \} INTO baselines/, 'the baseline names who created it');
	assert.match(q.query, /1\.\.10 OUTBOUND doc_id structure_links OPTIONS \{ order: "bfs", uniqueVertices: "global" \}/);
	assert.match(q.query, /type: "snapshot_item"/);
	assertQueriesSafe(stub);
});

test('Create baseline: CAS-touches every snapshotted atom before inserting, so a concurrent Archive conflicts (1200 → 409)', async () => {
	const stub = new ArangoStub().cursor(
		[{ outcome: 'OK', illegal: [], baseline_id: 'baselines/b1', frozen_at: 1, items: ['atoms/a1'] }],
		{ writesExecuted: 3 },
	);
	await createBaseline.execute(stub.database(), INPUT, RUN);
	const { query } = stub.queries()[0];
	assert.match(
		query,
		/RETURN \{ id: v\._id, key: v\._key, rev: v\._rev, order: e\.order \}/,
		'the traversal keeps the _rev it read',
	);
	assert.match(
		query,
		/FOR item IN \(outcome == "OK" \? reachable : \[\]\)\s+UPDATE \{ _key: item\.key, _rev: item\.rev \} WITH \{ baselined_at: now, baselined_by: @user_id \} IN atoms OPTIONS \{ ignoreRevs: false \}/,
	);
	// issue 25 review: the snapshot edges name their creator too
	assert.match(query, /type: "snapshot_item", snapshotted_at: now, created_by: @user_id \} INTO baseline_items/);
	assert.ok(
		query.indexOf('IN atoms') < query.indexOf('INTO baselines'),
		'atoms are touched before anything else is written',
	);
	assertQueriesSafe(stub);
});

const CONFLICT = [
	409,
	1200,
	'AQL: conflict, _rev values do not match [node #21: UpdateNode] (while executing)',
] as const;

test('Create baseline: an atom archived (or changed) under it → the whole query fails with 409 REV_CONFLICT carrying the current _revs of the reachable active atoms', async () => {
	const stub = new ArangoStub().cursorError(...CONFLICT).cursor([
		['atoms/a1', '_a3'],
		['atoms/a2', '_a4'],
	]);
	const error = await failure(createBaseline, stub.database(), INPUT);
	assert.deepEqual(
		[error.statusCode, error.kind, error.details.code, error.details.arango_error_num],
		[409, 'conflict', 'REV_CONFLICT', 1200],
	);
	assert.deepEqual(error.details.current_revs, { 'atoms/a1': '_a3', 'atoms/a2': '_a4' });
	assert.equal(error.details.current_rev, null, 'no single document');
	assert.equal(stub.requests.length, 2, 'the failed query (nothing to roll back), then one read');
	const read = stub.queries()[1];
	assert.deepEqual(read.bindVars, { doc_key: 'doc_1' });
	assert.match(read.query, /^WITH docs, atoms\n/, 'the traversal declares its vertex collections');
	assert.match(
		read.query,
		/1\.\.10 OUTBOUND doc_id structure_links OPTIONS \{ order: "bfs", uniqueVertices: "global" \}[\s\S]*FILTER v\.status == "active"/,
		'the same traversal as the snapshot',
	);
	assert.doesNotMatch(read.query, /INSERT|UPDATE|REPLACE|REMOVE|UPSERT/, 'read-only');
	assertQueriesSafe(stub);
});

test('Create baseline: after a 1200, malformed rows are skipped; a failing re-read leaves the 409 as it was', async () => {
	const stub = new ArangoStub()
		.cursorError(...CONFLICT)
		.cursor([['atoms/a1', '_a3'], ['atoms/a2', null], 'x'])
		.cursorError(...CONFLICT)
		.cursorNetworkError('ECONNRESET');
	const db = stub.database();
	const first = await failure(createBaseline, db, INPUT);
	assert.deepEqual(first.details.current_revs, { 'atoms/a1': '_a3' });
	const second = await failure(createBaseline, db, INPUT);
	assert.deepEqual([second.statusCode, second.details.code, second.details.current_rev], [409, 'REV_CONFLICT', null]);
	assert.equal('current_revs' in second.details, false);
	assert.ok(stub.isDone());
});

test('Create baseline: errors other than 1200 read nothing again', async () => {
	const stub = new ArangoStub().cursorError(409, 1210, 'AQL: unique constraint violated (while executing)');
	const error = await failure(createBaseline, stub.database(), INPUT);
	assert.equal(error.details.code, 'UNIQUE_VIOLATION');
	assert.equal(stub.requests.length, 1);
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
		.cursorError(
			409,
			1210,
			"AQL: unique constraint violated - in index baselines_doc_tag of type persistent over 'doc_id, tag' (while executing)",
		);
	const db = stub.database();
	const missing = await failure(createBaseline, db, INPUT);
	assert.deepEqual([missing.statusCode, missing.details.missing], [404, ['docs/doc_1']]);
	const duplicate = await failure(createBaseline, db, INPUT);
	assert.deepEqual([duplicate.statusCode, duplicate.details.code], [409, 'UNIQUE_VIOLATION']);
	// the caller reads a fixed message (issue 25 §4); ArangoDB's names the index, kept in details only
	assert.equal(duplicate.message, 'a document with the same unique values already exists');
	assert.match(String(duplicate.details.arango_message), /baselines_doc_tag/);
	const answer = publicError({
		status_code: duplicate.statusCode,
		kind: duplicate.kind,
		message: duplicate.message,
		correlation_id: '6f1d2c3b-4a59-4e68-8f7a-0b1c2d3e4f50',
		details: { node_details: duplicate.details },
	});
	assert.doesNotMatch(JSON.stringify(answer), /AQL|index|baselines_doc_tag|doc_id, tag|while executing/);
});

test('Create baseline: version_tag is required (422 naming it)', async () => {
	const stub = new ArangoStub();
	const error = await failure(createBaseline, stub.database(), { ...INPUT, version_tag: ' ' });
	assert.deepEqual([error.statusCode, error.details.field], [422, 'version_tag']);
});
