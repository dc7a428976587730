/**
 * The ArangoCAS node itself (description and execute), with a minimal IExecuteFunctions: parameters are
 * read per item, the result is a valid SuccessItem paired to its item, and in "continue" mode a
 * failure becomes the error item the Error Pipe reads (kind, status_code, details.code, ctx, error_context
 * with node, operation and collection).
 */
import assert from 'node:assert/strict';
import { afterEach, test } from '@jest/globals';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { SuccessItem } from '../../../nodes/shared/contracts/envelope';
import { ARANGO_DB, ARANGO_URL, ArangoStub } from '../../helpers/arangoHttp';

// The compiled node (npm test builds first): "ArangoCas.node" would resolve to the codex .json beside it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ArangoCas } =
	require('../../../dist/nodes/ArangoCas/ArangoCas.node.js') as typeof import('../../../nodes/ArangoCas/ArangoCas.node');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { forgetDatabases } =
	require('../../../dist/nodes/ArangoCas/transport/database.js') as typeof import('../../../nodes/ArangoCas/transport/database');

afterEach(() => {
	ArangoStub.reset();
	forgetDatabases();
});

function context(
	items: INodeExecutionData[],
	params: Record<string, unknown>[],
	continueOnFail: boolean,
	typeVersion = 2,
): IExecuteFunctions {
	return {
		getInputData: () => items,
		getNode: () => ({
			name: 'Lock Atom',
			type: 'n8n-nodes-contracts.arangoCas',
			typeVersion,
			position: [0, 0],
			parameters: {},
			id: '1',
		}),
		getCredentials: async () => ({
			url: ARANGO_URL,
			database: ARANGO_DB,
			authMode: 'basic',
			username: 'root',
			password: 'pw',
			timeoutMs: 5000,
		}),
		getExecutionId: () => '99',
		// as n8n 2.4.8: an absent parameter (a hidden field) without a fallback throws
		getNodeParameter: (name: string, i: number, fallback?: unknown) => {
			const value = name in params[i] ? params[i][name] : fallback;
			if (value === undefined) throw new Error(`Could not get parameter ${name}`);
			return value;
		},
		continueOnFail: () => continueOnFail,
	} as unknown as IExecuteFunctions;
}

/** Lock parameters as n8n passes them with the default Identity (token): no User ID parameter at all. */
const lockParams = (atomId: string) => ({
	resource: 'atom',
	operation: 'lock',
	atomId,
	identity: 'token',
	identityClaim: 'sub',
	expectedRev: '_r1',
	leaseMinutes: 5,
	options: { workflow: 'A3.6' },
});
/** What n8n's Webhook node puts on its item after verifying a JWT (Authentication = JWT Auth). */
const verified = (sub: unknown, extra: Record<string, unknown> = {}) => ({
	jwtPayload: { sub, iat: 1_700_000_000 },
	...extra,
});

test('every field belongs to exactly one resource/operation and every operation has its dropdown entry', () => {
	const { properties } = new ArangoCas().description;
	const fields = properties.filter((p) => p.displayOptions?.show?.operation);
	for (const f of fields) {
		assert.equal(f.displayOptions!.show!.resource!.length, 1, f.name);
		assert.equal(f.displayOptions!.show!.operation!.length, 1, f.name);
	}
	const dropdowns = properties.filter((p) => p.name === 'operation');
	assert.equal(dropdowns.length, 4);
	assert.ok(
		fields.every((f) => f.description && /^[A-Z]/.test(f.description)),
		'fields are documented',
	);
});

