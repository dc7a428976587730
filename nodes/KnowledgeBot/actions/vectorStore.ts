/**
 * The knowledge bot's vectors on either route (vectorRoute.ts): what WF41 embeds and stores, and the
 * search of WF51. Same inputs, same outputs, same ordering (nearest first, ties by chunk id) on both:
 *  - `pgvector_hnsw` (shared/statements/content.ts SEARCH_CHUNKS): the HNSW scan in one transaction with SET LOCAL
 *    `hnsw.ef_search` = max(40, k) and, on pgvector ≥ 0.8, `hnsw.iterative_scan = relaxed_order` (the
 *    candidates re-sorted), so a selective ACL filter still gets k rows; on older pgvector a result shorter
 *    than k is re-run as an exact scan (index scans off: the visible rows only are scored, in SQL);
 *  - `exact` (content.ts VISIBLE_EMBEDDINGS, CHUNK_DETAILS): the ACL filter in SQL first, then the cosine of every visible row computed in
 *    the node as its row arrives (no vector is kept), the k best kept, then those k chunks read.
 * Hybrid retrieval (SearchParams.hybrid, issue 30) on either route: each candidate's score is (1 − w) × cosine +
 * w × PostgreSQL's full-text rank of the question (content.ts lexicalRank), best first — on pgvector over the
 * union of the HNSW's nearest and the full-text index's best HYBRID_CANDIDATES (SEARCH_CHUNKS_HYBRID), on the
 * exact route over every visible row (VISIBLE_EMBEDDINGS_HYBRID adds the rank to each row). Same ACL filter.
 */
import { types, type CustomTypesConfig, type Pool } from 'pg';
import { ContractError, fromPgError, type ErrorContextInit } from '../../shared/errors';
import { inTransaction } from '../../shared/postgres/transaction';
import { replaceUnstorable } from '../../shared/sanitize';
import { vectorLiteral } from '../transport/embeddings';
import { cosineScorer, float32Bytes, TopK } from './cosine';
import {
	CHUNK_DETAILS,
	CHUNKS_TO_EMBED,
	EXACT_CHUNKS_TO_EMBED,
	EXACT_TABLE,
	EXACT_UPSERT_EMBEDDINGS,
	SEARCH_CHUNKS,
	SEARCH_CHUNKS_HYBRID,
	UPSERT_EMBEDDINGS,
	VISIBLE_EMBEDDINGS,
	VISIBLE_EMBEDDINGS_HYBRID,
} from '../../shared/statements/content';
import { forgetVectorRoute, vectorRoute, type VectorRoute } from './vectorRoute';

type Db = Pick<Pool, 'query'>;

/** A search, its ACL inputs already checked (retrieve.ts). Ids are exact decimal strings. */
export interface SearchParams {
	tenant_id: string;
	model_id: number;
	vector: number[];
	/** the asker's tg_user_id */
	user: string;
	admin: boolean;
	k: number;
	channel: string;
	/** the group's chat_id (null for dm) */
	chat: string | null;
	/**
	 * Hybrid retrieval (issue 30): the question's text (any string: lexicalQuestion), ranked by PostgreSQL
	 * full-text search ('english'), and the weight of that rank in the score: score = (1 − weight) × cosine +
	 * weight × lexical (each 0–1). Absent: the vector score alone (cosine).
	 */
	hybrid?: { question: string; weight: number };
}

/**
 * Candidates per list on the pgvector route's hybrid search: the HNSW's nearest and the full-text index's best,
 * each this many (at least k), before the hybrid score picks k.
 */
export const HYBRID_CANDIDATES = 50;

/**
 * Characters of the question's text that hybrid retrieval's full-text query reads (the Answer's own limit on a
 * question, AnswerRequest): PostgreSQL 15's plainto_tsquery fails with 54001 (stack depth limit exceeded) on
 * 30,000 words (16,000 pass); 4,000 characters are at most 2,000 words.
 */
export const HYBRID_QUESTION_CHARS = 4000;

