/**
 * One arangojs `Database` per credential, cached at module level and reused across executions and
 * items (its fetch keeps connections alive). Requests are never retried by the driver
 * (`maxRetries: false`): a retried step of a stream transaction could run twice.
 * Secrets: the URL is checked before the driver sees it (http(s), no whitespace, no user info:
 * ContractError 500 validation BAD_CREDENTIAL_URL); the password, the JWT and the Basic header's Base64 of
 * `username:password` are redacted from every error of this transport (`redactorOf(db)`, ./errors.ts).
 */
import { createHash } from 'node:crypto';
import { Database } from 'arangojs';
import type { ConfigOptions } from 'arangojs/configuration';
import { checkedBaseUrl, type UrlField } from '../../shared/credentialUrl';
import { NO_SECRETS, redactorFor, type Redactor } from '../../shared/redact';

/** The URL field of the ArangoDB API credential, for validation messages. */
export const ARANGO_URL: UrlField = {
	credential: 'ArangoDB API',
	field: 'URL',
	name: 'url',
	example: 'http://127.0.0.1:8529',
};

/** The fields of the ArangoDbApi credential. */
export interface ArangoCredential {
	/** Server URL, e.g. http://127.0.0.1:8529. */
	url: string;
	/** Database name (default `_system`). */
	database?: string;
	authMode?: 'basic' | 'jwt';
	username?: string;
	password?: string;
	token?: string;
	/** Request timeout in ms (0 = none). */
	timeoutMs?: number;
}

const databases = new Map<string, Database>();
const redactors = new WeakMap<Database, Redactor>();
const timeouts = new WeakMap<Database, number>();

/** The redactor of a credential's secrets: password, JWT, and `username:password` (Basic, Base64-matched). */
export function arangoRedactor(credential: ArangoCredential): Redactor {
	const username = credential.username || 'root';
	return redactorFor(
		credential.authMode === 'jwt'
			? [credential.token]
			: [credential.password, credential.password ? `${username}:${credential.password}` : undefined],
	);
}

/** The redactor of a Database made by `getDatabase` (no secrets for any other). */
export function redactorOf(db: Database): Redactor {
	return redactors.get(db) ?? NO_SECRETS;
}

/**
 * The credential's request timeout (ms) of a Database made by `getDatabase`, else undefined. arangojs
 * 10's `db.query` does not apply the configured timeout (its own undefined option overrides it), so the
 * queries pass it explicitly (./query.ts).
 */
export function requestTimeoutOf(db: Database): number | undefined {
	return timeouts.get(db);
}

/** arangojs configuration of a credential. @throws ContractError 500 BAD_CREDENTIAL_URL */
export function databaseConfig(credential: ArangoCredential): ConfigOptions {
	const auth =
		credential.authMode === 'jwt'
			? { token: credential.token ?? '' }
			: { username: credential.username || 'root', password: credential.password ?? '' };
	const timeout = Number(credential.timeoutMs);
	const url =
		credential.url === undefined || credential.url === null || credential.url === ''
			? 'http://127.0.0.1:8529'
			: credential.url;
	return {
		url: checkedBaseUrl(url, ARANGO_URL),
		databaseName: credential.database || '_system',
		auth,
		maxRetries: false,
		...(timeout > 0 ? { timeout } : {}),
	};
}

/** The shared `Database` of a credential (created on first use). @throws ContractError 500 BAD_CREDENTIAL_URL */
export function getDatabase(credential: ArangoCredential): Database {
	const redact = arangoRedactor(credential);
	const config = databaseConfig(credential);
	const key = createHash('sha256').update(JSON.stringify(config)).digest('hex');
	let db = databases.get(key);
	if (!db) {
		db = new Database(config);
		databases.set(key, db);
		redactors.set(db, redact);
		if (typeof config.timeout === 'number') timeouts.set(db, config.timeout);
	}
	return db;
}

/** Forgets every cached `Database` (tests that switch HTTP interception on and off). */
export function forgetDatabases(): void {
	for (const db of databases.values()) db.close();
	databases.clear();
}
