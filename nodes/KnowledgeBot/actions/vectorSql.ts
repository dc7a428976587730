/**
 * The pgvector route of the knowledge bot's vectors (seed 003 WF41, WF51): kg.chunk_embeddings_1536
 * (migration 007, `vector(1536)` + HNSW, cosine). Used where 007 is applied (vectorRoute.ts); tested on
 * PGlite with pgvector. The route without the extension is exactSql.ts.
 */
import { CHUNK_COLUMNS, visibleTo } from './vectorAcl';

export const EMBEDDINGS_TABLE = 'kg.chunk_embeddings_1536';
export const VECTOR_DIMS = 1536;

/** Chunks of a document with no embedding for the model in `table`, or one computed from older text. $1 tenant, $2 document, $3 model. */
export function chunksToEmbed(table: string): string {
	return `
SELECT c.id, c.text, c.text_sha256
FROM kg.chunks c
JOIN content.documents d ON d.id = c.document_id
LEFT JOIN ${table} e ON e.chunk_id = c.id AND e.model_id = $3
WHERE d.tenant_id = $1 AND c.document_id = $2 AND (e.chunk_id IS NULL OR e.chunk_sha256 IS DISTINCT FROM c.text_sha256)
ORDER BY c.chunk_no`;
}

export const CHUNKS_TO_EMBED = chunksToEmbed(EMBEDDINGS_TABLE);

/** $1 tenant, $2 model, $3 JSON array of { chunk_id, embedding ("[…]"), chunk_sha256 }; rewrites only stale rows. */
export const UPSERT_EMBEDDINGS = `
INSERT INTO kg.chunk_embeddings_1536 AS e (chunk_id, model_id, tenant_id, embedding, chunk_sha256)
SELECT x.chunk_id, $2, $1, x.embedding::vector, x.chunk_sha256
FROM jsonb_to_recordset($3::jsonb) AS x(chunk_id bigint, embedding text, chunk_sha256 text)
ON CONFLICT (chunk_id, model_id) DO UPDATE SET embedding = EXCLUDED.embedding, chunk_sha256 = EXCLUDED.chunk_sha256, created_at = now()
WHERE e.chunk_sha256 IS DISTINCT FROM EXCLUDED.chunk_sha256
RETURNING chunk_id`;

/**
 * The `k` nearest chunks the readers of the reply may see (vectorAcl.ts), by cosine distance, nearest
 * first, ties by chunk id. The ACL filter runs on the candidates of the HNSW scan: with a selective filter
 * the scan alone would return fewer than k rows, so vectorStore.ts runs this with pgvector ≥ 0.8's
 * iterative scan (`hnsw.iterative_scan = relaxed_order`, SET LOCAL) — the MATERIALIZED candidates are
 * re-sorted here — and on older pgvector re-runs it as an exact scan when it came back short.
 * $1 tenant, $2 model, $3 query vector "[…]", $4 tg_user_id as its exact decimal string, $5 is_admin,
 * $6 k, $7 channel ('group' | 'dm'), $8 the group's chat_id as its exact decimal string (null for dm).
 */
export const SEARCH_CHUNKS = `
WITH nearest AS MATERIALIZED (
  SELECT ${CHUNK_COLUMNS}, e.embedding <=> $3::vector AS distance
  FROM kg.chunk_embeddings_1536 e
  JOIN kg.chunks c ON c.id = e.chunk_id AND c.tenant_id = $1
  JOIN content.documents d ON d.id = c.document_id AND d.tenant_id = $1
  LEFT JOIN content.urls u ON u.id = d.url_id
  WHERE e.tenant_id = $1 AND e.model_id = $2
    AND ${visibleTo({ tenant: '$1', user: '$4', admin: '$5', channel: '$7', chat: '$8' })}
  ORDER BY e.embedding <=> $3::vector
  LIMIT $6
)
SELECT chunk_id, document_id, chunk_no, text, title, doc_type, chat_id, visibility, message_version_id, file_unique_id, url,
       1 - distance AS score
FROM nearest
ORDER BY distance, chunk_id`;
