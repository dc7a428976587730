/**
 * Exact integer ids of the contracts (seed 003 §0.1: Telegram `chat_id`, `tg_user_id`, `message_id` and
 * database ids are PostgreSQL `bigint`, int8). One parser for every node, so an id is never rounded:
 *
 *  - a JS number is accepted only when `Number.isSafeInteger` (|n| ≤ 2^53 − 1). Any integer beyond that
 *    was already rounded when it was parsed from JSON (9007199254740993 arrives as …992), so it is
 *    refused, asking for the id as a decimal string;
 *  - a decimal string (`-?[0-9]+`, at most 20 digits, no spaces, signs, exponents or fractions) and a
 *    `bigint` are exact;
 *  - the value must lie in the id's range: int8 (−2^63 … 2^63 − 1), or 1 … 2^63 − 1 for a positive id.
 *
 * The parsed id (`ExactId`) is a JS number when it is a safe integer (so contracts keep numbers for the ids
 * Telegram actually uses: they fit in 52 bits) and the canonical decimal string otherwise. Pass it to SQL
 * with `sqlId` (a string, cast `::bigint`), never through `Number()`.
 */
import { z } from 'zod';

/** PostgreSQL int8 (bigint) bounds: every Telegram and database id must fit them (seed 003 §0.1). */
export const INT8_MIN = -(2n ** 63n);
export const INT8_MAX = 2n ** 63n - 1n;

/** An exact id: a safe-integer number, or the canonical decimal string of an id beyond 2^53 − 1. */
export type ExactId = number | string;

export type IdParse = { ok: true; value: ExactId } | { ok: false; message: string };

const DECIMAL = /^-?[0-9]{1,20}$/;

/**
 * Parses one id exactly. Never throws.
 * @param value what the request carried
 * @param positive true for database ids (bigserial: 1 … 2^63 − 1); else the whole int8 range
 * @returns the id, or the reason it is refused (a short phrase, to follow the field name)
 */
export function parseExactId(value: unknown, positive = false): IdParse {
	let big: bigint;
	if (typeof value === 'number') {
		if (!Number.isFinite(value) || !Number.isInteger(value)) return { ok: false, message: 'must be an integer' };
		if (!Number.isSafeInteger(value))
			return {
				ok: false,
				message: 'is beyond 2^53 - 1 as a JSON number, so it was already rounded: send it as a decimal string',
			};
		big = BigInt(value);
	} else if (typeof value === 'bigint') {
		big = value;
	} else if (typeof value === 'string') {
		if (!DECIMAL.test(value)) return { ok: false, message: 'must be an integer (a JSON number or a decimal string)' };
		big = BigInt(value);
	} else if (value === undefined) {
		return { ok: false, message: 'is required' };
	} else {
		return { ok: false, message: 'must be an integer (a JSON number or a decimal string)' };
	}
	const min = positive ? 1n : INT8_MIN;
	if (big < min || big > INT8_MAX)
		return {
			ok: false,
			message: positive ? 'must be between 1 and 2^63 - 1' : 'must be between -2^63 and 2^63 - 1 (int8)',
		};
	const asNumber = Number(big);
	return { ok: true, value: Number.isSafeInteger(asNumber) ? asNumber : big.toString() };
}

function idSchema(positive: boolean) {
	return z.any().transform((value: unknown, refinement): ExactId => {
		const parsed = parseExactId(value, positive);
		if (parsed.ok) return parsed.value;
		refinement.addIssue({ code: z.ZodIssueCode.custom, message: parsed.message });
		return z.NEVER;
	});
}

/** A Telegram id (chat_id, tg_user_id, message_id…): any int8, exact. */
export const Int8Id = idSchema(false);

/** A database id (bigserial: job, document, message version…): 1 … 2^63 − 1, exact. */
export const PositiveInt8Id = idSchema(true);

/**
 * A database id (bigserial) as a JS number: 1 … 2^53 − 1, from a safe number or a decimal string. A
 * sequence never reaches 2^53 in practice, so the number is exact; anything beyond is refused (422), never
 * rounded. For the whole int8 range use `PositiveInt8Id`.
 */
export const SafeDbId = z.any().transform((value: unknown, refinement): number => {
	const parsed = parseExactId(value, true);
	if (parsed.ok && typeof parsed.value === 'number') return parsed.value;
	refinement.addIssue({
		code: z.ZodIssueCode.custom,
		message: parsed.ok ? 'must be at most 2^53 - 1' : parsed.message,
	});
	return z.NEVER;
});

/**
 * An integer of a Telegram object as Telegram sends it (a JSON number: ids have at most 52 significant
 * bits, dates are Unix seconds): a safe integer, else refused — beyond 2^53 − 1 it was rounded in parsing.
 */
export const TelegramInt = z
	.number({ required_error: 'is required', invalid_type_error: 'must be an integer' })
	.int('must be an integer')
	.refine(Number.isSafeInteger, 'is beyond 2^53 - 1, so it was rounded when parsed: not a Telegram id');

/** The id as a SQL parameter: a decimal string, for `$n::bigint` (or a bigint column). */
export function sqlId(id: ExactId): string;
export function sqlId(id: ExactId | null): string | null;
export function sqlId(id: ExactId | null): string | null {
	return id === null ? null : String(id);
}

/** Two exact ids name the same integer. */
export function sameId(a: ExactId, b: ExactId): boolean {
	return String(a) === String(b);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * True when `value` is a UUID string: 8-4-4-4-12 hex digits, either case, any version (nil included), no
 * braces or spaces. The one UUID check of the nodes outside zod schemas (which use `z.string().uuid()`,
 * the same form): correlation ids, run ids, capture and claim tokens.
 */
export function isUuid(value: unknown): value is string {
	return typeof value === 'string' && UUID.test(value);
}