/**
 * The question's text as hybrid retrieval's full-text query reads it (issue 30): its first HYBRID_QUESTION_CHARS
 * characters, every NUL and lone UTF-16 surrogate replaced by U+FFFD (sanitize.ts, as stored message texts are) —
 * PostgreSQL refuses a NUL in text (22021). Any text is then a valid query: plainto_tsquery takes it as plain words.
 */
export function lexicalQuestion(question: string): string {
	return replaceUnstorable(question.slice(0, HYBRID_QUESTION_CHARS)).text;
}

/**
 * A row of the search: the chunk's columns (content.CHUNK_COLUMNS, as pg returns them) and `score`, the cosine
 * similarity — in a hybrid search the hybrid score, with `cosine` and `lexical` (the full-text rank, 0–1) beside it.
 */
export type SearchRow = Record<string, unknown> & {
	chunk_id: unknown;
	score: number;
	cosine?: number;
	lexical?: number;
};

/**
 * Maps a failure of the vector SQL: a table missing (42P01: migrations not applied, or 007's table dropped)
 * forgets the pool's route and is a 500 `VECTOR_STORE_MISSING`; anything else as fromPgError.
 */
export function vectorError(pool: Db, error: unknown, where: ErrorContextInit): ContractError {
	if (error instanceof ContractError) return error;
	const code = (error as { code?: unknown } | null)?.code;
	if (code === '42P01' || code === '42704') {
		forgetVectorRoute(pool);
		return ContractError.db(
			'the vector store table is missing: run npm run db:migrate (migration 011, or 007 with pgvector)',
			{ code: 'VECTOR_STORE_MISSING', sqlstate: code },
			where,
			{ cause: error },
		);
	}
	return fromPgError(error, where);
}

/** The chunks of a document with no vector for the model on the pool's route, or one of older text: `{ id, text, text_sha256 }`. */
export async function chunksToEmbed(
	pool: Db,
	tenantId: string,
	documentId: number,
	modelId: number,
): Promise<{ route: VectorRoute; rows: Record<string, unknown>[] }> {
	const route = await vectorRoute(pool);
	const sql = route.route === 'exact' ? EXACT_CHUNKS_TO_EMBED : CHUNKS_TO_EMBED;
	return { route, rows: (await pool.query(sql, [tenantId, documentId, modelId])).rows };
}

/**
 * Stores vectors (rewriting only rows whose chunk_sha256 changed); returns how many rows were written.
 * @throws RangeError a component beyond float32 (exact route; pgvector refuses it with a pg error)
 */
export async function upsertEmbeddings(
	pool: Db,
	tenantId: string,
	modelId: number,
	rows: { chunk_id: number | string; vector: number[]; chunk_sha256: string }[],
): Promise<number> {
	const route = await vectorRoute(pool);
	if (route.route === 'exact') {
		const bytes = rows.map((r) => float32Bytes(r.vector));
		const result = await pool.query(EXACT_UPSERT_EMBEDDINGS, [
			tenantId,
			modelId,
			rows.map((r) => String(r.chunk_id)),
			bytes,
			rows.map((r) => r.chunk_sha256),
		]);
		return result.rows.length;
	}
	const json = rows.map((r) => ({
		chunk_id: r.chunk_id,
		embedding: vectorLiteral(r.vector),
		chunk_sha256: r.chunk_sha256,
	}));
	return (await pool.query(UPSERT_EMBEDDINGS, [tenantId, modelId, JSON.stringify(json)])).rows.length;
}

/** pg's own parser of a bytea in text form (hex or escape) */
const parseBytea = types.getTypeParser(17, 'text') as (text: string) => Buffer;
const BYTEA = 17;