test("execute: one SuccessItem per item, paired, sent with the item's parameters; a failure in continue mode is an error item", async () => {
	const stub = new ArangoStub()
		.cursor([{ outcome: 'OK', atom_rev: '_r2', new_locked_until: 123 }])
		.cursor([{ outcome: 'LOCKED', locked_by: 'u2', locked_until: 456 }]);
	const items = [
		{ json: verified('u1', { headers: { 'x-correlation-id': 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee' } }) },
		{ json: verified('u1') },
	];
	const [out] = await new ArangoCas().execute.call(context(items, [lockParams('a1'), lockParams('a2')], true));
	assert.equal(out.length, 2);
	assert.deepEqual(
		out.map((i) => i.pairedItem),
		[{ item: 0 }, { item: 1 }],
	);
	const ok = SuccessItem.parse(out[0].json);
	assert.deepEqual(
		[ok.status_code, ok.meta.source, ok.meta.correlation.correlation_id, ok.data.atom_rev],
		[200, 'A3.6', 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee', '_r2'],
	);
	assert.deepEqual(
		stub.queries().map((q) => q.bindVars.atom_key),
		['a1', 'a2'],
	);
	const error = out[1].json.error as Record<string, any>;
	assert.deepEqual(
		[error.status_code, error.kind, error.details.code, error.details.locked_by],
		[423, 'locked', 'LOCKED', 'u2'],
	);
	assert.equal(error.ctx.operation, 'atom.lock');
	assert.deepEqual(
		{
			node: error.error_context.node,
			operation: error.error_context.operation,
			collection: error.error_context.collection,
		},
		{
			node: 'Lock Atom',
			operation: 'update',
			collection: 'atoms',
		},
	);
});

/** Parameters of each operation that acts as a user, with the default Identity (token). */
const ACTING: Record<string, Record<string, unknown>> = {
	lock: lockParams('a1'),
	unlock: {
		resource: 'atom',
		operation: 'unlock',
		atomId: 'a1',
		identity: 'token',
		identityClaim: 'sub',
		expectedRev: '_r1',
	},
	archive: {
		resource: 'atom',
		operation: 'archive',
		atomId: 'a1',
		identity: 'token',
		identityClaim: 'sub',
		expectedRev: '_r1',
		reason: 'gone',
	},
	merge: {
		resource: 'proposal',
		operation: 'merge',
		winnerProposalId: 'p1',
		currentActiveId: 'a1',
		identity: 'token',
		identityClaim: 'sub',
		structureEdgeId: 'structure_links/e1',
		expectedEdgeRev: '_e1',
		allowOutdated: false,
	},
	// issue 25: the writes that recorded no actor before
	baseline: {
		resource: 'baseline',
		operation: 'create',
		docId: 'docs/doc_1',
		versionTag: 'v1.0',
		title: 'MVP',
		identity: 'token',
		identityClaim: 'sub',
	},
	reject: {
		resource: 'proposal',
		operation: 'reject',
		proposalId: 'p1',
		expectedProposalRev: '_r1',
		identity: 'token',
		identityClaim: 'sub',
	},
	loadContext: {
		resource: 'analysis',
		operation: 'loadContext',
		targetAtomId: 'a1',
		agentRoleKey: 'fixer',
		identity: 'token',
		identityClaim: 'sub',
	},
	saveResult: {
		resource: 'analysis',
		operation: 'saveResult',
		targetAtomId: 'a1',
		promptId: 'prompts/p1',
		model: 'llama3',
		requestId: '1',
		aiResponse: '{"issues":[{"description":"d","severity":"low"}]}',
		identity: 'token',
		identityClaim: 'sub',
	},
	saveError: {
		resource: 'analysis',
		operation: 'saveError',
		targetAtomId: 'a1',
		promptId: 'prompts/p1',
		model: 'llama3',
		temperature: '',
		requestId: '1',
		statusCode: 500,
		responseText: '',
		errorMessage: 'boom',
		identity: 'token',
		identityClaim: 'sub',
	},
};

test("Lock and Unlock act as the token's user: bind var user_id is the verified claim (sub, or the claim set), never the body's", async () => {
	const stub = new ArangoStub()
		.cursor([{ outcome: 'OK', atom_rev: '_r2', new_locked_until: 123 }])
		.cursor([{ outcome: 'OK', atom_rev: '_r3' }])
		.cursor([{ outcome: 'OK', atom_rev: '_r4' }]);
	const items = [
		{ json: verified('user-7', { body: { user_id: 'user-7', atom_id: 'a1' } }) },
		{ json: { jwtPayload: { sub: 'service-account', uid: 8 }, body: { user_id: '8' } } },
		{ json: verified(42, { body: { user_id: 42 } }) },
	];
	const params = [ACTING.lock, { ...ACTING.unlock, identityClaim: 'uid' }, ACTING.unlock];
	const [out] = await new ArangoCas().execute.call(context(items, params, true));
	const envelopes = out.map((i) => SuccessItem.parse(i.json));
	assert.deepEqual(
		stub.queries().map((q) => q.bindVars.user_id),
		['user-7', '8', '42'],
	);
	assert.equal(envelopes[0].data.locked_by, 'user-7');
});

test('User ID Field identity: the field is the user, whatever the token says', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'OK', atom_rev: '_r2', new_locked_until: 123 }]);
	// n8n drops the hidden Identity Claim parameter in field mode (the context throws if it were read)
	const lock = {
		resource: 'atom',
		operation: 'lock',
		atomId: 'a1',
		identity: 'field',
		userId: 'carol',
		expectedRev: '_r1',
		leaseMinutes: 5,
	};
	const [out] = await new ArangoCas().execute.call(
		context([{ json: verified('alice', { body: { user_id: 'dave' } }) }], [lock], true),
	);
	assert.equal(SuccessItem.parse(out[0].json).data.locked_by, 'carol');
	assert.deepEqual(
		stub.queries().map((q) => q.bindVars.user_id),
		['carol'],
	);
});

test('a body user_id that differs from the token → 403 IDENTITY_MISMATCH, ctx kept, and no request reaches ArangoDB', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'OK', atom_rev: '_r2', new_locked_until: 123 }]);
	const correlation = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
	const items = [
		{
			json: verified('alice', {
				body: { user_id: 'bob' },
				headers: { 'x-correlation-id': correlation, authorization: 'Bearer eyJhbGciOi.secret-part.sig' },
			}),
		},
	];
	const [out] = await new ArangoCas().execute.call(context(items, [ACTING.unlock], true));
	const error = out[0].json.error as Record<string, any>;
	assert.deepEqual(
		[error.status_code, error.kind, error.retryable, error.details.code],
		[403, 'auth', false, 'IDENTITY_MISMATCH'],
	);
	assert.deepEqual(
		[error.ctx.operation, error.ctx.correlation_id, error.error_context.correlation_id],
		['atom.unlock', correlation, correlation],
	);
	assert.equal(stub.requests.length, 0, 'no request sent');
	assert.ok(!stub.isDone(), 'the scripted reply is still unused');
	assert.ok(!JSON.stringify(out).includes('secret-part'), 'the Authorization header is not in the error item');
});

