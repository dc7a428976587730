/** Runs `fn` in one transaction on a pooled client: COMMIT on success, ROLLBACK on any error (rethrown). */
import type { Pool, PoolClient } from 'pg';

export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
	const client = await pool.connect();
	let broken = false;
	try {
		await client.query('BEGIN');
		const result = await fn(client);
		await client.query('COMMIT');
		return result;
	} catch (error) {
		await client.query('ROLLBACK').catch(() => {
			broken = true; // the connection is gone: do not return it to the pool
		});
		throw error;
	} finally {
		client.release(broken);
	}
}
