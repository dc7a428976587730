import assert from 'node:assert/strict';
import { afterEach, test } from '@jest/globals';
import { createProposal } from '../../../nodes/ArangoCas/actions/proposal/create.operation';
import { MERGE_WRITE_COLLECTIONS, mergeProposal } from '../../../nodes/ArangoCas/actions/proposal/merge.operation';
import { rejectProposal } from '../../../nodes/ArangoCas/actions/proposal/reject.operation';
import { ArangoStub, CONFLICT_1200 } from '../../helpers/arangoHttp';
import { assertQueriesSafe, failure, RUN } from '../../helpers/arangoOps';

afterEach(() => ArangoStub.reset());

test('Create proposal: one stream transaction: CAS-touch the active target, then insert the draft and its link; 201', async () => {
	const stub = new ArangoStub()
		.begin('90')
		.cursor([{ outcome: 'OK', status: 'active', target_rev: '_a2' }], { writesExecuted: 1 })
		.cursor([{ proposal_id: 'atoms/p9', proposal_rev: '_p1', proposal_link_id: 'proposal_links/l9' }], {
			writesExecuted: 2,
		})
		.commit('90');
	const input = { target_active_id: 'a1', new_content: 'Fixed text', comment: 'typo', author: 'u1' };
	const result = await createProposal.execute(stub.database(), input, RUN);
	assert.deepEqual(result, {
		statusCode: 201,
		data: { proposal_id: 'atoms/p9', proposal_rev: '_p1', status: 'proposal', proposal_link_id: 'proposal_links/l9' },
	});
	const begin = stub.requests[0];
	assert.deepEqual((begin.body as { collections: unknown }).collections, {
		write: ['atoms', 'proposal_links'],
		read: [],
	});
	const [touch, insert] = stub.queries();
	assert.deepEqual([touch.trxId, insert.trxId], ['90', '90'], 'both steps in the transaction');
	assert.deepEqual(touch.bindVars, { target_key: 'a1', author: 'u1' });
	assert.match(touch.query, /target\.status != "active" \? "INVALID_STATE"/);
	assert.match(
		touch.query,
		/UPDATE a WITH \{ last_proposal_at: now, last_proposal_by: @author \} IN atoms OPTIONS \{ ignoreRevs: false \}/,
		'the target is CAS-touched: a concurrent Merge/Archive write conflicts',
	);
	assert.deepEqual(insert.bindVars, { target_key: 'a1', new_content: 'Fixed text', comment: 'typo', author: 'u1' });
	assert.match(insert.query, /INSERT \{ content: @new_content, status: "proposal"/);
	assert.match(insert.query, /type: "alternative"[\s\S]*outdated: false/);
	// issue 25 review: the proposal_links edge names its creator
	assert.match(insert.query, /created_at: now,\s+created_by: @author\s+\} INTO proposal_links/);
	assert.deepEqual(
		stub.requests.map((r) => r.method),
		['POST', 'POST', 'POST', 'PUT'],
	);
	assertQueriesSafe(stub);
});

test('Create proposal: unknown target → 404, inactive (merged/archived) target → 409 INVALID_STATE, both aborted; empty content → 422', async () => {
	const stub = new ArangoStub()
		.begin('91')
		.cursor([{ outcome: 'NOT_FOUND' }])
		.abort('91')
		.begin('92')
		.cursor([{ outcome: 'INVALID_STATE', status: 'archived' }])
		.abort('92');
	const db = stub.database();
	const input = { target_active_id: 'a1', new_content: 'x', author: 'u1' };
	assert.equal((await failure(createProposal, db, input)).statusCode, 404);
	const inactive = await failure(createProposal, db, input);
	assert.deepEqual([inactive.statusCode, inactive.details.status], [409, 'archived']);
	assert.equal(stub.queries().length, 2, 'no insert after a failed check');
	assert.ok(stub.isDone() && !stub.requests.some((r) => r.method === 'PUT'), 'aborted, never committed');
	const empty = await failure(createProposal, db, { ...input, new_content: undefined });
	assert.deepEqual([empty.statusCode, empty.details.field], [422, 'new_content']);
});

