/**
 * Runs once before jest loads any test file: probes what some tests need and cannot check synchronously,
 * and hands the answers to the files through the environment (jest cannot skip from inside a running test).
 *   CONTRACTS_TEST_REDIS_SKIP     why the queue-mode e2e tests skip (Redis does not answer PING), else unset
 *   CONTRACTS_TEST_PGVECTOR       '1' when the test server offers the pgvector extension, else '0'
 * DATABASE_URL is set by scripts/test.js (the PostgreSQL every file creates its own database on); 127.0.0.1:5432 when unset.
 */
import { Client } from 'pg';
import { redisUnavailable } from '../helpers/n8nQueue';

async function pgvectorAvailable(url: string): Promise<boolean> {
	const client = new Client({ connectionString: url });
	try {
		await client.connect();
		const { rows } = await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
		return rows.length > 0;
	} catch {
		return false;
	} finally {
		await client.end().catch(() => undefined);
	}
}

export default async function globalSetup(): Promise<void> {
	const redis = await redisUnavailable();
	if (redis) process.env.CONTRACTS_TEST_REDIS_SKIP = redis;
	else delete process.env.CONTRACTS_TEST_REDIS_SKIP;
	process.env.CONTRACTS_TEST_PGVECTOR = (await pgvectorAvailable(
		process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
	))
		? '1'
		: '0';
}