for (const [name, params] of Object.entries(ACTING)) {
	test(`${name}: an item without a verified token → 401 UNAUTHENTICATED before any request; in stop mode the item fails`, async () => {
		const stub = new ArangoStub().cursor([{ outcome: 'OK' }]);
		const [out] = await new ArangoCas().execute.call(context([{ json: { body: { user_id: 'u1' } } }], [params], true));
		const error = out[0].json.error as Record<string, any>;
		assert.deepEqual(
			[error.status_code, error.kind, error.details.code, error.ctx.operation],
			[401, 'auth', 'UNAUTHENTICATED', `${params.resource}.${params.operation}`],
		);
		assert.match(error.message, /JWT Auth/);
		assert.equal(stub.requests.length, 0);
		await assert.rejects(new ArangoCas().execute.call(context([{ json: {} }], [params], false)), /no verified token/);
	});
}

for (const [name, params] of Object.entries(ACTING)) {
	test(`${name}: a verified token without a usable sub (missing, blank, " alice", too long, NUL) → 403 IDENTITY_CLAIM_INVALID, nothing sent`, async () => {
		const stub = new ArangoStub().cursor([{ outcome: 'OK' }]);
		const bad = [
			{ iat: 1 },
			{ sub: '' },
			{ sub: ' alice' },
			{ sub: 'alice ' },
			{ sub: 'x'.repeat(257) },
			{ sub: 'a\u0000b' },
		];
		const items = bad.map((payload) => ({ json: { jwtPayload: payload, body: {} } }));
		const [out] = await new ArangoCas().execute.call(
			context(
				items,
				items.map(() => params),
				true,
			),
		);
		for (const item of out) {
			const error = item.json.error as Record<string, any>;
			assert.deepEqual(
				[error.status_code, error.kind, error.details.code, error.details.claim],
				[403, 'auth', 'IDENTITY_CLAIM_INVALID', 'sub'],
			);
		}
		assert.equal(stub.requests.length, 0, 'no request sent');
	});
}

test("issue 25: Create Baseline, Reject, Save Result and Save Error store the token's sub as their actor; Load Context outputs it", async () => {
	const stub = new ArangoStub()
		.cursor([{ outcome: 'OK', illegal: [], baseline_id: 'baselines/b1', frozen_at: 1, items: [] }], {
			writesExecuted: 1,
		})
		.cursor([{ outcome: 'OK', proposal_rev: '_r2' }], { writesExecuted: 1 })
		.cursor([{ outcome: 'OK', atom_exists: true, prompt_exists: true, artifact_ids: ['artifacts/i1'] }], {
			writesExecuted: 3,
		})
		.cursor([{ outcome: 'OK', error_artifact_id: 'artifacts/e1', target_missing: false }], { writesExecuted: 3 })
		.cursor([
			{
				outcome: 'OK',
				atom_exists: true,
				prompt_exists: true,
				atom_text: 't',
				prompt: { _id: 'prompts/p1', template: '{{content}}' },
				issues_context: [],
			},
		]);
	const names = ['baseline', 'reject', 'saveResult', 'saveError', 'loadContext'];
	const items = names.map(() => ({ json: verified('alice', { body: {} }) }));
	const [out] = await new ArangoCas().execute.call(
		context(
			items,
			names.map((n) => ACTING[n]),
			true,
		),
	);
	const envelopes = out.map((i) => SuccessItem.parse(i.json));
	assert.deepEqual(
		stub.queries().map((q) => q.bindVars.user_id),
		['alice', 'alice', 'alice', 'alice', undefined],
	);
	for (const { query } of stub.queries().slice(0, 4)) assert.match(query, /(created_by|rejected_by): @user_id/);
	assert.deepEqual(
		[envelopes[0].data.created_by, envelopes[1].data.rejected_by, envelopes[4].data.requested_by],
		['alice', 'alice', 'alice'],
	);
});
