/**
 * ArangoCAS node versions run by n8n's own execution engine (test/helpers/n8nEngine.ts, n8n-core 2.4.4),
 * ArangoDB replayed over HTTP (test/helpers/arangoHttp.ts, nock: nothing leaves the process). Version 2
 * gave Create Baseline, Reject, Load Context, Save Result and Save Error the Identity fields (default
 * Verified Token Claim); a node saved at version 1 — the A3.1/A3.3/A3.5 nodes shipped before, with no
 * Identity parameter and items without a verified token — must keep running as it did: n8n hides the
 * fields for version 1 and the operation records no user (null). The same parameters at version 2 need
 * the token (401 UNAUTHENTICATED on the error output, nothing sent to ArangoDB).
 */
import assert from 'node:assert/strict';
import { afterAll, afterEach, test } from '@jest/globals';
import type { INodeExecutionData } from 'n8n-workflow';
import { SuccessItem } from '../../nodes/shared/contracts/envelope';
import { forgetDatabases } from '../../nodes/ArangoCas/transport/database';
import { ARANGO_DB, ARANGO_URL, ArangoStub } from '../helpers/arangoHttp';
import { runWorkflow, sinkOf, stopEngine, type EngineNode } from '../helpers/n8nEngine';

afterEach(() => {
	ArangoStub.reset();
	forgetDatabases();
});
afterAll(() => stopEngine());

const CREDENTIAL = {
	arangoDbApi: {
		url: ARANGO_URL,
		database: ARANGO_DB,
		authMode: 'basic',
		username: 'root',
		password: 'pw',
		timeoutMs: 5000,
	},
};

/** Save Result as A3.1 saved it before version 2 (no Identity parameter), with literal inputs. */
const SAVE_RESULT = {
	resource: 'analysis',
	operation: 'saveResult',
	targetAtomId: 'a1',
	promptId: 'prompts/fixer_v2',
	model: 'llama3',
	requestId: '4711',
	aiResponse: '={{ $json.body.response }}',
	options: { workflow: 'A3.1' },
};
/** Reject Proposal as A3.5 saved it before version 2. */
const REJECT = {
	resource: 'proposal',
	operation: 'reject',
	proposalId: '={{ $json.body.proposal_id }}',
	expectedProposalRev: '={{ $json.body.expected_proposal_rev }}',
	options: { workflow: 'A3.5' },
};

/** An item as a Header-Auth Webhook emits it: a body, no jwtPayload. */
const item = (body: Record<string, unknown>): INodeExecutionData => ({ json: { headers: {}, body } });

const node = (name: string, parameters: Record<string, unknown>, typeVersion: number): EngineNode => ({
	name,
	type: 'arangoCas',
	typeVersion,
	parameters,
	credentials: { arangoDbApi: 'ArangoDB' },
	onError: 'continueErrorOutput',
});

test('a version-1 Save Result and Reject (saved before the Identity fields) still run, recording no user', async () => {
	const stub = new ArangoStub()
		.cursor([{ outcome: 'OK', atom_exists: true, prompt_exists: true, artifact_ids: ['artifacts/i1'] }], {
			writesExecuted: 3,
		})
		.cursor([{ outcome: 'OK', proposal_rev: '_r2' }], { writesExecuted: 1 });
	const saved = await runWorkflow({
		nodes: [node('Save Result', SAVE_RESULT, 1)],
		items: [item({ response: JSON.stringify({ issues: [{ description: 'Typo', severity: 'low' }] }) })],
		credentials: CREDENTIAL,
	});
	assert.equal(saved.error, undefined);
	assert.deepEqual(saved.output(sinkOf('Save Result', 1)), [], 'no error item');
	const [ok] = saved.output(sinkOf('Save Result', 0));
	assert.deepEqual(SuccessItem.parse(ok.json).data, {
		success: true,
		artifacts_created: 1,
		artifact_ids: ['artifacts/i1'],
	});
	assert.equal(stub.queries()[0].bindVars.user_id, null, 'created_by null, as before version 2');

	const rejected = await runWorkflow({
		nodes: [node('Reject', REJECT, 1)],
		items: [item({ proposal_id: 'p1', expected_proposal_rev: '_r1' })],
		credentials: CREDENTIAL,
	});
	const [done] = rejected.output(sinkOf('Reject', 0));
	assert.deepEqual(SuccessItem.parse(done.json).data, {
		success: true,
		proposal_id: 'atoms/p1',
		proposal_rev: '_r2',
		rejected_by: null,
	});
	assert.ok(stub.isDone());
});

test('the same parameters on version 2 need the verified token: 401 on the error output, nothing sent', async () => {
	const stub = new ArangoStub();
	for (const [name, parameters, body] of [
		['Save Result', SAVE_RESULT, { response: '{"issues":[]}' }],
		['Reject', REJECT, { proposal_id: 'p1', expected_proposal_rev: '_r1' }],
	] as const) {
		const result = await runWorkflow({
			nodes: [node(name, parameters, 2)],
			items: [item(body)],
			credentials: CREDENTIAL,
		});
		assert.deepEqual(result.output(sinkOf(name, 0)), []);
		const [failed] = result.output(sinkOf(name, 1));
		const error = failed.json.error as { status_code: number; details: { code: string } };
		assert.deepEqual([error.status_code, error.details.code], [401, 'UNAUTHENTICATED'], name);
	}
	assert.deepEqual(stub.requests, []);
});

test('version 2 with Identity = User ID Field stores that user; an empty one is a 422, never "no user"', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'OK', proposal_rev: '_r2' }], { writesExecuted: 1 });
	const body = { proposal_id: 'p1', expected_proposal_rev: '_r1' };
	const stored = await runWorkflow({
		nodes: [node('Reject', { ...REJECT, identity: 'field', userId: 'alice' }, 2)],
		items: [item(body)],
		credentials: CREDENTIAL,
	});
	const [done] = stored.output(sinkOf('Reject', 0));
	assert.equal((SuccessItem.parse(done.json).data as { rejected_by: unknown }).rejected_by, 'alice');
	const empty = await runWorkflow({
		nodes: [node('Reject', { ...REJECT, identity: 'field', userId: '={{ null }}' }, 2)],
		items: [item(body)],
		credentials: CREDENTIAL,
	});
	const [failed] = empty.output(sinkOf('Reject', 1));
	const error = failed.json.error as { status_code: number; details: { field: string } };
	assert.deepEqual([error.status_code, error.details.field], [422, 'user_id']);
	assert.equal(stub.queries().length, 1);
});
