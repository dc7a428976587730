/**
 * A fresh migrated test database (test/helpers/db.ts) with a TcpProxy in front of it and a pg Pool that
 * connects through the proxy: the lost-reply tests cut the proxied connection after a COMMIT
 * (`proxy.dropReplyTo(marker)`) and check the caller's retry. `db.pool` talks to the server directly.
 */
import { Pool } from 'pg';
import { setupDatabase, type TestDatabase } from './db';
import { TcpProxy } from './tcpProxy';

export interface ProxiedDatabase {
	db: TestDatabase;
	proxy: TcpProxy;
	/** Up to `max` connections through the proxy; its idle-client errors (a cut connection) are ignored. */
	proxied: Pool;
}

export async function setupProxiedDatabase(max = 4): Promise<ProxiedDatabase> {
	const db = await setupDatabase();
	const target = new URL(db.url);
	const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
	await proxy.up();
	const proxied = new Pool({
		host: '127.0.0.1',
		port: proxy.port,
		database: target.pathname.slice(1),
		user: decodeURIComponent(target.username || 'postgres'),
		password: decodeURIComponent(target.password) || undefined,
		max,
	});
	proxied.on('error', () => undefined);
	return { db, proxy, proxied };
}

/** Ends the pool, stops the proxy and drops the database (each part only if it was made). */
export async function closeProxiedDatabase(parts: Partial<ProxiedDatabase>): Promise<void> {
	await parts.proxied?.end();
	await parts.proxy?.down();
	await parts.db?.drop();
}
