/**
 * The failures every ArangoCAS operation shares, for each operation of the node: ArangoDB unreachable
 * (503, retryable), a document that vanished under a write (errorNum 1202 → 404), a conflicting write
 * (errorNum 1200 → 409), and a missing collection (1203 → 500 with the migration hint). Operations in a
 * stream transaction must abort it on each. After a 1200 the operations that write existing documents
 * read their `_rev`s again (one more read-only query, after any abort) and answer them as `current_rev`
 * (the primary document) and `current_revs` (every document read); Create Baseline re-reads its
 * traversal instead (only `current_revs`).
 */
import assert from 'node:assert/strict';
import { afterEach, test } from '@jest/globals';
import { RESOURCES } from '../../../nodes/ArangoCas/actions';
import { ArangoStub, CONFLICT_1200 } from '../../helpers/arangoHttp';
import { failure } from '../../helpers/arangoOps';

afterEach(() => ArangoStub.reset());

/** A valid input per operation (the seed's example bodies). */
const INPUTS: Record<string, Record<string, unknown>> = {
	'atom.lock': { atom_id: 'atom_uuid_v5', user_id: 'user_123', expected_rev: '_r1' },
	'atom.unlock': { atom_id: 'atom_uuid_v5', user_id: 'user_123', expected_rev: '_r1' },
	'atom.archive': { atom_id: 'atom_uuid_v5', user_id: 'user_123', expected_rev: '_r1', reason: 'cancelled' },
	'atom.unlockExpired': {},
	'proposal.create': { target_active_id: 'atom_uuid_v5', new_content: 'text', comment: 'c', author: 'user_123' },
	'proposal.reject': { proposal_id: 'atom_draft_y', expected_proposal_rev: '_r1', user_id: 'user_123' },
	'proposal.merge': {
		winner_proposal_id: 'atom_draft_x',
		current_active_id: 'atom_uuid_v5',
		user_id: 'user_123',
		structure_edge_id: 'structure_links/e1',
		expected_edge_rev: '_e1',
	},
	'baseline.create': { doc_id: 'docs/doc_1', version_tag: 'v1.0', title: 'MVP', user_id: 'user_123' },
	'analysis.loadContext': { target_atom_id: 'atom_uuid_v5', agent_role_key: 'fixer', user_id: 'user_123' },
	'analysis.saveResult': {
		target_atom_id: 'atom_uuid_v5',
		prompt_id: 'prompts/p1',
		ai_response: '{"issues":[]}',
		user_id: 'user_123',
	},
	'analysis.saveError': {
		target_atom_id: 'atom_uuid_v5',
		prompt_id: 'prompts/p1',
		status_code: 500,
		user_id: 'user_123',
	},
};

/**
 * The operations that read documents again after a lost race: their ids (the primary, whose `_rev` is
 * `current_rev`, first) and the caller's expected `_rev` of the primary (none for Create Proposal).
 */
const CAS_TARGET: Record<string, { ids: string[]; expected_rev?: string }> = {
	'atom.lock': { ids: ['atoms/atom_uuid_v5'], expected_rev: '_r1' },
	'atom.unlock': { ids: ['atoms/atom_uuid_v5'], expected_rev: '_r1' },
	'atom.archive': { ids: ['atoms/atom_uuid_v5'], expected_rev: '_r1' },
	'proposal.create': { ids: ['atoms/atom_uuid_v5'] },
	'proposal.reject': { ids: ['atoms/atom_draft_y'], expected_rev: '_r1' },
	'proposal.merge': { ids: ['structure_links/e1', 'atoms/atom_uuid_v5', 'atoms/atom_draft_x'], expected_rev: '_e1' },
};
/** Create Baseline re-reads its traversal (the doc's active atoms) after a lost race. */
const TRAVERSAL_TARGET: Record<string, { bindVars: Record<string, unknown>; ids: string[] }> = {
	'baseline.create': { bindVars: { doc_key: 'doc_1' }, ids: ['atoms/a1', 'atoms/a2'] },
};

