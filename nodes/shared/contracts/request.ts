/**
 * The `req` of a seed-003 workflow input, validated by its zod schema: a failure is a 422 ContractError
 * naming the field (`req.<path>`), kind `validation`, never retryable.
 */
import { z } from 'zod';
import { ContractError, type ErrorContextInit } from '../errors';
import { Int8Id, SafeDbId } from './ids';

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
 * @throws ContractError 422 `{ code: "VALIDATION", field: "req.<path>" }` naming the first bad field
 */
export function parseRequest<S extends z.ZodTypeAny>(schema: S, raw: unknown, where: ErrorContextInit): z.output<S> {
	const parsed = schema.safeParse(typeof raw === 'string' ? safeJson(raw) : raw);
	if (parsed.success) return parsed.data;
	const issue = parsed.error.issues[0];
	const field = ['req', ...issue.path].join('.');
	throw ContractError.validation(
		`invalid request: ${field} ${issue.message}`,
		{ code: 'VALIDATION', field },
		{ operation: 'validate', ...where },
	);
}

/** `text` parsed as JSON, or `text` itself when it is not JSON (a request given as a string). Never throws. */
export function safeJson(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return text;
	}
}
