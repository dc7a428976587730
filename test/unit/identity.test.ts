/**
 * The Identity resolver (nodes/shared/node/identity.ts): which user an operation acts as, from the
 * verified JWT payload n8n's Webhook node puts on its item (`json.jwtPayload`) or from the User ID field,
 * and the 401/403 refusals (kind auth, not retryable) with the codes of the issue-11 contract.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import type { IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import { ContractError } from '../../nodes/shared/errors';
import { fieldsOf } from '../../nodes/shared/node/fields';
import {
	identityFields,
	readOperationInput,
	resolveUserId,
	type IdentityParams,
} from '../../nodes/shared/node/identity';

function refusal(params: IdentityParams, json: Record<string, unknown>): ContractError {
	try {
		const value = resolveUserId(params, json);
		assert.fail(`expected a refusal, got ${JSON.stringify(value)}`);
	} catch (error) {
		assert.ok(error instanceof ContractError, `a ContractError, not ${String(error)}`);
		return error;
	}
}

function assertAuth(error: ContractError, status: number, code: string) {
	assert.deepEqual([error.statusCode, error.kind, error.retryable, error.details.code], [status, 'auth', false, code]);
}

test('token (the default): the sub claim of json.jwtPayload is the user; an integer claim becomes its decimal string', () => {
	assert.equal(resolveUserId({}, { jwtPayload: { sub: 'alice', iat: 1 } }), 'alice');
	assert.equal(resolveUserId({ identity: 'token' }, { jwtPayload: { sub: 'alice' }, body: { query: 'q' } }), 'alice');
	assert.equal(resolveUserId({}, { jwtPayload: { sub: 42 } }), '42');
	assert.equal(resolveUserId({}, { jwtPayload: { sub: 'x'.repeat(256) } }), 'x'.repeat(256));
	assert.equal(
		resolveUserId({}, { jwtPayload: { sub: 'emoji 😀' } }),
		'emoji 😀',
		'a surrogate pair is a valid character',
	);
});

test('a custom claim name reads that claim (not sub); missing there → 403 naming it', () => {
	assert.equal(
		resolveUserId({ identity: 'token', identity_claim: 'uid' }, { jwtPayload: { sub: 'service', uid: 'bob' } }),
		'bob',
	);
	assert.equal(
		resolveUserId({ identity_claim: ' uid ' }, { jwtPayload: { uid: 'bob' } }),
		'bob',
		'the claim name is trimmed',
	);
	const missing = refusal({ identity_claim: 'uid' }, { jwtPayload: { sub: 'alice' } });
	assertAuth(missing, 403, 'IDENTITY_CLAIM_INVALID');
	assert.equal(missing.details.claim, 'uid');
	assert.match(missing.message, /"uid" is missing/);
});

test('no jwtPayload on the item → 401 UNAUTHENTICATED saying how to fix it', () => {
	for (const json of [
		{},
		{ jwtPayload: null },
		{ body: { user_id: 'alice' } },
		{ headers: { authorization: 'Bearer x' } },
	]) {
		const error = refusal({}, json);
		assertAuth(error, 401, 'UNAUTHENTICATED');
		assert.match(error.message, /set the Webhook node's Authentication to JWT Auth, or Identity to User ID Field/);
	}
});

test('a verified payload that is not a JSON object (jsonwebtoken returns a string payload as is) → 403 IDENTITY_CLAIM_INVALID', () => {
	for (const json of [{ jwtPayload: 'alice' }, { jwtPayload: ['alice'] }, { jwtPayload: 42 }]) {
		const error = refusal({}, json);
		assertAuth(error, 403, 'IDENTITY_CLAIM_INVALID');
		assert.match(error.message, /payload is not a JSON object/);
	}
});

test('an unusable claim → 403 IDENTITY_CLAIM_INVALID (missing, blank, not a string or safe integer, too long, NUL, lone surrogate)', () => {
	const bad: [unknown, RegExp][] = [
		[undefined, /is missing/],
		[null, /is missing/],
		['', /not a non-empty string/],
		['   ', /not a non-empty string/],
		[' alice', /leading or trailing white space/],
		['alice\u00a0', /leading or trailing white space/],
		['\ufeffalice', /leading or trailing white space/],
		['alice\n', /leading or trailing white space/],
		[1.5, /not a non-empty string or an integer/],
		[2 ** 53, /not a non-empty string or an integer/],
		[Number.NaN, /not a non-empty string or an integer/],
		[true, /not a non-empty string or an integer/],
		[{ id: 'alice' }, /not a non-empty string or an integer/],
		[['alice'], /not a non-empty string or an integer/],
		['x'.repeat(257), /longer than 256 characters/],
		['ali\u0000ce', /NUL or a lone surrogate/],
		['ali\ud800ce', /NUL or a lone surrogate/],
		['\udc00', /NUL or a lone surrogate/],
	];
	for (const [sub, reason] of bad) {
		const error = refusal({}, { jwtPayload: { sub } });
		assertAuth(error, 403, 'IDENTITY_CLAIM_INVALID');
		assert.match(error.message, reason, String(sub));
		assert.equal(error.details.claim, 'sub');
	}
	// A claim is an own property of the payload, never one inherited from Object.prototype.
	for (const claim of ['constructor', 'toString', '__proto__'])
		assertAuth(refusal({ identity_claim: claim }, { jwtPayload: { sub: 'a' } }), 403, 'IDENTITY_CLAIM_INVALID');
});

test('a body user_id other than the token user → 403 IDENTITY_MISMATCH; equal (number vs its string) or absent passes', () => {
	const ok: [unknown, unknown][] = [
		['alice', 'alice'],
		['42', 42],
		[42, '42'],
		[42, 42],
		['alice', undefined],
		['alice', null],
	];
	for (const [sub, bodyUser] of ok)
		assert.equal(resolveUserId({}, { jwtPayload: { sub }, body: { user_id: bodyUser } }), String(sub));
	// Only an object body carries a user_id.
	assert.equal(resolveUserId({}, { jwtPayload: { sub: 'alice' }, body: 'user_id=bob' }), 'alice');
	assert.equal(
		resolveUserId({}, { jwtPayload: { sub: 'alice' }, user_id: 'bob' }),
		'alice',
		'a top-level user_id is not the body',
	);
	const differ: [unknown, unknown][] = [
		['alice', 'bob'],
		['alice', 'Alice'],
		['alice', ' alice'],
		['042', 42],
		['42', 42.5],
		['true', true],
		['alice', ['alice']],
		['alice', { id: 'alice' }],
		['42', 42n],
	];
	for (const [sub, bodyUser] of differ) {
		const error = refusal({}, { jwtPayload: { sub }, body: { user_id: bodyUser } });
		assertAuth(error, 403, 'IDENTITY_MISMATCH');
		assert.deepEqual(error.details, { code: 'IDENTITY_MISMATCH', claim: 'sub', field: 'body.user_id' });
	}
	const named = refusal({}, { jwtPayload: { sub: 'alice' }, body: { user_id: 'mallory-7f3a' } });
	assert.ok(
		!JSON.stringify({ message: named.message, details: named.details }).includes('mallory-7f3a'),
		'the body value is not echoed',
	);
});

test('field: the User ID field as given, no token needed and no body check; an unknown Identity or a bad claim name → 422', () => {
	assert.equal(
		resolveUserId({ identity: 'field', user_id: 'carol' }, { jwtPayload: { sub: 'alice' }, body: { user_id: 'dave' } }),
		'carol',
	);
	assert.equal(resolveUserId({ identity: 'field', user_id: 7 }, {}), 7);
	assert.equal(resolveUserId({ identity: 'field' }, {}), undefined, 'a missing User ID is left to the operation (422)');
	for (const params of [
		{ identity: 'header' },
		{ identity: 1 },
		{ identity_claim: '' },
		{ identity_claim: 5 },
		{ identity_claim: 'c'.repeat(257) },
	] as IdentityParams[]) {
		const error = refusal(params, { jwtPayload: { sub: 'alice' } });
		assert.deepEqual([error.statusCode, error.kind, error.details.code], [422, 'validation', 'VALIDATION']);
	}
});

/** Fields of a lock-like operation: atom id, the Identity fields, a revision. */
const FIELDS: INodeProperties[] = fieldsOf({ resource: 'atom', operation: 'lock' }, [
	{ displayName: 'Atom ID', name: 'atomId', description: 'Key' },
	...identityFields('Who locks'),
]);

