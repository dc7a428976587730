/**
 * ctx.message_id has one meaning (issue 16, nodes/shared/contracts/ctx.ts `CtxId`): a JS number when the
 * id is a safe integer, else the canonical decimal string of an int8 beyond 2^53 − 1. Telegram Ingest
 * sets it with `ctxIdOf` from the exact decimal text it reads from the raw body (migration 015 keeps ids
 * beyond 2^53 exactly); the `Ctx` schema accepts exactly what `ctxIdOf` gives and nothing else. Ids are
 * drawn around 2^31 (the Bot API's message_id range), 2^32, 2^53 and the int8 limits, on both signs.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { Ctx, CtxId, ctxIdOf } from '../../nodes/shared/contracts/ctx';
import { INT8_MAX, INT8_MIN } from '../../nodes/shared/contracts/ids';
import { hostileId, propertyParams } from '../helpers/property';

const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER); // 2^53 − 1

/** Integers near the edges that matter (±2^31, ±2^32, ±2^53, the int8 limits, 0), and any in between. */
function nearEdges(spread = 64n): fc.Arbitrary<bigint> {
	const edge = fc.constantFrom(0n, 2n ** 31n, 2n ** 32n, 2n ** 53n, 2n ** 63n, -(2n ** 31n), -(2n ** 53n), INT8_MIN);
	return fc.oneof(
		{ weight: 3, arbitrary: fc.tuple(edge, fc.bigInt({ min: -spread, max: spread })).map(([e, d]) => e + d) },
		{ weight: 1, arbitrary: fc.bigInt({ min: INT8_MIN - spread, max: INT8_MAX + spread }) },
	);
}

const inInt8 = (n: bigint): boolean => n >= INT8_MIN && n <= INT8_MAX;
const isSafe = (n: bigint): boolean => n >= -SAFE_MAX && n <= SAFE_MAX;

/** Whether the Ctx schema accepts `{ message_id }` and gives it back unchanged. */
function ctxAccepts(message_id: unknown): boolean {
	const parsed = Ctx.safeParse({ message_id });
	if (parsed.success) assert.equal(parsed.data.message_id, message_id, 'the schema passes the id through as it is');
	return parsed.success;
}

test('property: every int8 Telegram Ingest reads becomes a ctx.message_id the Ctx schema accepts, exact, a number iff safe', () => {
	fc.assert(
		fc.property(nearEdges().filter(inInt8), (n) => {
			const text = n.toString(); // body.ts's ExactKeys: the canonical decimal text of the token
			const value = ctxIdOf(text);
			assert.ok(value !== null);
			assert.equal(typeof value, isSafe(n) ? 'number' : 'string', `${text} → ${typeof value}`);
			assert.equal(BigInt(value), n, 'exact: no rounding');
			assert.ok(ctxAccepts(value), `Ctx accepts ${JSON.stringify(value)}`);
			assert.ok(CtxId.safeParse(value).success);
		}),
		propertyParams('ctx.message_id from ingestion'),
	);
});

test('property: the Ctx schema refuses every other form of the same id (one value, one form)', () => {
	fc.assert(
		fc.property(nearEdges(), (n) => {
			const text = n.toString();
			const digits = text.replace('-', '');
			const sign = n < 0n ? '-' : '';
			const others: unknown[] = [
				`${sign}0${digits}`, // a leading zero
				`${text}.0`,
				`${text} `,
				` ${text}`,
				`${text}e0`,
				n >= 0n ? `+${text}` : `- ${digits}`,
			];
			// a safe id as a string, an unsafe one as a (rounded) number
			others.push(isSafe(n) ? text : Number(n));
			if (!inInt8(n)) others.push(text); // beyond int8: no form at all
			for (const other of others) assert.equal(ctxAccepts(other), false, `refuses ${JSON.stringify(other)}`);
			if (inInt8(n)) assert.ok(ctxAccepts(ctxIdOf(text)));
		}),
		propertyParams('ctx.message_id other forms'),
	);
});

test('property: whatever the schema accepts as message_id is exactly ctxIdOf of its decimal text', () => {
	fc.assert(
		fc.property(fc.oneof(hostileId(), nearEdges().map(String), nearEdges().map(Number), fc.double()), (value) => {
			if (value === null || value === undefined || !ctxAccepts(value)) return;
			assert.ok(typeof value === 'number' || typeof value === 'string');
			assert.equal(ctxIdOf(BigInt(value).toString()), value);
		}),
		propertyParams('ctx.message_id accepted values'),
	);
});

test('Bot API message ids (signed 32-bit) are numbers, unchanged; null and absent stay valid', () => {
	for (const id of [1, 2 ** 31 - 1, -(2 ** 31), 0, 42]) {
		assert.equal(ctxIdOf(String(id)), id);
		assert.ok(ctxAccepts(id));
	}
	assert.equal(ctxIdOf(null), null);
	assert.ok(ctxAccepts(null));
	assert.ok(Ctx.safeParse({}).success);
	// the two sides of 2^53: the largest safe integer is a number, the next id a string
	assert.equal(ctxIdOf('9007199254740991'), 9007199254740991);
	assert.equal(ctxIdOf('9007199254740992'), '9007199254740992');
	assert.equal(ctxIdOf('-9223372036854775808'), '-9223372036854775808');
	assert.equal(ctxAccepts(9007199254740992), false);
	assert.equal(ctxAccepts(1.5), false);
	assert.equal(ctxAccepts('9223372036854775808'), false);
});
