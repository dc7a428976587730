/**
 * One `pg.Pool` per credential, cached at module level and reused across executions (as n8n's own
 * Postgres node does), closed after 5 minutes unused. Idle-client errors (server restart, dropped
 * connection) are caught by `pool.on('error')` so they never crash n8n; the next query reconnects.
 * Secrets: the password is remembered process-wide (../redact.ts), so every ContractError — `fromPgError`
 * included — has it redacted; the credential test redacts it from pg's message. A connection string or
 * user info pasted into Host, Database or User is refused before any connection (`poolConfig`).
 */
import { createHash } from 'node:crypto';
import { Pool, type PoolConfig } from 'pg';
import { ContractError } from '../errors';
import { Redactor, rememberSecrets } from '../redact';
import { endNamedStatementPool } from './prepared';

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

/** The credential's fields that must be plain names: key and display name. */
const PLAIN_FIELDS = [
	['host', 'Host'],
	['database', 'Database'],
	['user', 'User'],
] as const;

/** A URL's user info (`scheme://user:password@`): whatever sits between `://` and `@`. */
const USER_INFO = /:\/\/([^@/\s]*)@/g;

/**
 * Why the credential is refused before any connection (null when it is fine): a Host, Database or User
 * holding a connection string (`://`), and a Host or Database holding user info (`@`) — a password pasted
 * there would reach pg's messages. A User may contain `@` (e.g. `app@server`), but not `:` with `@`.
 * The message names the field and never quotes the value.
 */
export function postgresCredentialProblem(credential: PostgresCredential): string | null {
	for (const [name, label] of PLAIN_FIELDS) {
		const value = credential[name];
		if (typeof value !== 'string') continue;
		const userInfo = name === 'user' ? value.includes('@') && value.includes(':') : value.includes('@');
		if (value.includes('://') || userInfo) {
			return `PostgreSQL Contracts credential: ${label} (${name}) must be a plain ${name === 'host' ? 'host name or address' : 'name'}, not a connection string or user info (put the password in the Password field; the value is not shown)`;
		}
	}
	return null;
}

/**
 * The redactor of the credential's password, and of the user info of a connection string pasted into
 * Host, Database or User (`postgres://app:pw@…`: `app:pw` and `pw`). They are also remembered
 * process-wide (when distinctive, ../redact.ts) — unless the password equals the credential's user,
 * database or host (a value every message may name: redacting it everywhere would mangle ordinary text,
 * e.g. the embedded test server's postgres/postgres).
 */
export function postgresRedactor(credential: PostgresCredential): Redactor {
	const secrets = postgresSecrets(credential);
	rememberSecrets(secrets.remembered);
	return new Redactor(secrets.all);
}

/** The credential's secrets (`all`) and those that may be remembered process-wide (`remembered`), as above. */
function postgresSecrets(credential: PostgresCredential): { all: unknown[]; remembered: unknown[] } {
	const password = credential.password;
	const isPublic =
		typeof password === 'string' && [credential.user, credential.database, credential.host].includes(password);
	const pasted: string[] = [];
	for (const [name] of PLAIN_FIELDS) {
		const value = credential[name];
		if (typeof value !== 'string') continue;
		for (const m of value.matchAll(USER_INFO)) {
			pasted.push(m[1]);
			if (m[1].includes(':')) pasted.push(m[1].slice(m[1].indexOf(':') + 1));
		}
	}
	return { all: [password, ...pasted], remembered: isPublic ? pasted : [password, ...pasted] };
}

/**
 * `redactor.string(text)` with any URL user info (`://user:pw@`) replaced too, whatever the secret.
 */
export function redactPostgresText(redactor: Redactor, text: string): string {
	return redactor.string(text).replace(USER_INFO, '://[REDACTED]@');
}

/**
 * Translates the credential into `pg` pool options.
 * @throws ContractError 500 `validation`, not retryable, details `{ code: "BAD_CREDENTIAL_FIELD",
 *         credential_field }` when `postgresCredentialProblem` refuses it
 */
export function poolConfig(credential: PostgresCredential): PoolConfig {
	rememberSecrets(postgresSecrets(credential).remembered);
	const problem = postgresCredentialProblem(credential);
	if (problem) {
		const field = PLAIN_FIELDS.find(([name]) => problem.includes(`(${name})`))?.[0] ?? 'host';
		throw ContractError.configuration(problem, { code: 'BAD_CREDENTIAL_FIELD', credential_field: field });
	}
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

function sweep(): void {
	const now = Date.now();
	for (const [key, entry] of pools) {
		if (
			now - entry.lastUsed > POOL_IDLE_CLOSE_MS &&
			entry.pool.waitingCount === 0 &&
			entry.pool.totalCount === entry.pool.idleCount
		) {
			pools.delete(key);
			void endNamedStatementPool(entry.pool);
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
	const config = poolConfig(credential);
	const key = createHash('sha256').update(JSON.stringify(config)).digest('hex');
	let entry = pools.get(key);
	if (!entry) {
		const pool = new Pool(config);
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
	await Promise.all(
		all.map(async (entry) => {
			await endNamedStatementPool(entry.pool);
			await entry.pool.end().catch(() => undefined);
		}),
	);
}