async function searchExact(pool: Db, p: SearchParams): Promise<SearchRow[]> {
	try {
		float32Bytes(p.vector); // a component beyond float32 would score every row NaN (pgvector refuses it too)
	} catch (error) {
		if (!(error instanceof RangeError)) throw error;
		throw ContractError.upstream(
			`embeddings endpoint returned a question vector the store cannot compare: ${error.message}`,
			502,
			false,
			{ code: 'EMBEDDINGS_FAILED', http_status: 200 },
			{ operation: 'select', table: EXACT_TABLE },
		);
	}
	const score = cosineScorer(p.vector);
	const top = new TopK(p.k);
	const hybrid = p.hybrid;
	const values = [p.tenant_id, p.model_id, p.user, p.admin, p.channel, p.chat];
	// each vector is scored by the type parser as its row arrives: 100k visible rows keep 100k numbers, not 600 MB
	const { rows } = await pool.query({
		text: hybrid ? VISIBLE_EMBEDDINGS_HYBRID : VISIBLE_EMBEDDINGS,
		values: hybrid ? [...values, lexicalQuestion(hybrid.question)] : values,
		types: {
			getTypeParser: ((oid: number) =>
				oid === BYTEA
					? (text: string) => score(parseBytea(text))
					: (text: string) => text) as CustomTypesConfig['getTypeParser'],
		},
	});
	for (const row of rows as { chunk_id: string; embedding: number; lexical?: string }[]) {
		if (!hybrid) {
			top.offer({ id: row.chunk_id, score: row.embedding });
			continue;
		}
		// the same combination as content.ts hybridScore (the pgvector route's SQL)
		const lexical = Number(row.lexical);
		const item = { id: row.chunk_id, score: (1 - hybrid.weight) * row.embedding + hybrid.weight * lexical };
		top.offer(Object.assign(item, { cosine: row.embedding, lexical }));
	}
	const best = top.result() as { id: string; score: number; cosine?: number; lexical?: number }[];
	if (best.length === 0) return [];
	const details = (
		await pool.query(CHUNK_DETAILS, [p.tenant_id, p.user, p.admin, p.channel, p.chat, best.map((b) => b.id)])
	).rows;
	const byId = new Map(details.map((d) => [String(d.chunk_id), d]));
	// a chunk deleted, or no longer visible, between the two statements is left out
	return best
		.filter((b) => byId.has(b.id))
		.map(
			(b) =>
				({
					...byId.get(b.id)!,
					score: b.score,
					...(hybrid ? { cosine: b.cosine, lexical: b.lexical } : {}),
				}) as SearchRow,
		);
}

async function searchHnsw(pool: Db, p: SearchParams, route: VectorRoute): Promise<SearchRow[]> {
	const params: unknown[] = [p.tenant_id, p.model_id, vectorLiteral(p.vector), p.user, p.admin, p.k, p.channel, p.chat];
	if (p.hybrid) params.push(Math.max(p.k, HYBRID_CANDIDATES), lexicalQuestion(p.hybrid.question), p.hybrid.weight);
	const sql = p.hybrid ? SEARCH_CHUNKS_HYBRID : SEARCH_CHUNKS;
	return inTransaction(pool, async (db) => {
		const iterative = route.iterative_scan ? ", set_config('hnsw.iterative_scan', 'relaxed_order', true)" : '';
		await db.query(`SELECT set_config('hnsw.ef_search', $1, true)${iterative}`, [
			String(Math.min(1000, Math.max(40, p.k))),
		]);
		let rows = (await db.query(sql, params)).rows;
		if (rows.length < p.k) {
			// the HNSW candidates ran out before k visible rows (pgvector < 0.8, or an iterative scan that hit
			// hnsw.max_scan_tuples on a large corpus): an exact scan of the visible rows instead
			await db.query("SELECT set_config('enable_indexscan', 'off', true)");
			rows = (await db.query(sql, params)).rows;
		}
		return rows.map(
			(r) =>
				({
					...r,
					score: Number(r.score),
					...(p.hybrid ? { cosine: Number(r.cosine), lexical: Number(r.lexical) } : {}),
				}) as SearchRow,
		);
	});
}

/**
 * The `k` nearest chunks visible to the asker (content.visibleTo), nearest first, on the pool's route
 * (`route` overrides it: tests of a route's fallback).
 * @throws pg errors (callers map them with vectorError); ContractError VECTOR_STORE_MISSING
 */
export async function searchChunks(
	pool: Db,
	params: SearchParams,
	route?: VectorRoute,
): Promise<{ route: VectorRoute; rows: SearchRow[] }> {
	const chosen = route ?? (await vectorRoute(pool));
	const rows = chosen.route === 'exact' ? await searchExact(pool, params) : await searchHnsw(pool, params, chosen);
	return { route: chosen, rows };
}
