/**
 * PGlite (PostgreSQL 18 in WASM, in-process) with pgvector and pgcrypto, every migration of db/migrations
 * applied — the one place the vector SQL can run here (the test PostgreSQL has no pgvector; FACTS.md).
 * `pool` is the PGlite instance typed as the `pg` Pool the operations take: they only call
 * `query(text, params)` → `{ rows }`, which PGlite answers alike. One connection: no concurrency tests here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import type { Pool } from 'pg';
// a subpath export, which this tsconfig's node10 resolution cannot type; migration 001 creates pgcrypto
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pgcrypto } = require('@electric-sql/pglite/contrib/pgcrypto') as { pgcrypto: typeof vector };

const MIGRATIONS = path.join(__dirname, '..', '..', 'db', 'migrations');

export async function vectorDatabase(): Promise<{ db: PGlite; pool: Pool; close(): Promise<void> }> {
	const db = await PGlite.create({ extensions: { vector, pgcrypto } });
	for (const file of fs
		.readdirSync(MIGRATIONS)
		.filter((f) => f.endsWith('.sql'))
		.sort()) {
		await db.exec(fs.readFileSync(path.join(MIGRATIONS, file), 'utf8'));
	}
	return { db, pool: db as unknown as Pool, close: () => db.close() };
}
