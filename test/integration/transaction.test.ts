/**
 * The one transaction helper (issue 28, nodes/shared/postgres/transaction.ts) on a real PostgreSQL: COMMIT
 * keeps what `fn` wrote, a throw rolls it back and is rethrown unchanged, `rollback(value)` rolls back and
 * returns `value`; the pooled client goes back to the pool each time.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { inTransaction, rollback } from '../../nodes/shared/postgres/transaction';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
	await db.pool.query('CREATE TABLE tx_probe (v text)');
});
afterAll(async () => {
	await db?.drop();
});

async function values(): Promise<string[]> {
	return (await db.pool.query('SELECT v FROM tx_probe ORDER BY v')).rows.map((r) => r.v as string);
}

test('COMMIT: what fn wrote is kept and its result returned', async () => {
	const result = await inTransaction(db.pool, async (client) => {
		await client.query("INSERT INTO tx_probe VALUES ('kept')");
		return 7;
	});
	assert.equal(result, 7);
	assert.deepEqual(await values(), ['kept']);
});

test('a throw rolls back and is rethrown unchanged', async () => {
	const failure = new Error('boom');
	await assert.rejects(
		inTransaction(db.pool, async (client) => {
			await client.query("INSERT INTO tx_probe VALUES ('thrown')");
			throw failure;
		}),
		(error) => error === failure,
	);
	assert.deepEqual(await values(), ['kept']);
});

test('rollback(value): nothing is kept and value is returned', async () => {
	const result = await inTransaction(db.pool, async (client) => {
		await client.query("INSERT INTO tx_probe VALUES ('rolled back')");
		return rollback({ why: 'replay' });
	});
	assert.deepEqual(result, { why: 'replay' });
	assert.deepEqual(await values(), ['kept']);
	assert.equal(db.pool.totalCount, db.pool.idleCount, 'every client is back in the pool');
});
