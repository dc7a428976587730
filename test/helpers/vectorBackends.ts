/**
 * The two vector routes (nodes/KnowledgeBot/actions/vectorRoute.ts) as test backends, so one test body runs
 * against both: `pgvector_hnsw` on PGlite with pgvector (in-process; FACTS.md), and `exact` on the real test
 * PostgreSQL (a fresh database; 007's table dropped should that server have pgvector, so the exact route is
 * what runs whatever the machine). Vectors are stored through the node's own upsert (vectorStore.ts).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe } from '@jest/globals';
import type { Pool } from 'pg';
import { forgetVectorRoute, vectorRoute } from '../../nodes/KnowledgeBot/actions/vectorRoute';
import { upsertEmbeddings } from '../../nodes/KnowledgeBot/actions/vectorStore';
import { setupDatabase } from './db';
import { vectorDatabase } from './pglite';

export interface VectorBackend {
	route: 'pgvector_hnsw' | 'exact';
	/** what the operations take */
	pool: Pool;
	query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: R[] }>;
	/** the table holding the vectors */
	table: string;
	/** stores a chunk's vector as WF41 does (chunk_sha256 = md5 of `text`) */
	store(row: { chunk_id: number; model_id: number; tenant_id: string; vector: number[]; text: string }): Promise<void>;
	/** true: index scans off, so the pgvector route scans exactly (no-op on the exact route) */
	exactScan(on: boolean): Promise<void>;
	close(): Promise<void>;
}

function backend(
	pool: Pool,
	query: VectorBackend['query'],
	table: string,
	route: VectorBackend['route'],
	close: () => Promise<void>,
	exactScan: (on: boolean) => Promise<void>,
): VectorBackend {
	return {
		route,
		pool,
		query,
		table,
		exactScan,
		close,
		async store(row) {
			await upsertEmbeddings(pool, row.tenant_id, row.model_id, [
				{ chunk_id: row.chunk_id, vector: row.vector, chunk_sha256: createHash('md5').update(row.text).digest('hex') },
			]);
		},
	};
}

export const VECTOR_BACKENDS: { name: string; open(): Promise<VectorBackend> }[] = [
	{
		name: 'pgvector HNSW (PGlite)',
		async open() {
			const vdb = await vectorDatabase();
			const query: VectorBackend['query'] = (sql, params = []) => vdb.db.query(sql, params) as never;
			const b = backend(
				vdb.pool,
				query,
				'kg.chunk_embeddings_1536',
				'pgvector_hnsw',
				() => vdb.close(),
				async (on) => void (await vdb.db.query(on ? 'SET enable_indexscan = off' : 'RESET enable_indexscan')),
			);
			await assertRoute(b);
			return b;
		},
	},
	{
		name: 'exact (PostgreSQL, no pgvector)',
		async open() {
			const db = await setupDatabase();
			await db.pool.query('DROP TABLE IF EXISTS kg.chunk_embeddings_1536');
			forgetVectorRoute(db.pool);
			const b = backend(
				db.pool,
				(sql, params = []) => db.pool.query(sql, params) as never,
				'kg.chunk_embeddings_1536_exact',
				'exact',
				() => db.drop(),
				async () => undefined,
			);
			await assertRoute(b);
			return b;
		},
	},
];

async function assertRoute(b: VectorBackend) {
	const found = (await vectorRoute(b.pool)).route;
	if (found !== b.route) throw new Error(`expected the ${b.route} vector route, the database has ${found}`);
}

/**
 * `suite(backend)` once per route, each in its own describe with the backend opened before and closed after.
 * `suite` declares its tests synchronously; `get()` returns the open backend inside them.
 */
export function forEachVectorBackend(suite: (get: () => VectorBackend, name: string) => void): void {
	for (const { name, open } of VECTOR_BACKENDS) {
		describe(name, () => {
			let current: VectorBackend | undefined;
			beforeAll(async () => {
				current = await open();
			});
			afterAll(async () => current?.close());
			suite(() => current!, name);
		});
	}
}
