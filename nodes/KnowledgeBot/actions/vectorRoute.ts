/**
 * Which vector store a database has (issue 12), looked up per pool and cached on it for ROUTE_TTL_MS:
 *  - `pgvector_hnsw`: kg.chunk_embeddings_1536 exists (migration 007: the server has pgvector) — vectors in
 *    `vector(1536)` with an HNSW index; `iterative_scan` when pgvector is ≥ 0.8;
 *  - `exact`: otherwise, kg.chunk_embeddings_1536_exact (migration 011, always applied) — no extension.
 * The cache is per pool (one per credential, so per database), never process-wide: several n8n processes,
 * or one with credentials for several databases, each see their own database's route. A route whose table
 * disappeared is forgotten by `forgetVectorRoute` (vectorStore.ts calls it on 42P01) and looked up again.
 * A server that gains pgvector later switches to `pgvector_hnsw` once 007 is applied, in every n8n process
 * within ROUTE_TTL_MS (no restart needed); the vectors of the exact table are not copied: re-run WF41 (Embed) for
 * the documents, which then finds their chunks without a vector in 007's table.
 */
import type { Pool } from 'pg';
import { ContractError, fromPgError } from '../../shared/errors';
import { DETECT_VECTOR_ROUTE, EMBEDDINGS_TABLE, EXACT_TABLE } from '../../shared/statements/content';

export interface VectorRoute {
	route: 'pgvector_hnsw' | 'exact';
	/** the table holding the vectors */
	table: string;
	/** pgvector's extversion, null when the extension is not installed */
	pgvector_version: string | null;
	/** pgvector ≥ 0.8: `hnsw.iterative_scan` keeps k under a selective filter */
	iterative_scan: boolean;
}

/** `major.minor` of a version string is at least 0.8. */
export function hasIterativeScan(version: string | null): boolean {
	const match = /^(\d+)\.(\d+)/.exec(version ?? '');
	if (!match) return false;
	const [major, minor] = [Number(match[1]), Number(match[2])];
	return major > 0 || minor >= 8;
}

/**
 * The route of the database behind `db`, asked now (no cache).
 * @throws ContractError 500 VECTOR_STORE_MISSING when neither table exists (run `npm run db:migrate`); 503/500 db
 */
export async function detectVectorRoute(db: Pick<Pool, 'query'>): Promise<VectorRoute> {
	let row: { hnsw: boolean; exact: boolean; version: string | null };
	try {
		row = (await db.query(DETECT_VECTOR_ROUTE)).rows[0];
	} catch (error) {
		throw fromPgError(error, { operation: 'select', table: 'pg_class' });
	}
	if (row.hnsw)
		return {
			route: 'pgvector_hnsw',
			table: EMBEDDINGS_TABLE,
			pgvector_version: row.version,
			iterative_scan: hasIterativeScan(row.version),
		};
	if (row.exact) return { route: 'exact', table: EXACT_TABLE, pgvector_version: row.version, iterative_scan: false };
	throw ContractError.db(
		`no vector store: neither ${EMBEDDINGS_TABLE} (migration 007, pgvector) nor ${EXACT_TABLE} (migration 011) exists; run npm run db:migrate`,
		{ code: 'VECTOR_STORE_MISSING' },
		{ operation: 'select', table: EXACT_TABLE },
	);
}

/** How long a pool's route is trusted before it is looked up again (ms): a migration applied while n8n runs
 * (007 once pgvector is installed) is picked up by every process within this time, not only by new ones. */
export const ROUTE_TTL_MS = 60_000;

const routes = new WeakMap<object, { route: Promise<VectorRoute>; at: number }>();

/**
 * The pool's route, looked up on first use and cached on the pool for ROUTE_TTL_MS (a failed lookup is
 * not cached).
 */
export function vectorRoute(pool: Pick<Pool, 'query'>): Promise<VectorRoute> {
	const cached = routes.get(pool);
	if (cached && Date.now() - cached.at < ROUTE_TTL_MS) return cached.route;
	const route = detectVectorRoute(pool);
	routes.set(pool, { route, at: Date.now() });
	route.catch(() => routes.delete(pool));
	return route;
}

/** Drops the pool's cached route (its table is gone); the next call looks it up again. */
export function forgetVectorRoute(pool: Pick<Pool, 'query'>): void {
	routes.delete(pool);
}
