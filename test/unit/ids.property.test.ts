/**
 * The exact-id parser of the contracts (nodes/shared/contracts/ids.ts), property-based (PROPERTY_RUNS,
 * default 10,000): for any value it never throws; it accepts exactly the values that name one int8 integer
 * exactly (safe-integer numbers, decimal strings, bigints in range) and returns that integer; it refuses
 * every rounded number; through a request schema the 422 names the field.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { z } from 'zod';
import { INT8_MAX, INT8_MIN, Int8Id, parseExactId, PositiveInt8Id, SafeDbId } from '../../nodes/shared/contracts/ids';
import { parseRequest } from '../../nodes/shared/contracts/request';
import { ContractError } from '../../nodes/shared/errors';
import { hostileId, propertyParams } from '../helpers/property';

/** The integer a value names exactly, or null (a JS number beyond 2^53 − 1 names none: it was rounded). */
function intended(value: unknown): bigint | null {
	if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : null;
	if (typeof value === 'bigint') return value;
	if (typeof value === 'string' && /^-?[0-9]{1,20}$/.test(value)) return BigInt(value);
	return null;
}

const around = (edge: bigint) => fc.bigInt({ min: edge - 1000n, max: edge + 1000n });
const idValues: fc.Arbitrary<unknown> = fc.oneof(
	hostileId(),
	fc.bigInt({ min: INT8_MIN - 10n, max: INT8_MAX + 10n }),
	fc
		.oneof(around(INT8_MAX), around(INT8_MIN), around(2n ** 53n), around(-(2n ** 53n)), fc.bigInt())
		.chain((b) =>
			fc.constantFrom<unknown>(b, b.toString(), Number(b), `${b}.0`, ` ${b}`, `${b}\u0000`, `+${b}`, `0${b}`),
		),
	fc.double(),
	fc.integer(),
	fc.maxSafeInteger(),
	fc.anything(),
);

test('property: parseExactId never throws, accepts exactly the exact in-range integers, and returns them unrounded', () => {
	fc.assert(
		fc.property(idValues, fc.boolean(), (value, positive) => {
			const parsed = parseExactId(value, positive);
			const want = intended(value);
			const inRange = want !== null && want >= (positive ? 1n : INT8_MIN) && want <= INT8_MAX;
			assert.equal(parsed.ok, inRange, `${typeof value} ${fc.stringify(value)}`);
			if (parsed.ok) {
				assert.equal(BigInt(parsed.value), want, 'the same integer, never a rounded neighbour');
				if (typeof parsed.value === 'number') assert.ok(Number.isSafeInteger(parsed.value));
				else
					assert.ok(
						!Number.isSafeInteger(Number(parsed.value)) && parsed.value === want!.toString(),
						'a string only beyond 2^53 - 1, canonical',
					);
			} else {
				assert.ok(parsed.message.length > 0);
				if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value))
					assert.match(parsed.message, /send it as a decimal string/);
			}
		}),
		propertyParams('parseExactId'),
	);
});

test('property: through a request schema every refusal is a 422 naming the field, never another error', () => {
	const Schema = z.object({
		tg_user_id: Int8Id,
		chat_id: Int8Id.nullish(),
		document_id: SafeDbId.optional(),
		big: PositiveInt8Id.optional(),
	});
	fc.assert(
		fc.property(
			fc.record(
				{ tg_user_id: idValues, chat_id: idValues, document_id: idValues, big: idValues },
				{ requiredKeys: [] },
			),
			(raw) => {
				let result: unknown;
				try {
					result = parseRequest(Schema, raw, { table: 't' });
				} catch (error) {
					assert.ok(error instanceof ContractError, `not a ContractError: ${fc.stringify(error)}`);
					assert.equal(error.statusCode, 422);
					assert.match(String(error.details.field), /^req\.(tg_user_id|chat_id|document_id|big)$/);
					const field = String(error.details.field).slice(4) as keyof typeof raw;
					assert.ok(error.message.startsWith(`invalid request: req.${field} `));
					return;
				}
				const ok = result as Record<string, unknown>;
				assert.equal(BigInt(ok.tg_user_id as string), intended(raw.tg_user_id));
				if (ok.chat_id !== undefined && ok.chat_id !== null)
					assert.equal(BigInt(ok.chat_id as string), intended(raw.chat_id));
				if (ok.document_id !== undefined)
					assert.ok(Number.isSafeInteger(ok.document_id) && (ok.document_id as number) > 0);
			},
		),
		propertyParams('id schemas in a request'),
	);
});

test('examples: the rounded 2^53 + 1, int8 edges, and what a 422 says', () => {
	assert.deepEqual(parseExactId('9007199254740993'), { ok: true, value: '9007199254740993' });
	assert.equal(parseExactId(9007199254740993).ok, false);
	assert.deepEqual(parseExactId('9223372036854775807'), { ok: true, value: '9223372036854775807' });
	assert.deepEqual(parseExactId('-9223372036854775808'), { ok: true, value: '-9223372036854775808' });
	assert.equal(parseExactId('9223372036854775808').ok, false);
	assert.deepEqual(parseExactId('-42'), { ok: true, value: -42 });
	assert.deepEqual(parseExactId(2n), { ok: true, value: 2 });
	assert.equal(parseExactId('0', true).ok, false);
	assert.throws(
		() => parseRequest(z.object({ tg_user_id: Int8Id }), { tg_user_id: 9007199254740993 }, { table: 't' }),
		/req\.tg_user_id is beyond 2\^53 - 1 .* send it as a decimal string/,
	);
	assert.throws(
		() => parseRequest(z.object({ tg_user_id: Int8Id }), {}, { table: 't' }),
		/req\.tg_user_id is required/,
	);
});
