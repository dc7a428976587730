/**
 * The `req` of a seed-003 workflow input, validated by its zod schema through the shared `parseInput`
 * (./input.ts, prefix `req`): a failure is a 422 ContractError naming the field (`req.<path>`), kind
 * `validation`, never retryable.
 */
import { z } from 'zod';
import type { ErrorContextInit } from '../errors';
import { parseInput } from './input';
import { Int8Id, SafeDbId } from './ids';

export { safeJson } from './input';
export { Int8Id, PositiveInt8Id, SafeDbId, sqlId, sameId, type ExactId } from './ids';

/**
 * A Telegram bigint id (chat_id, tg_user_id…), exact (ids.ts): a safe-integer number or a decimal string
 * within int8; a number beyond 2^53 − 1 (already rounded) is refused. Output: number when safe, else string.
 */
export const BigIntLike = Int8Id;

/** The tenant of a request (seed 003 §0.1: uuid), required. */
export const TenantId = z.string({ required_error: 'is required' }).uuid('must be a UUID');

/** A positive database id (bigserial) as an exact number (ids.ts SafeDbId): 1 … 2^53 − 1, else 422. */
export const DbId = SafeDbId;

/** An optional UUID: absent, null or "" (an empty field on the canvas) all mean none. */
export const OptionalUuid = z
	.preprocess((v) => (v === '' ? null : v), z.string().uuid('must be a UUID').nullish())
	.transform((v) => v ?? null);

/** An optional Telegram bigint id: absent, null or "" mean none. */
export const OptionalBigInt = z
	.preprocess((v) => (v === '' ? null : v), BigIntLike.nullish())
	.transform((v) => v ?? null);

/**
 * Knowledge Bot's name for the shared input parser: `parseInput(schema, raw, { prefix: 'req', where })` (./input.ts).
 * `raw` is the `req` (an object, or JSON text parsed first); returns the schema's output.
 * @throws ContractError 422 `invalid request: req.<path> <message>`, details `{ code: "VALIDATION", field:
 *         "req.<path>" }` naming the first bad field, context `{ operation: 'validate', ...where }`
 */
export function parseRequest<S extends z.ZodTypeAny>(schema: S, raw: unknown, where: ErrorContextInit): z.output<S> {
	return parseInput(schema, raw, { prefix: 'req', where });
}
