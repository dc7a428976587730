/**
 * Issue 26 review: a pooled client checked out for a transaction whose backend is terminated mid-query
 * (pg_terminate_backend: a PostgreSQL restart, a failover, an admin) emits 'error' besides failing the
 * query. Without a listener that event is an uncaught exception: the n8n process crashes. inTransaction
 * (Knowledge Bot) and scrapeFigures (Pipeline Capture's metrics) must fail the operation instead: a
 * retryable ContractError (503 once mapped with fromPgError), no 'uncaughtException'.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { Pool } from 'pg';
import { scrapeFigures } from '../../nodes/PipelineCapture/actions/metrics/scrape';
import { fromPgError } from '../../nodes/shared/errors';
import { inTransaction } from '../../nodes/shared/postgres/transaction';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
const uncaught: Error[] = [];
const onUncaught = (error: Error) => uncaught.push(error);
beforeAll(async () => {
	db = await setupDatabase();
	process.on('uncaughtException', onUncaught);
});
afterAll(async () => {
	process.removeListener('uncaughtException', onUncaught);
	await db?.drop();
});

/** Terminates, from another connection, the backend of `database` that waits (Lock) or sleeps (pg_sleep). */
async function terminateWaitingBackend(pool: Pool): Promise<number> {
	for (let i = 0; i < 100; i += 1) {
		const { rows } = await pool.query(
			`SELECT pid FROM pg_stat_activity
			 WHERE datname = current_database() AND pid <> pg_backend_pid()
			   AND (wait_event_type = 'Lock' OR query LIKE '%pg_sleep(5)%') AND state = 'active'`,
		);
		if (rows.length) {
			await pool.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
			return rows[0].pid as number;
		}
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
	throw new Error('no waiting backend found');
}

async function settle(): Promise<void> {
	// the client's 'error' event follows the failed query on the next turns of the event loop
	await new Promise((resolve) => setTimeout(resolve, 500));
}

test('inTransaction: the backend terminated mid-query fails the call (503, retryable), no uncaught exception, the pool still serves', async () => {
	const failed = inTransaction(db.pool, async (client) => {
		await client.query('SELECT 1');
		await client.query('SELECT pg_sleep(5)');
	}).then(
		() => null,
		(error: unknown) => error,
	);
	await terminateWaitingBackend(db.pool);
	const error = await failed;
	assert.ok(error, 'the call failed');
	await settle();
	const mapped = fromPgError(error, {});
	assert.deepEqual([mapped.name, mapped.statusCode, mapped.retryable], ['ContractError', 503, true]);
	assert.deepEqual(
		uncaught.map((e) => e.message),
		[],
		'no uncaught exception',
	);
	assert.equal(await inTransaction(db.pool, async (client) => (await client.query('SELECT 7 AS n')).rows[0].n), 7);
});

test('scrapeFigures: the backend terminated while the scrape waits fails the scrape (503, retryable), no uncaught exception', async () => {
	const holder = await db.pool.connect();
	try {
		await holder.query('BEGIN');
		await holder.query('LOCK TABLE maas.pipeline_runs IN ACCESS EXCLUSIVE MODE');
		const failed = scrapeFigures(db.pool).then(
			() => null,
			(error: unknown) => error,
		);
		await terminateWaitingBackend(db.pool);
		const error = await failed;
		assert.ok(error, 'the scrape failed');
		await settle();
		const mapped = fromPgError(error, {});
		assert.deepEqual([mapped.statusCode, mapped.retryable], [503, true]);
		assert.deepEqual(
			uncaught.map((e) => e.message),
			[],
			'no uncaught exception',
		);
	} finally {
		await holder.query('ROLLBACK');
		holder.release();
	}
	const figures = await scrapeFigures(db.pool);
	assert.equal(typeof figures, 'object', 'the pool still serves');
});