const FAILURES: {
	name: string;
	script: (stub: ArangoStub) => ArangoStub;
	status: number;
	kind: string;
	retryable: boolean;
	code: string;
}[] = [
	{
		name: 'ArangoDB unreachable',
		script: (s) => s.cursorNetworkError('ECONNREFUSED'),
		status: 503,
		kind: 'db',
		retryable: true,
		code: 'UNREACHABLE',
	},
	{
		name: 'document not found (1202)',
		script: (s) => s.cursorError(404, 1202, 'AQL: document not found [node #5: UpdateNode] (while executing)'),
		status: 404,
		kind: 'not_found',
		retryable: false,
		code: 'NOT_FOUND',
	},
	{
		name: 'write conflict (1200)',
		script: (s) => s.cursorError(...CONFLICT_1200),
		status: 409,
		kind: 'conflict',
		retryable: false,
		code: 'REV_CONFLICT',
	},
	{
		name: 'collection missing (1203)',
		script: (s) => s.cursorError(404, 1203, 'AQL: collection or view not found: atoms (while parsing)'),
		status: 500,
		kind: 'db',
		retryable: false,
		code: 'COLLECTION_NOT_FOUND',
	},
];

for (const resource of RESOURCES) {
	for (const op of resource.operations) {
		const name = `${resource.value}.${op.value}`;
		for (const f of FAILURES) {
			test(`${name}: ${f.name} → ${f.status} ${f.code}`, async () => {
				const inTransaction = name === 'proposal.merge' || name === 'proposal.create';
				const stub = new ArangoStub();
				if (inTransaction) stub.begin('500');
				f.script(stub);
				if (inTransaction) stub.abort('500');
				const cas = f.code === 'REV_CONFLICT' ? CAS_TARGET[name] : undefined;
				const traversal = f.code === 'REV_CONFLICT' ? TRAVERSAL_TARGET[name] : undefined;
				const reread = cas?.ids ?? traversal?.ids;
				if (reread) stub.cursor(reread.map((id, i) => [id, `_rNow${i}`]));
				const error = await failure(op, stub.database(), INPUTS[name]);
				assert.deepEqual(
					[error.statusCode, error.kind, error.retryable, error.details.code],
					[f.status, f.kind, f.retryable, f.code],
				);
				if (f.status < 500) {
					// a 4xx message reaches the caller (issue 25 §4): no AQL, plan node, index or collection names
					assert.doesNotMatch(error.message, /AQL|node #|UpdateNode|index|while executing|ArangoDB error/);
					assert.match(String(error.details.arango_message), /^AQL: /, "ArangoDB's text stays in the details");
				}
				if (reread) {
					const read = stub.queries().at(-1)!;
					assert.deepEqual(read.bindVars, cas ? { ids: cas.ids } : traversal!.bindVars, 'the documents are read again');
					assert.doesNotMatch(read.query, /INSERT|UPDATE|REPLACE|REMOVE|UPSERT/, 'read-only');
					assert.equal(read.trxId, undefined, 'outside the aborted transaction');
					assert.equal(stub.requests.at(-1)!.path.endsWith('/_api/cursor'), true, 'read after the abort');
					assert.deepEqual(error.details.current_revs, Object.fromEntries(reread.map((id, i) => [id, `_rNow${i}`])));
					assert.deepEqual(
						[error.details.current_rev, error.details.expected_rev],
						[cas ? '_rNow0' : null, cas?.expected_rev],
					);
				} else if (f.code === 'REV_CONFLICT') {
					assert.equal(stub.queries().length, 1, 'no CAS target: nothing read again');
				}
				assert.ok(error.where.collection, 'error_context names a collection');
				assert.ok(stub.isDone(), inTransaction ? 'the transaction was aborted' : 'one request');
				assert.ok(!stub.requests.some((r) => r.method === 'PUT'), 'nothing committed');
			});
		}
	}
}

test('every operation has an input in this table', () => {
	const names = RESOURCES.flatMap((r) => r.operations.map((o) => `${r.value}.${o.value}`)).sort();
	assert.deepEqual(names, Object.keys(INPUTS).sort());
});