/** getNodeParameter as n8n 2.4.8 has it: an absent parameter without a fallback throws. */
function nodeContext(params: Record<string, unknown>): IExecuteFunctions {
	return {
		getNodeParameter: (name: string, _i: number, fallback?: unknown) => {
			const value = name in params ? params[name] : fallback;
			if (value === undefined) throw new Error(`Could not get parameter ${name}`);
			return value;
		},
	} as unknown as IExecuteFunctions;
}

test('the three fields: Identity (default token), Identity Claim shown for token only, User ID shown for field only', () => {
	const [identity, claim, userId] = FIELDS.slice(1);
	assert.deepEqual([identity.name, identity.type, identity.default], ['identity', 'options', 'token']);
	assert.deepEqual(
		(identity.options as { value: string }[]).map((o) => o.value),
		['token', 'field'],
	);
	assert.deepEqual(claim.displayOptions?.show, { identity: ['token'], resource: ['atom'], operation: ['lock'] });
	assert.equal(claim.default, 'sub');
	assert.deepEqual(userId.displayOptions?.show, { identity: ['field'], resource: ['atom'], operation: ['lock'] });
	assert.equal(userId.default, '={{ ($json.body || $json).user_id }}');
});

test('readOperationInput: reads only the shown fields (n8n drops hidden ones) and replaces them by user_id', () => {
	// token mode: userId is hidden, so n8n has no such parameter; reading it would throw
	const token = readOperationInput(nodeContext({ atomId: 'a1', identity: 'token', identityClaim: 'sub' }), 0, FIELDS, {
		jwtPayload: { sub: 'alice' },
	});
	assert.deepEqual(token, { atom_id: 'a1', user_id: 'alice' });
	const field = readOperationInput(nodeContext({ atomId: 'a1', identity: 'field', userId: 'carol' }), 0, FIELDS, {
		jwtPayload: { sub: 'alice' },
	});
	assert.deepEqual(field, { atom_id: 'a1', user_id: 'carol' });
	// an empty Identity Claim field reads as the default claim
	assert.deepEqual(
		readOperationInput(nodeContext({ atomId: 'a1', identity: 'token', identityClaim: '' }), 0, FIELDS, {
			jwtPayload: { sub: 'alice' },
		}).user_id,
		'alice',
	);
	// an operation whose identity is its author (proposal create): the Author field, body.author checked
	const AUTHOR = fieldsOf({ resource: 'proposal', operation: 'create' }, [
		{ displayName: 'Comment', name: 'comment', description: 'c' },
		...identityFields('Who proposes', 'author'),
	]);
	assert.deepEqual(
		readOperationInput(nodeContext({ comment: 'c', identity: 'token', identityClaim: 'sub' }), 0, AUTHOR, {
			jwtPayload: { sub: 'alice' },
		}),
		{ comment: 'c', author: 'alice' },
	);
	assert.deepEqual(
		readOperationInput(nodeContext({ comment: 'c', identity: 'field', author: 'carol' }), 0, AUTHOR, {}),
		{ comment: 'c', author: 'carol' },
	);
	let mismatch: unknown;
	try {
		readOperationInput(nodeContext({ comment: 'c', identity: 'token', identityClaim: 'sub' }), 0, AUTHOR, {
			jwtPayload: { sub: 'alice' },
			body: { author: 'bob', user_id: 'bob' },
		});
	} catch (error) {
		mismatch = error;
	}
	assert.ok(mismatch instanceof ContractError);
	assertAuth(mismatch, 403, 'IDENTITY_MISMATCH');
	assert.equal(mismatch.details.field, 'body.author');
	const plain = fieldsOf({ resource: 'atom', operation: 'unlockExpired' }, [
		{ displayName: 'Atom ID', name: 'atomId', description: 'Key' },
	]);
	assert.deepEqual(
		readOperationInput(nodeContext({ atomId: 'a1' }), 0, plain, {}),
		{ atom_id: 'a1' },
		'no Identity fields: input unchanged, no token needed',
	);
});
