/**
 * One statement's rows, its failure mapped to a ContractError: what every "run a named statement" helper of
 * the nodes does (Pipeline Capture's runs, the ops.jobs queue).
 */
import type { Pool } from 'pg';
import { fromPgError, type ErrorContextInit } from '../errors';

/**
 * @param db a pg Pool or client (anything with `query`)
 * @param sql a named statement of nodes/shared/statements/
 * @param params its bind parameters ($1…)
 * @param where the error context (operation, table) a failure carries
 * @returns the rows
 * @throws ContractError as fromPgError maps the PostgreSQL error (503 unreachable, 409 unique violation…)
 */
export async function rowsOf<T extends Record<string, unknown>>(
	db: Pick<Pool, 'query'>,
	sql: string,
	params: unknown[],
	where: ErrorContextInit,
): Promise<T[]> {
	try {
		return (await db.query<T>(sql, params)).rows;
	} catch (error) {
		throw fromPgError(error, where);
	}
}
