/**
 * Property: whatever a caller puts in the verified JWT payload and the body (hostile strings, ids,
 * deep objects), the Identity resolver either returns the claim as a string or refuses with a
 * ContractError 401/403 of kind auth — never another exception — and the refusal never carries the
 * Authorization header, the body's user_id or another body value.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { ContractError } from '../../nodes/shared/errors';
import { resolveUserId } from '../../nodes/shared/node/identity';
import { hostileId, hostileString, propertyParams } from '../helpers/property';

/** A random secret-looking value (24 base64url characters, never a substring of any fixed text here). */
const secretValue = fc
	.uint8Array({ minLength: 18, maxLength: 18 })
	.map((bytes) => Buffer.from(bytes).toString('base64url'));

const claimValue = fc.oneof(
	hostileString(300),
	hostileId(),
	fc.string({ minLength: 250, maxLength: 260 }),
	fc.integer(),
	fc.anything({ maxDepth: 4, withBigInt: true, withNullPrototype: true, withObjectString: true }),
	fc.letrec((tie) => ({
		deep: fc.oneof(
			{ depthSize: 'small' },
			fc.string(),
			fc.dictionary(fc.string({ maxLength: 4 }), tie('deep'), { maxKeys: 3 }),
		),
	})).deep,
);

const claimName = fc.constantFrom('sub', 'uid', 'user.id', 'constructor', '__proto__', 'toString');

test('the resolver returns the claim as a string or throws 401/403 auth; the error carries no header, body or token secret', () => {
	fc.assert(
		fc.property(
			claimName,
			claimValue,
			fc.oneof(fc.constant('own'), fc.constant('absent'), fc.constant('not-an-object')),
			fc.oneof(fc.constant('same'), fc.constant('secret'), fc.constant('absent'), claimValue),
			secretValue,
			secretValue,
			fc.anything({ maxDepth: 2 }),
			(claim, value, payloadShape, bodyUserChoice, headerSecret, bodySecret, notAnObject) => {
				const payload: Record<string, unknown> = { iat: 1, jti: `jti-${bodySecret}` };
				if (payloadShape === 'own')
					Object.defineProperty(payload, claim, { value, enumerable: true, configurable: true, writable: true });
				const bodyUser =
					bodyUserChoice === 'same'
						? value
						: bodyUserChoice === 'secret'
							? `user-${bodySecret}`
							: bodyUserChoice === 'absent'
								? undefined
								: bodyUserChoice;
				const json: Record<string, unknown> = {
					headers: { authorization: `Bearer ${headerSecret}`, 'x-api-key': headerSecret },
					body: { user_id: bodyUser, password: bodySecret, query: `q ${bodySecret}` },
					jwtPayload:
						payloadShape === 'not-an-object'
							? typeof notAnObject === 'object' && notAnObject !== null && !Array.isArray(notAnObject)
								? 'x'
								: notAnObject
							: payload,
				};
				let result: unknown;
				try {
					result = resolveUserId({ identity: 'token', identity_claim: claim }, json);
				} catch (error) {
					assert.ok(error instanceof ContractError, `only ContractErrors are thrown, got ${String(error)}`);
					assert.ok(error.statusCode === 401 || error.statusCode === 403, `401 or 403, got ${error.statusCode}`);
					assert.equal(error.kind, 'auth');
					assert.equal(error.retryable, false);
					const noPayload = payloadShape === 'not-an-object' && (notAnObject === undefined || notAnObject === null);
					assert.equal(
						error.statusCode === 401,
						noPayload,
						'401 exactly when no payload was verified (a non-object payload is a 403)',
					);
					const expected =
						error.statusCode === 401 ? ['UNAUTHENTICATED'] : ['IDENTITY_CLAIM_INVALID', 'IDENTITY_MISMATCH'];
					assert.ok(expected.includes(error.details.code as string), String(error.details.code));
					const text = JSON.stringify({ message: error.message, details: error.details, stack: error.stack });
					for (const secret of [headerSecret, bodySecret])
						assert.ok(!text.includes(secret), 'no header or body secret in the error');
					return;
				}
				assert.equal(typeof result, 'string');
				assert.equal(payloadShape, 'own', 'an identity only from an own claim of a payload object');
				assert.ok(
					result === value || (typeof value === 'number' && result === String(value)),
					'the identity is the claim',
				);
				assert.ok((result as string).length >= 1 && (result as string).length <= 256);
				assert.equal(
					result,
					(result as string).trim(),
					'the identity is exactly what the operations store (they trim)',
				);
				assert.ok(
					bodyUser === undefined || bodyUser === null || String(bodyUser) === result,
					'a differing body user_id never passes',
				);
			},
		),
		propertyParams('identity resolver'),
	);
});
