'use strict';
/**
 * Applies db/migrations/NNN_name.sql in file-name order, each in its own transaction, and records
 * each applied file (name and SHA-256) in public.contracts_migrations. Idempotent: applied files are
 * skipped; a recorded file whose content changed is an error (write a new migration instead).
 * A session-level advisory lock serialises concurrent runs.
 * A file whose first line is `-- requires-extension: <name>` is applied only where the server offers
 * that extension (pg_available_extensions); otherwise it is reported in `missing`, with the reason, and
 * not recorded, so a later run applies it once the extension is installed.
 * After migrating, the vector store the Knowledge Bot will use is reported (`vector_store`, the same rule
 * as nodes/KnowledgeBot/actions/vectorRoute.ts): `pgvector_hnsw` where 007's table exists, else `exact`
 * (migration 011's table, no extension).
 */
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { Client } = require('pg');

const MIGRATIONS_DIR = path.join(__dirname, '..', '..', 'db', 'migrations');
const LOCK_KEY = 727274001; // arbitrary, fixed: the advisory lock of this migrator

/** The extension a migration needs (its first line `-- requires-extension: <name>`), or null. */
function requiredExtension(sql) {
	const match = /^-- requires-extension: ([a-z0-9_]+)\s*$/m.exec(sql.split('\n', 1)[0]);
	return match ? match[1] : null;
}

/** The vector route of the database (vectorRoute.ts): `{ route, table, pgvector_version }`, route null when neither table exists. */
async function vectorStore(client) {
	const { rows } = await client.query(`SELECT to_regclass('kg.chunk_embeddings_1536') IS NOT NULL AS hnsw,
		to_regclass('kg.chunk_embeddings_1536_exact') IS NOT NULL AS exact,
		(SELECT extversion FROM pg_extension WHERE extname = 'vector') AS version`);
	const { hnsw, exact, version } = rows[0];
	if (hnsw) return { route: 'pgvector_hnsw', table: 'kg.chunk_embeddings_1536', pgvector_version: version };
	if (exact) return { route: 'exact', table: 'kg.chunk_embeddings_1536_exact', pgvector_version: version };
	return { route: null, table: null, pgvector_version: version };
}

/** @returns {Promise<{applied: string[], skipped: string[], missing: {file: string, extension: string, reason: string}[], vector_store: {route: string|null, table: string|null, pgvector_version: string|null}}>} */
async function migrate(databaseUrl, { log = () => {}, dir = MIGRATIONS_DIR } = {}) {
	const files = fs
		.readdirSync(dir)
		.filter((f) => /^\d{3}_[\w-]+\.sql$/.test(f))
		.sort();
	const client = new Client({ connectionString: databaseUrl });
	await client.connect();
	const applied = [];
	const skipped = [];
	const missing = [];
	let vector_store;
	try {
		await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
		await client.query(`CREATE TABLE IF NOT EXISTS public.contracts_migrations (
			filename text PRIMARY KEY, sha256 text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
		const { rows } = await client.query('SELECT filename, sha256 FROM public.contracts_migrations');
		const done = new Map(rows.map((r) => [r.filename, r.sha256]));
		for (const file of files) {
			const sql = fs.readFileSync(path.join(dir, file), 'utf8');
			const sha = crypto.createHash('sha256').update(sql).digest('hex');
			if (done.has(file)) {
				if (done.get(file) !== sha) {
					throw new Error(
						`migration ${file} was applied with other content (sha256 ${done.get(file)}); add a new migration instead of editing it`,
					);
				}
				skipped.push(file);
				continue;
			}
			const extension = requiredExtension(sql);
			if (extension) {
				const available = await client.query('SELECT 1 FROM pg_available_extensions WHERE name = $1', [extension]);
				if (available.rowCount === 0) {
					const reason = `PostgreSQL extension "${extension}" is not available on this server; ${file} was not applied (install it and run db:migrate again)`;
					missing.push({ file, extension, reason });
					log(`skipped ${file}: ${reason}`);
					continue;
				}
			}
			await client.query('BEGIN');
			try {
				await client.query(sql);
				await client.query('INSERT INTO public.contracts_migrations (filename, sha256) VALUES ($1, $2)', [file, sha]);
				await client.query('COMMIT');
			} catch (error) {
				await client.query('ROLLBACK');
				error.message = `migration ${file} failed: ${error.message}`;
				throw error;
			}
			applied.push(file);
			log(`applied ${file}`);
		}
		vector_store = await vectorStore(client);
	} finally {
		await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
		await client.end();
	}
	return { applied, skipped, missing, vector_store };
}

/** One line saying which vector store WF41/WF51 use and why. */
function describeVectorStore(store) {
	if (store.route === 'pgvector_hnsw')
		return `pgvector ${store.pgvector_version} HNSW on ${store.table}${/^0\.[0-7]\./.test(store.pgvector_version || '') ? ' (pgvector < 0.8: a filtered search that comes back short is re-run exactly)' : ' (iterative scans keep k under the ACL filter)'}`;
	if (store.route === 'exact')
		return `exact search on ${store.table} (no pgvector here: the ACL filter selects the visible rows, the node computes their cosine)`;
	return 'none (neither kg.chunk_embeddings_1536 nor kg.chunk_embeddings_1536_exact exists)';
}

module.exports = { migrate, describeVectorStore, MIGRATIONS_DIR };
