/**
 * The seed-000 workflows (workflows-json/arango/, scenarios 3.1–3.8) in a real n8n 2.4.8: each one is
 * imported and published with WF99, and with ArangoDB unreachable every webhook answers an ErrorEnvelope
 * (kind db, retryable, 503) and the error is recorded in ops.errors with the node that failed.
 * ArangoDB itself cannot run on these machines (FACTS: ArangoDB); the happy paths are covered at the
 * HTTP level (test/unit/arango) and by the live suite (test/live, ARANGO_URL).
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ErrorEnvelope } from '../../nodes/shared/contracts/envelope';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { arangoCredential, startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { freePort } = require('../../scripts/lib/postgres');

const ARANGO_WORKFLOWS = path.join(WORKFLOWS, 'arango');

/** One call per webhook of the arango workflows, with the seed's input body, and the node that fails. */
const CALLS: { path: string; node: string; body: Record<string, unknown>; headers?: Record<string, string> }[] = [
	{ path: 'arango/ai-analysis', node: 'Load Context', body: { target_atom_id: 'atom_uuid_v5', agent_role_key: 'tech_lead' } },
	{
		path: 'arango/merge',
		node: 'Merge Proposal',
		body: { winner_proposal_id: 'atom_draft_x', current_active_id: 'atom_uuid_v5', user_id: 'user_123', structure_edge_id: 'structure_links/e1', expected_edge_rev: '_e1', allow_outdated: false },
	},
	{ path: 'arango/baseline', node: 'Create Baseline', body: { doc_id: 'docs/doc_1', version_tag: 'v1.0', title: 'MVP Release' } },
	{ path: 'arango/proposal', node: 'Create Proposal', body: { target_active_id: 'atom_uuid_v5', new_content: 'Fixed text', comment: 'typo', author: 'user_123' } },
	{ path: 'arango/reject', node: 'Reject Proposal', body: { proposal_id: 'atom_draft_y', expected_proposal_rev: '_r1' } },
	{ path: 'arango/lock', node: 'Lock Atom', body: { atom_id: 'atom_uuid_v5', user_id: 'user_123', expected_rev: '_a1' } },
	{ path: 'arango/unlock', node: 'Unlock Atom', body: { atom_id: 'atom_uuid_v5', user_id: 'user_123' }, headers: { 'if-match': '"_a1"' } },
	{ path: 'arango/archive', node: 'Archive Atom', body: { atom_id: 'atom_uuid_v5', reason: 'cancelled', expected_rev: '_a1', user_id: 'user_123' } },
];

let db: TestDatabase;
let n8n: RunningN8n;

before(
	async () => {
		db = await setupDatabase();
		const closedPort = await freePort();
		const files = readdirSync(ARANGO_WORKFLOWS).filter((f) => f.endsWith('.json')).map((f) => path.join(ARANGO_WORKFLOWS, f));
		n8n = await startN8n(
			db.url,
			[path.join(WORKFLOWS, 'WF99_global_err_handler.json'), ...files],
			CALLS.map((c) => c.path),
			[arangoCredential(`http://127.0.0.1:${closedPort}`)],
		);
	},
	{ timeout: 30 * 60_000 },
);

after(async () => {
	await n8n?.stop();
	await db?.drop();
});

test('every scenario 3.1–3.8 ships one workflow, and all of them imported and published', () => {
	const files = readdirSync(ARANGO_WORKFLOWS).filter((f) => f.endsWith('.json')).sort();
	assert.deepEqual(files.map((f) => f.slice(0, 3)), ['A31', 'A32', 'A33', 'A34', 'A35', 'A36', 'A37', 'A38']);
});

for (const call of CALLS) {
	test(`${call.path}: ArangoDB unreachable → 503 ErrorEnvelope (db, retryable) and an ops.errors row naming "${call.node}"`, async () => {
		const res = await fetch(`${n8n.url}/webhook/${call.path}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...(call.headers ?? {}) },
			body: JSON.stringify(call.body),
		});
		const text = await res.text();
		assert.equal(res.status, 503, text);
		const envelope = ErrorEnvelope.parse(JSON.parse(text));
		assert.deepEqual([envelope.status_code, envelope.error.kind, envelope.error.retryable], [503, 'db', true]);
		assert.equal(envelope.error.details.error_context?.node, call.node);
		assert.equal((envelope.error.details.node_details as Record<string, unknown>).code, 'UNREACHABLE');
		const rows = await db.pool.query('SELECT node, kind, status_code, retryable, details FROM ops.errors WHERE correlation_id = $1', [
			envelope.meta.correlation.correlation_id,
		]);
		assert.equal(rows.rowCount, 1);
		assert.deepEqual([rows.rows[0].node, rows.rows[0].kind, rows.rows[0].status_code, rows.rows[0].retryable], [call.node, 'db', 503, true]);
		assert.ok(['atoms', 'structure_links', 'baselines', 'prompts'].includes(rows.rows[0].details.error_context.collection), JSON.stringify(rows.rows[0].details.error_context));
	});
}

test('a validation failure (no expected_rev, no If-Match) answers 422 naming the field, recorded too', async () => {
	const res = await fetch(`${n8n.url}/webhook/arango/lock`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ atom_id: 'a1', user_id: 'u1' }),
	});
	const envelope = ErrorEnvelope.parse(await res.json());
	assert.equal(res.status, 422);
	assert.equal(envelope.error.kind, 'validation');
	assert.equal((envelope.error.details.node_details as Record<string, unknown>).field, 'expected_rev');
	const rows = await db.pool.query('SELECT 1 FROM ops.errors WHERE correlation_id = $1', [envelope.meta.correlation.correlation_id]);
	assert.equal(rows.rowCount, 1);
});