test("Create proposal: a Merge/Archive writing the target at the same time (1200 on the touch) → 409, aborted, nothing inserted; current_rev = the target's _rev read after the abort", async () => {
	const stub = new ArangoStub()
		.begin('93')
		.cursorError(...CONFLICT_1200)
		.abort('93')
		.cursor([['atoms/a1', '_a7']]);
	const error = await failure(createProposal, stub.database(), {
		target_active_id: 'a1',
		new_content: 'x',
		author: 'u1',
	});
	assert.deepEqual([error.statusCode, error.details.code, error.details.arango_error_num], [409, 'REV_CONFLICT', 1200]);
	assert.deepEqual(
		stub.requests.map((r) => r.method),
		['POST', 'POST', 'DELETE', 'POST'],
		'begin, touch, abort, then one read',
	);
	assert.deepEqual([error.details.current_rev, error.details.current_revs], ['_a7', { 'atoms/a1': '_a7' }]);
	assert.equal('expected_rev' in error.details, false, 'the caller gave no _rev of the target');
	const read = stub.queries()[1];
	assert.deepEqual(
		[read.bindVars, read.trxId],
		[{ ids: ['atoms/a1'] }, undefined],
		'the target, outside the aborted transaction',
	);
	assert.doesNotMatch(read.query, /INSERT|UPDATE|REPLACE|REMOVE|UPSERT/);
	assert.ok(stub.isDone());
	assertQueriesSafe(stub);
});

test('Create proposal: a 1200 whose re-read fails too → the 409 unchanged (current_rev null, no current_revs)', async () => {
	const stub = new ArangoStub()
		.begin('95')
		.cursorError(...CONFLICT_1200)
		.abort('95')
		.cursorNetworkError('ECONNRESET');
	const error = await failure(createProposal, stub.database(), {
		target_active_id: 'a1',
		new_content: 'x',
		author: 'u1',
	});
	assert.deepEqual([error.statusCode, error.details.code, error.details.current_rev], [409, 'REV_CONFLICT', null]);
	assert.equal('current_revs' in error.details, false);
	assert.ok(stub.isDone());
});

test('Create proposal: an insert that did not write both documents is aborted (500), never committed', async () => {
	const stub = new ArangoStub()
		.begin('94')
		.cursor([{ outcome: 'OK' }])
		.cursor([{ proposal_id: 'atoms/p9', proposal_link_id: null }])
		.abort('94');
	const error = await failure(createProposal, stub.database(), {
		target_active_id: 'a1',
		new_content: 'x',
		author: 'u1',
	});
	assert.deepEqual([error.statusCode, error.details.code], [500, 'INCOMPLETE_PROPOSAL']);
	assert.equal(stub.requests.at(-1)!.method, 'DELETE');
});

test('Reject: one CAS query; stale _rev → 409 with the current _rev; not a proposal → 409 INVALID_STATE', async () => {
	const stub = new ArangoStub()
		.cursor([{ outcome: 'OK', proposal_rev: '_r2' }], { writesExecuted: 1 })
		.cursor([{ outcome: 'REV_CONFLICT', status: 'proposal', current_rev: '_r3' }])
		.cursor([{ outcome: 'INVALID_STATE', status: 'active' }]);
	const db = stub.database();
	const input = { proposal_id: 'p1', expected_proposal_rev: '_r1', user_id: 'alice' };
	const ok = await rejectProposal.execute(db, input, RUN);
	assert.deepEqual(ok.data, { success: true, proposal_id: 'atoms/p1', proposal_rev: '_r2', rejected_by: 'alice' });
	assert.deepEqual(stub.queries()[0].bindVars, { proposal_key: 'p1', expected_rev: '_r1', user_id: 'alice' });
	assert.match(
		stub.queries()[0].query,
		/UPDATE a WITH \{ status: "rejected", rejected_at: now, rejected_by: @user_id \}[\s\S]*ignoreRevs: false/,
	);
	const stale = await failure(rejectProposal, db, input);
	assert.deepEqual(stale.details, { code: 'REV_CONFLICT', expected_rev: '_r1', current_rev: '_r3' });
	const notProposal = await failure(rejectProposal, db, input);
	assert.deepEqual(
		[notProposal.statusCode, notProposal.details.code, notProposal.details.status],
		[409, 'INVALID_STATE', 'active'],
	);
	assertQueriesSafe(stub);
});

