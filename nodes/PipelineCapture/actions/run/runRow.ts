/**
 * The pipeline_runs row as the Pipeline Run operations (run/*.operation.ts, seed 001 steps 0–4, seed 004 state
 * machine) read it, over a pg Pool: the table label of their errors, the run without its retry bookkeeping, the
 * run_id / user_id checks, one statement with its PostgreSQL error mapped, and the 404 of an unknown run.
 * Each state change is one statement; errors are ContractErrors (404 unknown run, 409 illegal
 * transition / lost capture, 422 invalid input, 503 database unreachable).
 */
import type { Pool } from 'pg';
import { isUuid } from '../../../shared/contracts/ids';
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

/** The run id of an input. @throws ContractError 422 (field run_id) when it is not a UUID */
export function runId(value: unknown): string {
	if (typeof value !== 'string' || !isUuid(value)) {
		throw ContractError.validation(
			'invalid input: run_id must be a UUID',
			{ code: 'VALIDATION', field: 'run_id' },
			{ operation: 'validate', ...RUNS },
		);
	}
	return value;
}

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

/** A user id (string or number, trimmed). @throws ContractError 422 when missing or empty */
export function userIdOf(value: unknown): string {
	const userId = typeof value === 'string' || typeof value === 'number' ? String(value).trim() : '';
	if (!userId)
		throw ContractError.validation(
			'invalid input: user_id is required',
			{ code: 'VALIDATION', field: 'user_id' },
			{ operation: 'validate', ...RUNS },
		);
	return userId;
}
