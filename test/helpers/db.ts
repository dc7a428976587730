/**
 * A fresh, migrated PostgreSQL database per test file, on the server `scripts/test.js` resolved
 * (DATABASE_URL), else on 127.0.0.1:5432, else an embedded server. Dropped by `drop()`.
 */
import { Pool } from 'pg';
import type { PostgresCredential } from '../../nodes/shared/postgres/pool';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres, createDatabase } = require('../../scripts/lib/postgres');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrate } = require('../../scripts/lib/migrate');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { postgresCredential } = require('../../scripts/lib/n8n');

export interface TestDatabase {
	url: string;
	pool: Pool;
	credential: PostgresCredential;
	drop(): Promise<void>;
}

/** The PostgresContractsApi credential fields for a postgres:// URL (the harness's own mapping). */
export function credentialFor(url: string): PostgresCredential {
	return postgresCredential(url).data;
}

export async function setupDatabase(): Promise<TestDatabase> {
	const server = await resolvePostgres();
	const db = await createDatabase(server.url);
	await migrate(db.url);
	const pool = new Pool({ connectionString: db.url, max: 20 });
	pool.on('error', () => undefined);
	return {
		url: db.url,
		pool,
		credential: credentialFor(db.url),
		async drop() {
			await pool.end();
			await db.drop();
			await server.stop();
		},
	};
}

/** Inserts a tenant and an enabled bot; returns their ids, key and secret. */
export async function seedBot(pool: Pool, botKey = 'demo_bot', secret = 'S3cret_token-1') {
	const { rows } = await pool.query(
		`WITH t AS (INSERT INTO core.tenants (name) VALUES ('Test tenant') RETURNING tenant_id)
		 INSERT INTO core.bots (tenant_id, bot_key, webhook_secret) SELECT tenant_id, $1, $2 FROM t
		 RETURNING bot_id, tenant_id`,
		[botKey, secret],
	);
	return { botId: rows[0].bot_id as string, tenantId: rows[0].tenant_id as string, botKey, secret };
}

/** Row counts of the tables ingest writes. */
export async function ingestCounts(pool: Pool) {
	const { rows } = await pool.query(`SELECT
		(SELECT count(*) FROM raw.telegram_updates)::int AS raw,
		(SELECT count(*) FROM raw.telegram_update_keys)::int AS keys,
		(SELECT count(*) FROM ops.jobs)::int AS jobs,
		(SELECT count(*) FROM ops.errors)::int AS errors`);
	return rows[0] as { raw: number; keys: number; jobs: number; errors: number };
}
