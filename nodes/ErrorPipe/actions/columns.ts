/**
 * Values bound for a typed column of ops.errors / ops.jobs (issue 10 §1): used when they fit, else the
 * column gets NULL and the value is kept as text in `error.details.invalid_<field>`, so the row is still
 * written and the offending value still readable. PostgreSQL: 22P02 for a non-UUID into `uuid`, 22003 for
 * an integer past int4/int8.
 */
import type { Sanitizer } from '../../shared/sanitize';

/** Largest value of a PostgreSQL `integer` (int4) column: `ops.errors.contract_version`. */
export const INT4_MAX = 2_147_483_647;

/**
 * A positive integer from a number or a digit string when it is at most `max`, else null. Job ids are
 * `bigint` in PostgreSQL but numbers here: only ids up to 2^53 − 1 (exact in JavaScript) are used.
 */
export function positiveInt(value: unknown, max: number): number | null {
	const n = typeof value === 'string' && /^\s*\d{1,20}\s*$/.test(value) ? Number(value) : value;
	return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 && n <= max ? n : null;
}

/** True for "nothing given": undefined, null or "" (seed 002 §1.3: no job path, nothing to report). */
export function absent(value: unknown): boolean {
	return value === undefined || value === null || value === '';
}

/**
 * The value for a column when it fits (`fit` returns non-null), else null with the value kept as text in
 * `extra["invalid_" + name]` — the row is written with the column NULL and the value still readable.
 */
export function fitOrText<T>(
	clean: Sanitizer,
	extra: Record<string, unknown>,
	name: string,
	value: unknown,
	fit: (v: unknown) => T | null,
): T | null {
	if (absent(value)) return null;
	const fitted = fit(value);
	if (fitted === null) extra[`invalid_${name}`] = clean.asText(value);
	return fitted;
}
