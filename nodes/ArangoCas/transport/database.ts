/**
 * One arangojs `Database` per credential, cached at module level and reused across executions and
 * items (its fetch keeps connections alive). Requests are never retried by the driver
 * (`maxRetries: false`): a retried step of a stream transaction could run twice.
 */
import { createHash } from 'node:crypto';
import { Database } from 'arangojs';
import type { ConfigOptions } from 'arangojs/configuration';

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

/** arangojs configuration of a credential. */
export function databaseConfig(credential: ArangoCredential): ConfigOptions {
	const auth =
		credential.authMode === 'jwt'
			? { token: credential.token ?? '' }
			: { username: credential.username || 'root', password: credential.password ?? '' };
	const timeout = Number(credential.timeoutMs);
	return {
		url: String(credential.url || 'http://127.0.0.1:8529').replace(/\/+$/, ''),
		databaseName: credential.database || '_system',
		auth,
		maxRetries: false,
		...(timeout > 0 ? { timeout } : {}),
	};
}

/** The shared `Database` of a credential (created on first use). */
export function getDatabase(credential: ArangoCredential): Database {
	const config = databaseConfig(credential);
	const key = createHash('sha256').update(JSON.stringify(config)).digest('hex');
	let db = databases.get(key);
	if (!db) {
		db = new Database(config);
		databases.set(key, db);
	}
	return db;
}

/** Forgets every cached `Database` (tests that switch HTTP interception on and off). */
export function forgetDatabases(): void {
	for (const db of databases.values()) db.close();
	databases.clear();
}
