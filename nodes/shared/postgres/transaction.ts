/**
 * Runs `fn` in one transaction: COMMIT on success, ROLLBACK on any error (rethrown). On a pg.Pool this is
 * withTransaction (./pool.ts): one pooled client, released after; a client whose ROLLBACK failed is
 * destroyed, not returned to the pool; the client's 'error' event (a connection terminated while checked
 * out) is handled, so it never becomes an uncaught exception of the n8n process (issue 26 review). A
 * database that is a single connection (no `connect`, e.g. PGlite in tests) runs BEGIN … COMMIT on itself.
 */
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from './pool';

/** Anything with pg's `query(text, values)`: a single-connection database. */
export type SingleConnection = Pick<Pool, 'query'>;

function isPool(db: Pool | SingleConnection): db is Pool {
	return typeof (db as Partial<Pool>).connect === 'function' && typeof (db as Partial<Pool>).totalCount === 'number';
}

/**
 * @param db a pg.Pool (one client is taken for the transaction) or a single-connection database
 * @param fn the statements, on the transaction's client; its result is returned after COMMIT
 * @throws whatever `fn`, BEGIN or COMMIT throws, unmapped (callers map pg errors with fromPgError)
 */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T>;
export async function inTransaction<T>(
	db: Pool | SingleConnection,
	fn: (client: PoolClient | SingleConnection) => Promise<T>,
): Promise<T>;
export async function inTransaction<T>(
	db: Pool | SingleConnection,
	fn: (client: PoolClient & SingleConnection) => Promise<T>,
): Promise<T> {
	if (isPool(db)) return withTransaction(db, fn as (client: PoolClient) => Promise<T>);
	const client = db as PoolClient & SingleConnection;
	try {
		await client.query('BEGIN');
		const result = await fn(client);
		await client.query('COMMIT');
		return result;
	} catch (error) {
		await client.query('ROLLBACK').catch(() => undefined);
		throw error;
	}
}
