/**
 * The pipeline_runs row as the Pipeline Run operations (run/*.operation.ts, seed 001 steps 0–4, seed 004 state
 * machine) read it, over a pg Pool: the table label of their errors, the run without its retry bookkeeping, the
 * run_id / user_id / required text schemas and how the operations parse their input (PIPELINE_INPUT), one
 * statement with its PostgreSQL error mapped, and the 404 of an unknown run.
 * Each state change is one statement; errors are ContractErrors (404 unknown run, 409 illegal
 * transition / lost capture, 422 invalid input, 503 database unreachable).
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { isUuid } from '../../../shared/contracts/ids';
import type { ParseInputOptions } from '../../../shared/contracts/input';
import { ContractError } from '../../../shared/errors';
import { rowsOf } from '../../../shared/postgres/rows';

/** The table the operations' ContractErrors name (`context.table`). */
export const RUNS = { table: 'maas.pipeline_runs' };

/** Columns of the retry bookkeeping (migrations 019, 022): never in an output, nor in what processors receive. */
export const BOOKKEEPING = ['completed_steps', 'capture_key', 'capture_processed', 'fail_key', 'archive_key'] as const;

/** The run without its retry bookkeeping (BOOKKEEPING). */
export function publicRun<T extends Record<string, unknown>>(row: T): T {
	const copy: Record<string, unknown> = { ...row };
	for (const column of BOOKKEEPING) delete copy[column];
	return copy as T;
}

/** A run row as the operations return it. */
export type RunRow = Record<string, unknown> & { id: string; status: string };

/** A run id (`run_id`): a UUID, else 422 `invalid input: run_id must be a UUID`. */
export const RunId = z.custom<string>(isUuid, 'must be a UUID');

/** `value` trimmed when it is a string (or, with `numbers`, a number), else '' (so "is required"). */
const trimmed = (numbers: boolean) => (value: unknown) =>
	typeof value === 'string' || (numbers && typeof value === 'number') ? String(value).trim() : '';

/** A user id (`user_id`): a string or number, trimmed; else, or when empty, 422 `invalid input: user_id is required`. */
export const UserId = z.preprocess(trimmed(true), z.string().min(1, 'is required'));

/** A required text (`query`, `summary`): trimmed; not a string, or empty, is 422 `invalid input: <field> is required`. */
export const RequiredText = z.preprocess(trimmed(false), z.string().min(1, 'is required'));

/** The input of an operation that needs only its run: `{ run_id }` (RunId). */
export const RunInput = z.object({ run_id: RunId });

/**
 * Pipeline Capture's style of the shared `parseInput` (nodes/shared/contracts/input.ts): `parseInput(schema, input,
 * PIPELINE_INPUT)` fails with 422 `invalid input: <field> <message>`, details `{ code: 'VALIDATION', field }`,
 * context `{ operation: 'validate', table: 'maas.pipeline_runs' }`.
 */
export const PIPELINE_INPUT: ParseInputOptions = { where: RUNS };

/** The rows of one statement. @throws ContractError as fromPgError maps the PostgreSQL error (503 unreachable…) */
export async function query<T extends Record<string, unknown>>(
	pool: Pick<Pool, 'query'>,
	sql: string,
	params: unknown[],
	operation: string,
): Promise<T[]> {
	return rowsOf<T>(pool, sql, params, { operation, ...RUNS });
}

/** 404 NOT_FOUND: run `id` does not exist. */
export function notFound(id: string): ContractError {
	return ContractError.notFound(
		`pipeline run ${id} does not exist`,
		{ code: 'NOT_FOUND', run_id: id },
		{ operation: 'update', ...RUNS },
	);
}
