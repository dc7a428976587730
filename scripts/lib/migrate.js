'use strict';
/**
 * Applies db/migrations/NNN_name.sql in file-name order, each in its own transaction, and records
 * each applied file (name and SHA-256) in public.contracts_migrations. Idempotent: applied files are
 * skipped; a recorded file whose content changed is an error (write a new migration instead).
 * A session-level advisory lock serialises concurrent runs.
 * A file whose first line is `-- requires-extension: <name>` is applied only where the server offers
 * that extension (pg_available_extensions); otherwise it is reported in `missing`, with the reason, and
 * not recorded, so a later run applies it once the extension is installed.
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

/** @returns {Promise<{applied: string[], skipped: string[], missing: {file: string, extension: string, reason: string}[]}>} */
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
					throw new Error(`migration ${file} was applied with other content (sha256 ${done.get(file)}); add a new migration instead of editing it`);
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
	} finally {
		await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
		await client.end();
	}
	return { applied, skipped, missing };
}

module.exports = { migrate, MIGRATIONS_DIR };
