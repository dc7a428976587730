/**
 * One statement's rows, its failure mapped to a ContractError: what every "run a named statement" helper of
 * the nodes does (Pipeline Capture's runs, the ops.jobs queue).
 */
import type { Pool } from 'pg';
import { fromPgError, type ErrorContextInit } from '../errors';
import type { NamedStatement } from './prepared';

/**
 * @param db a pg Pool or client (anything with `query`)
 * @param sql a statement of nodes/shared/statements/: its text (sent unnamed: parsed and planned per call), or
 *   a NamedStatement (./prepared.ts: prepared once per connection)
 * @param params its bind parameters ($1…)
 * @param where the error context (operation, table) a failure carries
 * @returns the rows
 * @throws ContractError as fromPgError maps the PostgreSQL error (503 unreachable, 409 unique violation…)
 */
export async function rowsOf<T extends Record<string, unknown>>(
	db: Pick<Pool, 'query'>,
	sql: string | NamedStatement,
	params: unknown[],
	where: ErrorContextInit,
): Promise<T[]> {
	try {
		return (
			typeof sql === 'string'
				? await db.query<T>(sql, params)
				: await db.query<T>({ name: sql.name, text: sql.text, values: params })
		).rows;
	} catch (error) {
		throw fromPgError(error, where);
	}
}
