/**
 * The exact route of the knowledge bot's vectors, for servers without pgvector: kg.chunk_embeddings_1536_exact
 * (migration 011; `embedding` = 1536 float32, little-endian, as bytea). The search is two statements:
 * VISIBLE_EMBEDDINGS applies the ACL filter (vectorAcl.ts) FIRST and returns the vectors of the visible rows
 * only, which the node scores (cosine.ts) keeping the k nearest; CHUNK_DETAILS then reads those k chunks,
 * with the same ACL filter applied again.
 */
import { CHUNK_COLUMNS, visibleTo } from './vectorAcl';
import { chunksToEmbed } from './vectorSql';

export const EXACT_TABLE = 'kg.chunk_embeddings_1536_exact';

/** $1 tenant, $2 document, $3 model (see vectorSql.chunksToEmbed). */
export const EXACT_CHUNKS_TO_EMBED = chunksToEmbed(EXACT_TABLE);

/** $1 tenant, $2 model, $3 chunk ids (bigint[]), $4 vectors (bytea[]), $5 text hashes (text[]), same order; rewrites only stale rows. */
export const EXACT_UPSERT_EMBEDDINGS = `
INSERT INTO kg.chunk_embeddings_1536_exact AS e (chunk_id, model_id, tenant_id, embedding, chunk_sha256)
SELECT x.chunk_id, $2, $1, x.embedding, x.chunk_sha256
FROM unnest($3::bigint[], $4::bytea[], $5::text[]) AS x(chunk_id, embedding, chunk_sha256)
ON CONFLICT (chunk_id, model_id) DO UPDATE SET embedding = EXCLUDED.embedding, chunk_sha256 = EXCLUDED.chunk_sha256, created_at = now()
WHERE e.chunk_sha256 IS DISTINCT FROM EXCLUDED.chunk_sha256
RETURNING chunk_id`;

/**
 * Every visible row's chunk id (text: exact) and vector. $1 tenant, $2 model, $3 tg_user_id (exact decimal
 * string), $4 is_admin, $5 channel, $6 the group's chat_id (exact decimal string, null for dm).
 */
export const VISIBLE_EMBEDDINGS = `
SELECT e.chunk_id::text AS chunk_id, e.embedding
FROM kg.chunk_embeddings_1536_exact e
JOIN kg.chunks c ON c.id = e.chunk_id AND c.tenant_id = $1
JOIN content.documents d ON d.id = c.document_id AND d.tenant_id = $1
WHERE e.tenant_id = $1 AND e.model_id = $2
  AND ${visibleTo({ tenant: '$1', user: '$3', admin: '$4', channel: '$5', chat: '$6' })}`;

/** The chosen chunks, the ACL filter applied again. $1 tenant, $2 user, $3 is_admin, $4 channel, $5 chat, $6 chunk ids (bigint[]). */
export const CHUNK_DETAILS = `
SELECT ${CHUNK_COLUMNS}
FROM kg.chunks c
JOIN content.documents d ON d.id = c.document_id AND d.tenant_id = $1
LEFT JOIN content.urls u ON u.id = d.url_id
WHERE c.tenant_id = $1 AND c.id = ANY($6::bigint[])
  AND ${visibleTo({ tenant: '$1', user: '$2', admin: '$3', channel: '$4', chat: '$5' })}`;