const MERGE_INPUT = {
	winner_proposal_id: 'p1',
	current_active_id: 'a1',
	user_id: 'u1',
	structure_edge_id: 'structure_links/e1',
	expected_edge_rev: '_e1',
	allow_outdated: false,
};

const SWITCHED = {
	outcome: 'OK',
	current_rev: '_e1',
	structure_edge_rev: '_e2',
	changed_atoms: [
		{ id: 'atoms/a1', rev: '_a2', status: 'archived' },
		{ id: 'atoms/p1', rev: '_p2', status: 'active' },
	],
	revision_link_id: 'revision_links/r1',
	rebased_proposals: [
		{ id: 'atoms/p2', outdated: true },
		{ id: 'atoms/p3', outdated: true },
	],
};

test('Merge: begin → switch query → unlink query → commit, every step in the transaction; §3.2 result', async () => {
	const stub = new ArangoStub()
		.begin('9001')
		.cursor([SWITCHED], { writesExecuted: 6 })
		.cursor(['proposal_links/w1'], { writesExecuted: 1 })
		.commit('9001');
	const result = await mergeProposal.execute(stub.database(), MERGE_INPUT, RUN);
	assert.deepEqual(
		stub.requests.map((r) => `${r.method} ${r.path}`),
		[
			'POST /_db/contracts/_api/transaction/begin',
			'POST /_db/contracts/_api/cursor',
			'POST /_db/contracts/_api/cursor',
			'PUT /_db/contracts/_api/transaction/9001',
		],
	);
	assert.deepEqual(stub.requests[0].body, { collections: { write: MERGE_WRITE_COLLECTIONS, read: [] } });
	const [sw, unlink] = stub.queries();
	assert.deepEqual([sw.trxId, unlink.trxId], ['9001', '9001'], 'both queries carry x-arango-trx-id');
	assert.deepEqual(sw.bindVars, {
		current_key: 'a1',
		winner_key: 'p1',
		edge_key: 'e1',
		expected_edge_rev: '_e1',
		user_id: 'u1',
		allow_outdated: false,
	});
	assert.match(sw.query, /UPDATE \{ _key: e\._key, _rev: @expected_edge_rev \} WITH \{ _to: winner_id/);
	// issue 25 review: the rebased proposal links name who merged
	assert.match(
		sw.query,
		/UPDATE pe WITH \{ _to: winner_id, outdated: true, rebased_from: current_id, rebased_at: now, rebased_by: @user_id \}/,
	);
	assert.deepEqual(unlink.bindVars, { winner_id: 'atoms/p1' });
	assert.match(unlink.query, /REMOVE pe IN proposal_links/);
	assert.deepEqual(result.data, {
		success: true,
		new_active_atom_id: 'atoms/p1',
		archived_atom_id: 'atoms/a1',
		structure_edge_id: 'structure_links/e1',
		structure_edge_rev: '_e2',
		rebased_proposals_count: 2,
		rebased_proposals: [
			{ id: 'atoms/p2', outdated: true },
			{ id: 'atoms/p3', outdated: true },
		],
		revision_link_id: 'revision_links/r1',
		removed_proposal_links: ['proposal_links/w1'],
	});
	assert.ok(stub.isDone());
	assertQueriesSafe(stub);
});

const FAILED_CHECKS: [string, Record<string, unknown>, number, Record<string, unknown>][] = [
	['NOT_FOUND', { missing: [null, 'atoms/p1', null] }, 404, { missing: ['atoms/p1'] }],
	['LOCKED', { locked_by: 'u2', locked_until: 123 }, 423, { locked_by: 'u2', locked_until: 123 }],
	['INVALID_STATE', { current_status: 'archived', winner_status: 'proposal' }, 409, { current_status: 'archived' }],
	['EDGE_MISMATCH', { edge_to: 'atoms/zz' }, 409, { edge_to: 'atoms/zz', expected_to: 'atoms/a1' }],
	['NOT_A_PROPOSAL', {}, 409, { winner_proposal_id: 'atoms/p1' }],
	['PROPOSAL_OUTDATED', {}, 409, { allow_outdated: false }],
	['REV_CONFLICT', { current_rev: '_e7' }, 409, { expected_rev: '_e1', current_rev: '_e7' }],
];

for (const [outcome, facts, status, expected] of FAILED_CHECKS) {
	test(`Merge: failed check ${outcome} → ${status}, the transaction is aborted and nothing else is sent`, async () => {
		const stub = new ArangoStub()
			.begin('77')
			.cursor([{ outcome, ...facts }])
			.abort('77');
		const error = await failure(mergeProposal, stub.database(), MERGE_INPUT);
		assert.equal(error.statusCode, status);
		assert.equal(error.details.code, outcome);
		for (const [key, value] of Object.entries(expected)) assert.deepEqual(error.details[key], value, key);
		assert.deepEqual(
			stub.requests.map((r) => r.method),
			['POST', 'POST', 'DELETE'],
			'begin, switch, abort: no unlink, no commit',
		);
		assert.ok(stub.isDone());
	});
}

const MERGE_IDS = ['structure_links/e1', 'atoms/a1', 'atoms/p1'];

test('Merge: a concurrent write on the edge (1200 during the switch) → 409 and abort; the edge and both atoms read again in one query', async () => {
	const stub = new ArangoStub()
		.begin('78')
		.cursorError(...CONFLICT_1200)
		.abort('78')
		.cursor([
			['structure_links/e1', '_e9'],
			['atoms/a1', '_a1'],
			['atoms/p1', '_p1'],
		]);
	const error = await failure(mergeProposal, stub.database(), MERGE_INPUT);
	assert.deepEqual(
		[error.statusCode, error.kind, error.details.code, error.details.arango_error_num],
		[409, 'conflict', 'REV_CONFLICT', 1200],
	);
	assert.deepEqual(
		stub.requests.map((r) => r.method),
		['POST', 'POST', 'DELETE', 'POST'],
		'begin, switch, abort, then one read',
	);
	const read = stub.queries()[1];
	assert.deepEqual([read.bindVars, read.trxId], [{ ids: MERGE_IDS }, undefined]);
	assert.doesNotMatch(read.query, /INSERT|UPDATE|REPLACE|REMOVE|UPSERT/);
	assert.deepEqual(
		[error.details.expected_rev, error.details.current_rev],
		['_e1', '_e9'],
		'the edge _rev after the conflict',
	);
	assert.deepEqual(error.details.current_revs, { 'structure_links/e1': '_e9', 'atoms/a1': '_a1', 'atoms/p1': '_p1' });
	assert.deepEqual(error.details.conflict_on, ['structure_links/e1'], 'the edge moved since expected_edge_rev');
	assert.equal(error.where.collection, 'structure_links');
	assert.ok(stub.isDone());
	assertQueriesSafe(stub);
});

test("Merge: a 1200 on an atom (the edge unchanged) → current_rev == expected_rev, conflict_on [], the atoms' current _revs and a message naming the atoms", async () => {
	const stub = new ArangoStub()
		.begin('82')
		.cursorError(...CONFLICT_1200)
		.abort('82')
		.cursor([
			['structure_links/e1', '_e1'],
			['atoms/a1', '_a4'],
			['atoms/p1', null],
		]);
	const error = await failure(mergeProposal, stub.database(), MERGE_INPUT);
	assert.deepEqual([error.statusCode, error.details.code], [409, 'REV_CONFLICT']);
	assert.deepEqual([error.details.expected_rev, error.details.current_rev], ['_e1', '_e1']);
	assert.deepEqual(
		error.details.current_revs,
		{ 'structure_links/e1': '_e1', 'atoms/a1': '_a4', 'atoms/p1': null },
		'a winner gone meanwhile reads null',
	);
	assert.deepEqual(error.details.conflict_on, []);
	assert.equal(
		error.message,
		'concurrent write to the structure edge or an atom of this merge; retry with the current revisions',
	);
	assert.match(String(error.details.arango_message), /^AQL: conflict/, "ArangoDB's text only in the details");
	assert.ok(stub.isDone());
});

test('Merge: a 1200 whose re-read fails → 409 REV_CONFLICT with expected_rev, current_rev null, no current_revs/conflict_on', async () => {
	const stub = new ArangoStub()
		.begin('83')
		.cursorError(...CONFLICT_1200)
		.abort('83')
		.cursorNetworkError('ECONNRESET');
	const error = await failure(mergeProposal, stub.database(), MERGE_INPUT);
	assert.deepEqual(
		[error.statusCode, error.kind, error.retryable, error.details.code],
		[409, 'conflict', false, 'REV_CONFLICT'],
	);
	assert.deepEqual([error.details.expected_rev, error.details.current_rev], ['_e1', null]);
	assert.equal('current_revs' in error.details || 'conflict_on' in error.details, false);
	assert.match(error.message, /^concurrent write to the structure edge or an atom of this merge/);
	assert.ok(stub.isDone());
});

test('Merge: a switch that did not change both atoms is aborted, never committed (no orphan active atom)', async () => {
	const stub = new ArangoStub()
		.begin('79')
		.cursor([{ ...SWITCHED, changed_atoms: [SWITCHED.changed_atoms[1]] }])
		.abort('79');
	const error = await failure(mergeProposal, stub.database(), MERGE_INPUT);
	assert.deepEqual([error.statusCode, error.details.code], [500, 'INCOMPLETE_MERGE']);
	assert.equal(stub.requests.at(-1)!.method, 'DELETE');
});

test('Merge: the connection drops before the unlink step → 503 retryable, abort attempted, no commit', async () => {
	const stub = new ArangoStub().begin('80').cursor([SWITCHED]).cursorNetworkError('ECONNRESET').abort('80');
	const error = await failure(mergeProposal, stub.database(), MERGE_INPUT);
	assert.deepEqual([error.statusCode, error.kind, error.retryable], [503, 'db', true]);
	assert.deepEqual(
		stub.requests.map((r) => r.method),
		['POST', 'POST', 'DELETE'],
	);
	assert.ok(!stub.requests.some((r) => r.method === 'PUT'), 'never committed');
});

test('Merge: missing collections at begin (1203) → 500 with the migration hint, no query sent', async () => {
	const stub = new ArangoStub().beginUnknownCollection();
	const error = await failure(mergeProposal, stub.database(), MERGE_INPUT);
	assert.deepEqual(
		[error.statusCode, error.details.code, error.details.hint],
		[500, 'COLLECTION_NOT_FOUND', 'run npm run db:migrate:arango'],
	);
	assert.equal(stub.queries().length, 0);
});

test('Merge: allow_outdated accepts "true"; a wrong edge collection is refused with 422', async () => {
	const stub = new ArangoStub().begin('81').cursor([SWITCHED]).cursor([]).commit('81');
	await mergeProposal.execute(stub.database(), { ...MERGE_INPUT, allow_outdated: 'true' }, RUN);
	assert.equal(stub.queries()[0].bindVars.allow_outdated, true);
	const error = await failure(mergeProposal, stub.database(), { ...MERGE_INPUT, structure_edge_id: 'atoms/e1' });
	assert.deepEqual([error.statusCode, error.details.field], [422, 'structure_edge_id']);
});
