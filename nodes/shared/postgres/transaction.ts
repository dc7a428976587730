/**
 * The one way this package opens a PostgreSQL transaction (issue 28): `inTransaction(db, fn)` runs `fn` on
 * one client between BEGIN and COMMIT, and ROLLBACK when `fn` throws (the error is rethrown unchanged) or
 * returns `rollback(value)` (nothing is kept, `value` is returned). No other file sends BEGIN, COMMIT or
 * ROLLBACK (test/unit/sqlHomes.test.ts); savepoints inside `fn` are the caller's.
 *
 * On a pg.Pool: one pooled client, released after; a client whose ROLLBACK failed (its connection broke) is
 * destroyed, not returned to the pool; the client's 'error' event (a connection terminated while checked
 * out, emitted besides the failed query's error) is handled, so a lost reply never becomes an uncaught
 * exception of the n8n process (issue 26). A database that is a single connection (no `connect`, e.g.
 * PGlite in tests) runs BEGIN … COMMIT on itself.
 */
import type { Pool, PoolClient } from 'pg';

/** Anything with pg's `query(text, values)`: a single-connection database. */
export type SingleConnection = Pick<Pool, 'query'>;

/** What `fn` returns to end the transaction with ROLLBACK instead of COMMIT, handing back `value`. */
export class Rollback<T> {
	constructor(readonly value: T) {}
}

/** Ends the transaction with ROLLBACK (nothing `fn` wrote is kept); `inTransaction` returns `value`. */
export function rollback<T>(value: T): Rollback<T> {
	return new Rollback(value);
}

function isPool(db: Pool | SingleConnection): db is Pool {
	return typeof (db as Partial<Pool>).connect === 'function' && typeof (db as Partial<Pool>).totalCount === 'number';
}

/** pg also emits a lost connection as 'error' on a checked-out client; the failed query reports it. */
function ignoreCheckedOutError(): void {}

/**
 * BEGIN, `fn`, then COMMIT — or ROLLBACK when `fn` throws (rethrown), returns a Rollback, or COMMIT fails
 * (rethrown). A failed ROLLBACK is handed to `onRollbackError` (its connection is broken); after a Rollback
 * result it is also thrown, as nothing tells whether the work was kept. ROLLBACK is sent once at most.
 */
async function run<T>(
	client: Pick<Pool, 'query'>,
	fn: () => Promise<T | Rollback<T>>,
	onRollbackError: (e: Error) => void,
): Promise<T> {
	const rollbackAfter = async (error: unknown): Promise<never> => {
		await client.query('ROLLBACK').catch(onRollbackError);
		throw error;
	};
	let result: T | Rollback<T>;
	try {
		await client.query('BEGIN');
		result = await fn();
	} catch (error) {
		return rollbackAfter(error);
	}
	if (result instanceof Rollback) {
		await client.query('ROLLBACK').catch((error: Error) => {
			onRollbackError(error);
			throw error;
		});
		return result.value;
	}
	try {
		await client.query('COMMIT');
	} catch (error) {
		return rollbackAfter(error);
	}
	return result;
}

/**
 * @param db a pg.Pool (one client is taken for the transaction) or a single-connection database
 * @param fn the statements, on the transaction's client; its result is returned after COMMIT, or
 *   `rollback(value)` to end with ROLLBACK and return `value`
 * @throws whatever `fn`, BEGIN or COMMIT throws, unmapped (callers map pg errors with fromPgError)
 */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T | Rollback<T>>): Promise<T>;
export async function inTransaction<T>(
	db: Pool | SingleConnection,
	fn: (client: PoolClient | SingleConnection) => Promise<T | Rollback<T>>,
): Promise<T>;
export async function inTransaction<T>(
	db: Pool | SingleConnection,
	fn: (client: PoolClient & SingleConnection) => Promise<T | Rollback<T>>,
): Promise<T> {
	if (!isPool(db)) {
		const single = db as PoolClient & SingleConnection;
		return run(
			single,
			() => fn(single),
			() => undefined,
		);
	}
	const client = await db.connect();
	client.on('error', ignoreCheckedOutError);
	let broken: Error | undefined;
	try {
		return await run(
			client,
			() => fn(client as PoolClient & SingleConnection),
			(rollbackError) => {
				broken = rollbackError;
			},
		);
	} finally {
		client.removeListener('error', ignoreCheckedOutError);
		client.release(broken);
	}
}
