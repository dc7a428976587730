/**
 * The `req` of a seed-003 workflow input, validated by its zod schema: a failure is a 422 ContractError
 * naming the field (`req.<path>`), kind `validation`, never retryable.
 */
import { z } from 'zod';
import { ContractError, type ErrorContextInit } from '../errors';

/** A Telegram bigint id (chat_id, tg_user_id) given as a number or a numeric string. */
export const BigIntLike = z.union([z.number().int(), z.string().regex(/^-?\d{1,19}$/, 'must be an integer')]).transform((v) => Number(v));

/** The tenant of a request (seed 003 §0.1: uuid), required. */
export const TenantId = z.string({ required_error: 'is required' }).uuid('must be a UUID');

/** A positive database id (bigserial) as a number or numeric string. */
export const DbId = z.union([z.number().int().positive(), z.string().regex(/^\d{1,19}$/, 'must be a positive integer')]).transform((v) => Number(v));

/** An optional UUID: absent, null or "" (an empty field on the canvas) all mean none. */
export const OptionalUuid = z.preprocess((v) => (v === '' ? null : v), z.string().uuid('must be a UUID').nullish()).transform((v) => v ?? null);

/** An optional Telegram bigint id: absent, null or "" mean none. */
export const OptionalBigInt = z.preprocess((v) => (v === '' ? null : v), BigIntLike.nullish()).transform((v) => v ?? null);

/**
 * @throws ContractError 422 `{ code: "VALIDATION", field: "req.<path>" }` naming the first bad field
 */
export function parseRequest<S extends z.ZodTypeAny>(schema: S, raw: unknown, where: ErrorContextInit): z.output<S> {
	const parsed = schema.safeParse(typeof raw === 'string' ? safeJson(raw) : raw);
	if (parsed.success) return parsed.data;
	const issue = parsed.error.issues[0];
	const field = ['req', ...issue.path].join('.');
	throw new ContractError(`invalid request: ${field} ${issue.message}`, 422, 'validation', false, { code: 'VALIDATION', field }, { operation: 'validate', ...where });
}

function safeJson(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return text;
	}
}
