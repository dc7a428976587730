/**
 * The named factories of ContractError (nodes/shared/errors.ts): each gives the status code, kind and
 * retryable it documents, passes details, where and cause through as the constructor does, and redacts
 * the remembered secrets the same way.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from '@jest/globals';
import { ContractError } from '../../nodes/shared/errors';
import { REDACTED, rememberSecrets } from '../../nodes/shared/redact';

type Fixed =
	| 'validation'
	| 'badRequest'
	| 'configuration'
	| 'notFound'
	| 'conflict'
	| 'unauthorized'
	| 'forbidden'
	| 'unavailable'
	| 'internal';

const FIXED: [Fixed, number, ContractError['kind'], boolean][] = [
	['validation', 422, 'validation', false],
	['badRequest', 400, 'validation', false],
	['configuration', 500, 'validation', false],
	['notFound', 404, 'not_found', false],
	['conflict', 409, 'conflict', false],
	['unauthorized', 401, 'auth', false],
	['forbidden', 403, 'auth', false],
	['unavailable', 503, 'db', true],
	['internal', 500, 'unknown', false],
];

/** Same class, message, status, kind, retryable, details, where and cause (own property or not). */
function assertSame(actual: ContractError, expected: ContractError): void {
	assert.ok(actual instanceof ContractError);
	assert.equal(actual.name, 'ContractError');
	assert.equal(actual.message, expected.message);
	assert.equal(actual.statusCode, expected.statusCode);
	assert.equal(actual.kind, expected.kind);
	assert.equal(actual.retryable, expected.retryable);
	assert.deepEqual(actual.details, expected.details);
	assert.deepEqual(actual.where, expected.where);
	assert.equal('cause' in actual, 'cause' in expected);
	assert.deepEqual(actual.cause, expected.cause);
}

test('fixed factories: status, kind and retryable as documented; details, where and cause as the constructor', () => {
	const cause = new Error('below');
	for (const [name, status, kind, retryable] of FIXED) {
		const e = ContractError[name]('m', { code: 'X', field: 'f' }, { operation: 'select', table: 's.t' }, { cause });
		assertSame(
			e,
			new ContractError(
				'm',
				status,
				kind,
				retryable,
				{ code: 'X', field: 'f' },
				{ operation: 'select', table: 's.t' },
				{ cause },
			),
		);
		// defaults: details {}, where {}, no cause
		assertSame(ContractError[name]('m'), new ContractError('m', status, kind, retryable));
		assert.deepEqual(ContractError[name]('m').details, {});
		assert.equal('cause' in ContractError[name]('m'), false, name);
	}
});

test('upstream: the status and retryable given; rate_limit only when rateLimited; the option itself never reaches the error', () => {
	const cause = new Error('socket hang up');
	assertSame(
		ContractError.upstream('u', 502, true, { code: 'FETCH_FAILED' }, { operation: 'fetch' }),
		new ContractError('u', 502, 'upstream', true, { code: 'FETCH_FAILED' }, { operation: 'fetch' }),
	);
	assertSame(ContractError.upstream('u', 413, false), new ContractError('u', 413, 'upstream', false));
	assertSame(
		ContractError.upstream('u', 400, false, {}, {}, { rateLimited: false }),
		new ContractError('u', 400, 'upstream', false),
	);
	assertSame(
		ContractError.upstream('u', 502, true, {}, {}, { rateLimited: true }),
		new ContractError('u', 502, 'rate_limit', true),
	);
	assertSame(
		ContractError.upstream('u', 502, false, {}, {}, { cause }),
		new ContractError('u', 502, 'upstream', false, {}, {}, { cause }),
	);
	assert.equal('cause' in ContractError.upstream('u', 502, true, {}, {}, { rateLimited: true }), false);
});

test('db: 500 not retryable by default, retryable when asked, cause kept', () => {
	const cause = new Error('pg');
	assertSame(
		ContractError.db('d', { code: 'NO_RESULT' }, { operation: 'select' }),
		new ContractError('d', 500, 'db', false, { code: 'NO_RESULT' }, { operation: 'select' }),
	);
	assertSame(ContractError.db('d', {}, {}, { retryable: true }), new ContractError('d', 500, 'db', true, {}, {}));
	assertSame(ContractError.db('d', {}, {}, { cause }), new ContractError('d', 500, 'db', false, {}, {}, { cause }));
	assert.equal('cause' in ContractError.db('d', {}, {}, { retryable: true }), false);
});

test('every factory redacts the remembered secrets from the message, the details and the cause, as the constructor does', () => {
	const token = `987654321:AA${randomBytes(20).toString('base64url')}`;
	rememberSecrets([token]);
	const made = [
		...FIXED.map(([name]) =>
			ContractError[name](
				`bad ${token}`,
				{ url: `https://x/bot${token}/getMe` },
				{},
				{ cause: new Error(`inner ${token}`) },
			),
		),
		ContractError.upstream(
			`bad ${token}`,
			502,
			true,
			{ url: `https://x/bot${token}/getMe` },
			{},
			{ cause: new Error(`inner ${token}`), rateLimited: true },
		),
		ContractError.db(
			`bad ${token}`,
			{ url: `https://x/bot${token}/getMe` },
			{},
			{ cause: new Error(`inner ${token}`), retryable: true },
		),
	];
	for (const e of made) {
		assert.equal(e.message, `bad ${REDACTED}`);
		assert.deepEqual(e.details, { url: `https://x/bot${REDACTED}/getMe` });
		assert.equal((e.cause as Error).message, `inner ${REDACTED}`);
		assert.ok(!JSON.stringify({ m: e.message, d: e.details, c: (e.cause as Error).message }).includes(token));
	}
});
