/**
 * The pgvector SQL of the knowledge bot (seed 003 WF41, WF51) on kg.chunk_embeddings_1536 (migration 007).
 * Tested on PGlite with pgvector (the test PostgreSQL has no pgvector).
 */
import { ContractError, fromPgError, type ErrorContextInit } from '../../shared/errors';

export const EMBEDDINGS_TABLE = 'kg.chunk_embeddings_1536';
export const VECTOR_DIMS = 1536;

/** Chunks of a document with no embedding for the model, or one computed from older text. $1 tenant, $2 document, $3 model. */
export const CHUNKS_TO_EMBED = `
SELECT c.id, c.text, c.text_sha256
FROM kg.chunks c
JOIN content.documents d ON d.id = c.document_id
LEFT JOIN kg.chunk_embeddings_1536 e ON e.chunk_id = c.id AND e.model_id = $3
WHERE d.tenant_id = $1 AND c.document_id = $2 AND (e.chunk_id IS NULL OR e.chunk_sha256 IS DISTINCT FROM c.text_sha256)
ORDER BY c.chunk_no`;

/** $1 tenant, $2 model, $3 JSON array of { chunk_id, embedding ("[…]"), chunk_sha256 }; rewrites only stale rows. */
export const UPSERT_EMBEDDINGS = `
INSERT INTO kg.chunk_embeddings_1536 AS e (chunk_id, model_id, tenant_id, embedding, chunk_sha256)
SELECT x.chunk_id, $2, $1, x.embedding::vector, x.chunk_sha256
FROM jsonb_to_recordset($3::jsonb) AS x(chunk_id bigint, embedding text, chunk_sha256 text)
ON CONFLICT (chunk_id, model_id) DO UPDATE SET embedding = EXCLUDED.embedding, chunk_sha256 = EXCLUDED.chunk_sha256, created_at = now()
WHERE e.chunk_sha256 IS DISTINCT FROM EXCLUDED.chunk_sha256
RETURNING chunk_id`;

/**
 * Nearest chunks that everyone who reads the reply may see (seed 003 §0.2), by cosine distance. The reply
 * of WF51 goes to the chat of the request, so the request's channel and chat decide:
 *  - only this tenant's embeddings, chunks and documents, always;
 *  - `group` ($7 = 'group', $8 the chat): ONLY `group` documents of that chat — never a dm, never another
 *    group, whoever asks (a tenant admin too: every member of the group reads the answer and its Sources) —
 *    and the asker a current member of it (tg.chat_memberships_current.is_member: Telegram's flag,
 *    migration 010 — a `restricted` user who left is not a member, nor is `left` or `kicked`) or an admin;
 *  - `dm` ($7 = 'dm'; only the asker reads the reply; $8 plays no part): the asker's own `dm` documents and
 *    the `group` documents of every chat the asker is a current member of; a tenant admin sees every
 *    document of the tenant.
 * Any other $7, or a group without $8, matches nothing.
 * The filter runs on the candidates of the HNSW scan, so with very selective filters fewer than `k`
 * rows may come back (raise hnsw.ef_search, or pgvector ≥ 0.8's iterative scans, to widen it).
 * $1 tenant, $2 model, $3 query vector "[…]", $4 tg_user_id as its exact decimal string (`::bigint`, never a
 * JS number: ids beyond 2^53 − 1 would round to another user), $5 is_admin, $6 k, $7 channel ('group' |
 * 'dm'), $8 the group's chat_id as its exact decimal string (null for dm).
 */
export const SEARCH_CHUNKS = `
SELECT c.id AS chunk_id, c.document_id, c.chunk_no, c.text, d.title, d.doc_type, d.chat_id, d.visibility,
       d.message_version_id, d.file_unique_id, u.normalized_url AS url,
       1 - (e.embedding <=> $3::vector) AS score
FROM kg.chunk_embeddings_1536 e
JOIN kg.chunks c ON c.id = e.chunk_id AND c.tenant_id = $1
JOIN content.documents d ON d.id = c.document_id AND d.tenant_id = $1
LEFT JOIN content.urls u ON u.id = d.url_id
WHERE e.tenant_id = $1 AND e.model_id = $2
  AND CASE $7::text
    WHEN 'group' THEN
      d.visibility = 'group' AND d.chat_id = $8::bigint
      AND ($5::boolean OR EXISTS (
            SELECT 1 FROM tg.chat_memberships_current m
            WHERE m.tenant_id = $1 AND m.chat_id = $8::bigint AND m.tg_user_id = $4::bigint AND m.is_member))
    WHEN 'dm' THEN
      $5::boolean
      OR (d.visibility = 'dm' AND d.dm_owner_user_id = $4::bigint)
      OR (d.visibility = 'group' AND EXISTS (
            SELECT 1 FROM tg.chat_memberships_current m
            WHERE m.tenant_id = $1 AND m.chat_id = d.chat_id AND m.tg_user_id = $4::bigint AND m.is_member))
    ELSE false
  END
ORDER BY e.embedding <=> $3::vector
LIMIT $6`;

/**
 * Maps a failure of the vector SQL: the table missing (42P01, migration 007 not applied because the
 * server has no pgvector) is a 500 `PGVECTOR_MISSING` saying so; anything else as fromPgError.
 */
export function vectorError(error: unknown, where: ErrorContextInit): ContractError {
	const code = (error as { code?: unknown } | null)?.code;
	if (code === '42P01' || code === '42704') {
		return new ContractError(
			`${EMBEDDINGS_TABLE} is not installed: the server has no pgvector, so migration 007_kg_vectors.sql was not applied`,
			500,
			'db',
			false,
			{ code: 'PGVECTOR_MISSING', sqlstate: code },
			where,
			{ cause: error },
		);
	}
	return fromPgError(error, where);
}
