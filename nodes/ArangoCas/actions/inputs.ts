/**
 * Input schemas shared by the ArangoCAS operations (zod, parsed by the shared `parseInput` with `inCollection`:
 * a failure names the field → 422).
 * Atom ids are accepted as a key (`a1`) or as a document id of the expected collection (`atoms/a1`).
 */
import { z } from 'zod';
import type { ParseInputOptions } from '../../shared/contracts/input';

/** ArangoDB's document key alphabet (1–254 characters). */
const KEY = /^[A-Za-z0-9_\-:.@()+,=;$!*'%]{1,254}$/;

/** A key of `collection`, given as `key` or `collection/key`; returns the bare key. */
export function keyIn(collection: string) {
	return z
		.string({ required_error: 'is required', invalid_type_error: 'must be a string' })
		.trim()
		.transform((value, refinement) => {
			const slash = value.indexOf('/');
			if (slash >= 0 && value.slice(0, slash) !== collection) {
				refinement.addIssue({ code: z.ZodIssueCode.custom, message: `must be a key or a ${collection}/<key> id` });
				return z.NEVER;
			}
			const key = slash >= 0 ? value.slice(slash + 1) : value;
			if (!KEY.test(key)) {
				refinement.addIssue({ code: z.ZodIssueCode.custom, message: `is not a valid ${collection} key` });
				return z.NEVER;
			}
			return key;
		});
}

/** A `_rev` (the `If-Match` form `"_rev"` with quotes is accepted and unquoted). */
export const Rev = z
	.string({ required_error: 'is required', invalid_type_error: 'must be a string' })
	.trim()
	.transform((value) => value.replace(/^W\//, '').replace(/^"(.*)"$/, '$1'))
	.pipe(z.string().min(1, 'is required').max(64));

/** A user id: the actor an operation stores (locked_by, unlocked_by, archived_by, merged_by, author, rejected_by, created_by, …). */
export const UserId = z.string({ required_error: 'is required' }).trim().min(1, 'is required').max(256);

/** A required text (trimmed, not empty: "is required"), of at most `max` characters ("must be ≤ <max> characters"). */
export function requiredText(max: number) {
	return z
		.string({ required_error: 'is required' })
		.trim()
		.min(1, 'is required')
		.max(max, `must be ≤ ${max} characters`);
}

/** An optional text of at most `max` characters (else "must be ≤ <max> characters"); missing or null → null. */
export function optionalText(max: number) {
	return z
		.string()
		.max(max, `must be ≤ ${max} characters`)
		.nullish()
		.transform((v) => v ?? null);
}

/**
 * ArangoCAS's style of the shared `parseInput` (nodes/shared/contracts/input.ts): `parseInput(schema, raw,
 * inCollection('atoms'))` fails with 422 `invalid input: <field> <message>`, details `{ code: 'VALIDATION', field,
 * issues: [{ field, message }] }` (every issue), context `{ operation: 'validate', collection }`.
 */
export function inCollection(collection: string): ParseInputOptions {
	return { where: { collection }, issues: true };
}
