/**
 * PGlite (PostgreSQL 18 in WASM, in-process) with pgvector and pgcrypto, every migration of db/migrations
 * applied — the one place the vector SQL can run here (the test PostgreSQL has no pgvector; FACTS.md).
 * `pool` is the PGlite instance typed as the `pg` Pool the operations take: they only call
 * `query(text, params)` → `{ rows }`, which PGlite answers alike. One connection: no concurrency tests here.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PGlite as PGliteType } from '@electric-sql/pglite';
import type { vector as vectorType } from '@electric-sql/pglite-pgvector';
import type { Pool } from 'pg';

// PGlite is loaded by Node's own require, outside the test runner's module sandbox: it loads its WASM and
// extensions with import(), which jest's sandbox refuses (unless node runs with --experimental-vm-modules).
// `process.getBuiltinModule` (Node ≥ 20.16) hands out Node's real `module`, which jest does not wrap.
const nodeRequire = (process.getBuiltinModule('node:module') as typeof import('node:module')).createRequire(__filename);
const { PGlite } = nodeRequire('@electric-sql/pglite') as { PGlite: typeof PGliteType };
const { vector } = nodeRequire('@electric-sql/pglite-pgvector') as { vector: typeof vectorType };
// a subpath export, which this tsconfig's node10 resolution cannot type; migration 001 creates pgcrypto
const { pgcrypto } = nodeRequire('@electric-sql/pglite/contrib/pgcrypto') as { pgcrypto: typeof vectorType };
type PGlite = PGliteType;

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
