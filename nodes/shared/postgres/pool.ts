/**
 * One `pg.Pool` per credential, cached at module level and reused across executions (as n8n's own
 * Postgres node does), closed after 5 minutes unused. Idle-client errors (server restart, dropped
 * connection) are caught by `pool.on('error')` so they never crash n8n; the next query reconnects.
 * Secrets: the password is remembered process-wide (../redact.ts), so every ContractError — `fromPgError`
 * included — has it redacted; the credential test redacts it from pg's message.
 */
import { createHash } from 'node:crypto';
import { Pool, type PoolClient, type PoolConfig } from 'pg';
import { Redactor, rememberSecrets } from '../redact';

/** The fields of the PostgresContractsApi credential. */
export interface PostgresCredential {
	host: string;
	port: number;
	database: string;
	user: string;
	password?: string;
	ssl?: 'disable' | 'require' | 'verify-full';
	maxConnections?: number;
}

/** How long (ms) a pool may stay unused before it is closed. */
export const POOL_IDLE_CLOSE_MS = 5 * 60_000;
/** How long (ms) to wait for a connection before failing with a retryable `db` error. */
export const CONNECT_TIMEOUT_MS = 5_000;

interface Entry {
	pool: Pool;
	lastUsed: number;
}

const pools = new Map<string, Entry>();
let sweeper: NodeJS.Timeout | undefined;

/**
 * The redactor of the credential's password, which is also remembered process-wide — unless it equals
 * the credential's user, database or host (a value every message may name: redacting it everywhere would
 * mangle ordinary text, e.g. the embedded test server's postgres/postgres).
 */
export function postgresRedactor(credential: PostgresCredential): Redactor {
	const password = credential.password;
	const isPublic = typeof password === 'string' && [credential.user, credential.database, credential.host].includes(password);
	if (!isPublic) rememberSecrets([password]);
	return new Redactor([password]);
}

/** Translates the credential into `pg` pool options. */
export function poolConfig(credential: PostgresCredential): PoolConfig {
	postgresRedactor(credential);
	return {
		host: credential.host,
		port: Number(credential.port) || 5432,
		database: credential.database,
		user: credential.user,
		password: credential.password || undefined,
		ssl:
			credential.ssl === 'require'
				? { rejectUnauthorized: false }
				: credential.ssl === 'verify-full'
					? { rejectUnauthorized: true }
					: false,
		max: Math.max(1, Number(credential.maxConnections) || 10),
		idleTimeoutMillis: 30_000,
		connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
		application_name: 'n8n-nodes-contracts',
	};
}

function keyOf(credential: PostgresCredential): string {
	return createHash('sha256').update(JSON.stringify(poolConfig(credential))).digest('hex');
}

function sweep(): void {
	const now = Date.now();
	for (const [key, entry] of pools) {
		if (now - entry.lastUsed > POOL_IDLE_CLOSE_MS && entry.pool.waitingCount === 0 && entry.pool.totalCount === entry.pool.idleCount) {
			pools.delete(key);
			void entry.pool.end().catch(() => undefined);
		}
	}
	if (pools.size === 0 && sweeper) {
		clearInterval(sweeper);
		sweeper = undefined;
	}
}

/** The shared pool of a credential (created on first use). */
export function getPool(credential: PostgresCredential): Pool {
	const key = keyOf(credential);
	let entry = pools.get(key);
	if (!entry) {
		const pool = new Pool(poolConfig(credential));
		// An idle client's error (server restart, terminated backend) must not crash n8n.
		pool.on('error', () => undefined);
		entry = { pool, lastUsed: Date.now() };
		pools.set(key, entry);
		if (!sweeper) {
			sweeper = setInterval(sweep, 60_000);
			sweeper.unref();
		}
	}
	entry.lastUsed = Date.now();
	return entry.pool;
}

/** Closes every cached pool (tests, shutdown). */
export async function closeAllPools(): Promise<void> {
	const all = [...pools.values()];
	pools.clear();
	await Promise.all(all.map((entry) => entry.pool.end().catch(() => undefined)));
}

/**
 * Runs `work` in one transaction on one client: COMMIT when it resolves, ROLLBACK when it throws
 * (the error is rethrown unchanged). A client whose connection broke is destroyed, not reused.
 */
export async function withTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
	const client = await pool.connect();
	let broken: Error | undefined;
	try {
		await client.query('BEGIN');
		const result = await work(client);
		await client.query('COMMIT');
		return result;
	} catch (error) {
		await client.query('ROLLBACK').catch((rollbackError: Error) => {
			broken = rollbackError;
		});
		throw error;
	} finally {
		client.release(broken);
	}
}
