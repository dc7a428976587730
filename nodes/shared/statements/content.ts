/**
 * The statements of content.* and kg.* (seed 003 WF30–WF51: URLs and their fetches, stored bodies,
 * documents, their chunks, the embedding models and the vectors), as named texts and builders, in one place
 * as pg-boss keeps its `plans`. Bind parameters only. Users: the Knowledge Bot's URL (WF30, WF31), File
 * (WF32), Document (WF33, WF40, WF41) and Q&A (WF51) operations, its body store (storeBody.ts), its vector
 * route and store (vectorRoute.ts, vectorStore.ts).
 *
 * The vectors have two routes (vectorRoute.ts), with the same inputs, outputs and ordering:
 *  - pgvector (seed 003 WF41, WF51): kg.chunk_embeddings_1536 (migration 007, `vector(1536)` + HNSW,
 *    cosine). Used where 007 is applied; tested on PGlite with pgvector;
 *  - exact, for servers without pgvector: kg.chunk_embeddings_1536_exact (migration 011; `embedding` = 1536
 *    float32, little-endian, as bytea). The search is two statements: VISIBLE_EMBEDDINGS applies the ACL
 *    filter (`visibleTo`) FIRST and returns the vectors of the visible rows only, which the node scores
 *    (cosine.ts) keeping the k nearest; CHUNK_DETAILS then reads those k chunks, with the same ACL filter
 *    applied again.
 */
import { retentionBatch } from './core';

// --- URLs (WF30, WF31) ---

/** Upsert of a canonical URL: $1 tenant_id, $2 normalized_url, $3 original_url, $4 host. Column: id (no row in a race: FIND_URL). */
export const UPSERT_URL = `
WITH created AS (
  INSERT INTO content.urls (tenant_id, normalized_url, original_url, host) VALUES ($1, $2, $3, $4)
  ON CONFLICT (tenant_id, normalized_url) DO NOTHING RETURNING id)
SELECT id FROM created UNION ALL
SELECT id FROM content.urls WHERE tenant_id = $1 AND normalized_url = $2 AND NOT EXISTS (SELECT 1 FROM created)`;

/** The id of a canonical URL: $1 tenant_id, $2 normalized_url. Column: id. */
export const FIND_URL = 'SELECT id FROM content.urls WHERE tenant_id = $1 AND normalized_url = $2';

/** The canonical form of URL $2 of tenant $1. Column: normalized_url. */
export const URL_TO_FETCH = 'SELECT normalized_url FROM content.urls WHERE tenant_id = $1 AND id = $2';

/** A failed fetch attempt: $1 url_id, $2 status, $3 http_status, $4 content_type, $5 final_url, $6 error. Column: id. */
export const RECORD_FETCH_FAILURE = `INSERT INTO content.url_fetches (url_id, status, http_status, content_type, final_url, error) VALUES ($1, 'error', $2, $3, $4, $5) RETURNING id`;

/** A fetch attempt done: $1 url_id, $2 http_status, $3 content_type, $4 final_url, $5 blob_object_id: in storeBody's transaction. Column: id. */
export const RECORD_FETCH_DONE = `INSERT INTO content.url_fetches (url_id, status, http_status, content_type, final_url, blob_object_id) VALUES ($1, 'done', $2, $3, $4, $5) RETURNING id`;

// --- stored bodies and documents (WF31, WF32, WF33) ---

/**
 * A downloaded body for a document, inside the caller's transaction: the bytes once per SHA-256 in
 * content.blob_objects, and the document of this source in this chat (content.documents, unique
 * tenant/doc_type/source_key/chat) pointed at the blob — set back to `pending` only when the blob changed.
 * $1 tenant_id, $2 doc_type, $3 source_key, $4 url_id, $5 file_unique_id, $6 sha256, $7 bytes, $8 mime,
 * $9 chat_id, $10 visibility, $11 dm_owner_user_id, $12 message_version_id.
 * Columns: blob_object_id, document_id, status.
 */
export const STORE_BODY = `
WITH new_blob AS (
  INSERT INTO content.blob_objects (sha256, size_bytes, mime_type, bytes) VALUES ($6, octet_length($7::bytea), $8, $7)
  ON CONFLICT (sha256) DO NOTHING RETURNING id
), blob AS (
  SELECT id FROM new_blob UNION ALL SELECT id FROM content.blob_objects WHERE sha256 = $6 AND NOT EXISTS (SELECT 1 FROM new_blob)
), doc AS (
  INSERT INTO content.documents AS d (tenant_id, doc_type, source_key, url_id, file_unique_id, chat_id, visibility, dm_owner_user_id, message_version_id, blob_object_id, mime_type)
  SELECT $1, $2, $3, $4, $5, $9, $10, $11, $12, blob.id, $8 FROM blob
  ON CONFLICT (tenant_id, doc_type, source_key, chat_id) DO UPDATE SET
    blob_object_id = EXCLUDED.blob_object_id, mime_type = EXCLUDED.mime_type, status = 'pending', error = NULL, updated_at = now()
    WHERE d.blob_object_id IS DISTINCT FROM EXCLUDED.blob_object_id
  RETURNING id, status
)
SELECT (SELECT id FROM blob) AS blob_object_id,
       coalesce((SELECT id FROM doc), d.id) AS document_id, coalesce((SELECT status FROM doc), d.status) AS status
FROM (SELECT 1) one
LEFT JOIN content.documents d ON d.tenant_id = $1 AND d.doc_type = $2 AND d.source_key = $3 AND d.chat_id = $9`;

/**
 * A Telegram file over the Bot API's download limit, recorded as a document in `error`: $1 tenant_id,
 * $2 source_key, $3 file_unique_id, $4 chat_id, $5 visibility, $6 dm_owner_user_id, $7 message_version_id,
 * $8 mime_type, $9 the reason. Column: id (no row when the document already holds that error: FIND_FILE_DOCUMENT).
 */
export const RECORD_FILE_TOO_LARGE = `
INSERT INTO content.documents AS d (tenant_id, doc_type, source_key, file_unique_id, chat_id, visibility, dm_owner_user_id, message_version_id, mime_type, status, error)
VALUES ($1, 'file', $2, $3, $4, $5, $6, $7, $8, 'error', $9)
ON CONFLICT (tenant_id, doc_type, source_key, chat_id) DO UPDATE SET status = 'error', error = EXCLUDED.error, updated_at = now()
  WHERE d.status IS DISTINCT FROM 'error' OR d.error IS DISTINCT FROM EXCLUDED.error
RETURNING id`;

/** The file document of $1 tenant, $2 source_key, $3 chat_id. Column: id. */
export const FIND_FILE_DOCUMENT =
	"SELECT id FROM content.documents WHERE tenant_id = $1 AND doc_type = 'file' AND source_key = $2 AND chat_id = $3";

/**
 * A document to extract (WF33): $1 tenant_id, $2 document_id. Columns: id, chat_id, mime_type,
 * file_unique_id, file_name (tg.files), bytes and sha256 (its blob; null: nothing downloaded), allow_embedding
 * (the chat policy, default true).
 */
export const LOAD_DOCUMENT_BODY = `
SELECT d.id, d.chat_id, d.mime_type, d.file_unique_id, f.file_name, b.bytes, b.sha256,
       coalesce(p.allow_embedding, true) AS allow_embedding
FROM content.documents d
LEFT JOIN content.blob_objects b ON b.id = d.blob_object_id
LEFT JOIN tg.files f ON f.tenant_id = d.tenant_id AND f.file_unique_id = d.file_unique_id
LEFT JOIN core.chat_policies p ON p.tenant_id = d.tenant_id AND p.chat_id = d.chat_id
WHERE d.tenant_id = $1 AND d.id = $2`;

/**
 * The extraction's result: $1 tenant_id, $2 document_id, $3 text, $4 text_sha256, $5 token_count, $6 title
 * (null: kept), $7 status ('done' | 'error'), $8 error.
 */
export const SAVE_EXTRACTION = `
UPDATE content.documents SET text = $3, text_sha256 = $4, token_count = $5, title = coalesce($6, title), status = $7, error = $8, updated_at = now()
WHERE tenant_id = $1 AND id = $2`;

/** The chat of document $2 of tenant $1. Column: chat_id. */
export const DOCUMENT_CHAT = 'SELECT chat_id FROM content.documents WHERE tenant_id = $1 AND id = $2';

// --- chunks (WF40) ---

/**
 * A document to chunk: $1 tenant_id, $2 document_id. Columns: id, status, text, text_sha256, chat_id,
 * allow_embedding (the chat policy, default true), model_id (the first active embedding model, null: none).
 */
export const LOAD_DOCUMENT_TEXT = `
SELECT d.id, d.status, d.text, d.text_sha256, d.chat_id,
       coalesce(p.allow_embedding, true) AS allow_embedding,
       (SELECT id FROM kg.embedding_models WHERE is_active ORDER BY id LIMIT 1) AS model_id
FROM content.documents d LEFT JOIN core.chat_policies p ON p.tenant_id = d.tenant_id AND p.chat_id = d.chat_id
WHERE d.tenant_id = $1 AND d.id = $2`;

/**
 * A document's chunks, in one statement: keyed by (document_id, chunk_no), rewritten only when their text
 * changed, chunks past the new end deleted. $1 tenant_id, $2 document_id, $3 chunks JSON array
 * ({ chunk_no, text, char_start, char_end, text_sha256 }). Columns: inserted, updated, removed (counts).
 */
export const WRITE_CHUNKS = `
WITH c AS (
  SELECT * FROM jsonb_to_recordset($3::jsonb) AS c(chunk_no int, text text, char_start int, char_end int, text_sha256 text)
), written AS (
  INSERT INTO kg.chunks AS k (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256)
  SELECT $1, $2, chunk_no, text, char_start, char_end, text_sha256 FROM c
  ON CONFLICT (document_id, chunk_no) DO UPDATE SET
    text = EXCLUDED.text, char_start = EXCLUDED.char_start, char_end = EXCLUDED.char_end, text_sha256 = EXCLUDED.text_sha256
  WHERE (k.text_sha256, k.char_start, k.char_end) IS DISTINCT FROM (EXCLUDED.text_sha256, EXCLUDED.char_start, EXCLUDED.char_end)
  RETURNING (xmax = 0) AS inserted
), removed AS (
  DELETE FROM kg.chunks WHERE document_id = $2 AND chunk_no >= (SELECT count(*) FROM c) RETURNING id
)
SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated,
       (SELECT count(*) FROM removed)::int AS removed
FROM written`;

// --- embedding models (WF41, WF51) ---

/** Embedding model $1. Columns: id, provider, name, dims. */
export const EMBEDDING_MODEL = 'SELECT id, provider, name, dims FROM kg.embedding_models WHERE id = $1';

/** The first active embedding model of 1536 dimensions (the question's, WF51). Columns: id, name, dims. */
export const ACTIVE_EMBEDDING_MODEL =
	'SELECT id, name, dims FROM kg.embedding_models WHERE is_active AND dims = 1536 ORDER BY id LIMIT 1';

// --- vectors (WF41, WF51) ---

/** The pgvector route's table (migration 007). */
export const EMBEDDINGS_TABLE = 'kg.chunk_embeddings_1536';
/** The exact route's table (migration 011). */
export const EXACT_TABLE = 'kg.chunk_embeddings_1536_exact';
/** The dimensions both vector tables hold. */
export const VECTOR_DIMS = 1536;

/**
 * Which vector tables exist and pgvector's version (vectorRoute.ts). Columns: hnsw (boolean: 007's table),
 * exact (boolean: 011's table), version (pgvector's extversion, null when not installed).
 */
export const DETECT_VECTOR_ROUTE = `SELECT to_regclass('kg.chunk_embeddings_1536') IS NOT NULL AS hnsw,
       to_regclass('kg.chunk_embeddings_1536_exact') IS NOT NULL AS exact,
       (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS version`;

/**
 * Who may read a chunk (seed 003 §0.2): the ACL predicate over `d` (content.documents), a fragment of the
 * search statements below (SEARCH_CHUNKS, VISIBLE_EMBEDDINGS, CHUNK_DETAILS), shared by both vector routes so
 * they cannot drift apart. The reply of WF51 goes to the chat of the request, so the request's channel and
 * chat decide:
 *  - `group` (channel = 'group', chat = the group): ONLY `group` documents of that chat — never a dm, never
 *    another group, whoever asks (a tenant admin too: every member of the group reads the answer and its
 *    Sources) — and the asker a current member of it (tg.chat_memberships_current.is_member: Telegram's flag,
 *    migration 010 — a `restricted` user who left is not a member, nor is `left` or `kicked`) or an admin;
 *  - `dm` (only the asker reads the reply; chat plays no part): the asker's own `dm` documents and the
 *    `group` documents of every chat the asker is a current member of; a tenant admin sees every document
 *    of the tenant.
 * Any other channel, or a group without chat, matches nothing. The statement also restricts `d` to the tenant.
 */
export interface AclPlaceholders {
	/** tenant_id (uuid) */
	tenant: string;
	/** the asker's tg_user_id as its exact decimal string (cast `::bigint`, never a JS number) */
	user: string;
	/** boolean: the asker is a tenant admin */
	admin: string;
	/** 'group' | 'dm' */
	channel: string;
	/** the group's chat_id as its exact decimal string (null for dm) */
	chat: string;
}

/** The ACL predicate (see AclPlaceholders), with the placeholders given (fixed `$n` names only, never values). */
export function visibleTo(p: AclPlaceholders): string {
	return `CASE ${p.channel}::text
    WHEN 'group' THEN
      d.visibility = 'group' AND d.chat_id = ${p.chat}::bigint
      AND (${p.admin}::boolean OR EXISTS (
            SELECT 1 FROM tg.chat_memberships_current m
            WHERE m.tenant_id = ${p.tenant} AND m.chat_id = ${p.chat}::bigint AND m.tg_user_id = ${p.user}::bigint AND m.is_member))
    WHEN 'dm' THEN
      ${p.admin}::boolean
      OR (d.visibility = 'dm' AND d.dm_owner_user_id = ${p.user}::bigint)
      OR (d.visibility = 'group' AND EXISTS (
            SELECT 1 FROM tg.chat_memberships_current m
            WHERE m.tenant_id = ${p.tenant} AND m.chat_id = d.chat_id AND m.tg_user_id = ${p.user}::bigint AND m.is_member))
    ELSE false
  END`;
}

/** The columns of a retrieved chunk (RetrievedChunk without file_name and score), over `c`, `d` and `u` (content.urls). */
export const CHUNK_COLUMNS = `c.id AS chunk_id, c.document_id, c.chunk_no, c.text, d.title, d.doc_type, d.chat_id, d.visibility,
       d.message_version_id, d.file_unique_id, u.normalized_url AS url`;

/**
 * Chunks of a document with no embedding for the model in `table` (EMBEDDINGS_TABLE or EXACT_TABLE, never
 * input), or one computed from older text. $1 tenant, $2 document, $3 model. Columns: id, text, text_sha256.
 */
export function chunksToEmbed(table: string): string {
	return `
SELECT c.id, c.text, c.text_sha256
FROM kg.chunks c
JOIN content.documents d ON d.id = c.document_id
LEFT JOIN ${table} e ON e.chunk_id = c.id AND e.model_id = $3
WHERE d.tenant_id = $1 AND c.document_id = $2 AND (e.chunk_id IS NULL OR e.chunk_sha256 IS DISTINCT FROM c.text_sha256)
ORDER BY c.chunk_no`;
}

/** chunksToEmbed on the pgvector route. */
export const CHUNKS_TO_EMBED = chunksToEmbed(EMBEDDINGS_TABLE);

/** chunksToEmbed on the exact route. */
export const EXACT_CHUNKS_TO_EMBED = chunksToEmbed(EXACT_TABLE);

/** pgvector route: $1 tenant, $2 model, $3 JSON array of { chunk_id, embedding ("[…]"), chunk_sha256 }; rewrites only stale rows. Column: chunk_id. */
export const UPSERT_EMBEDDINGS = `
INSERT INTO kg.chunk_embeddings_1536 AS e (chunk_id, model_id, tenant_id, embedding, chunk_sha256)
SELECT x.chunk_id, $2, $1, x.embedding::vector, x.chunk_sha256
FROM jsonb_to_recordset($3::jsonb) AS x(chunk_id bigint, embedding text, chunk_sha256 text)
ON CONFLICT (chunk_id, model_id) DO UPDATE SET embedding = EXCLUDED.embedding, chunk_sha256 = EXCLUDED.chunk_sha256, created_at = now()
WHERE e.chunk_sha256 IS DISTINCT FROM EXCLUDED.chunk_sha256
RETURNING chunk_id`;

/** Exact route: $1 tenant, $2 model, $3 chunk ids (bigint[]), $4 vectors (bytea[]), $5 text hashes (text[]), same order; rewrites only stale rows. Column: chunk_id. */
export const EXACT_UPSERT_EMBEDDINGS = `
INSERT INTO kg.chunk_embeddings_1536_exact AS e (chunk_id, model_id, tenant_id, embedding, chunk_sha256)
SELECT x.chunk_id, $2, $1, x.embedding, x.chunk_sha256
FROM unnest($3::bigint[], $4::bytea[], $5::text[]) AS x(chunk_id, embedding, chunk_sha256)
ON CONFLICT (chunk_id, model_id) DO UPDATE SET embedding = EXCLUDED.embedding, chunk_sha256 = EXCLUDED.chunk_sha256, created_at = now()
WHERE e.chunk_sha256 IS DISTINCT FROM EXCLUDED.chunk_sha256
RETURNING chunk_id`;

/**
 * pgvector route: the `k` nearest chunks the readers of the reply may see (`visibleTo`), by cosine distance,
 * nearest first, ties by chunk id. The ACL filter runs on the candidates of the HNSW scan: with a selective
 * filter the scan alone would return fewer than k rows, so vectorStore.ts runs this with pgvector ≥ 0.8's
 * iterative scan (`hnsw.iterative_scan = relaxed_order`, SET LOCAL) — the MATERIALIZED candidates are
 * re-sorted here — and on older pgvector re-runs it as an exact scan when it came back short.
 * $1 tenant, $2 model, $3 query vector "[…]", $4 tg_user_id as its exact decimal string, $5 is_admin,
 * $6 k, $7 channel ('group' | 'dm'), $8 the group's chat_id as its exact decimal string (null for dm).
 * Columns: CHUNK_COLUMNS, file_name (tg.files: the name a file document was sent with, null for a URL) and
 * score (cosine similarity).
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
SELECT n.chunk_id, n.document_id, n.chunk_no, n.text, n.title, n.doc_type, n.chat_id, n.visibility, n.message_version_id, n.file_unique_id, n.url,
       f.file_name, 1 - n.distance AS score
FROM nearest n
LEFT JOIN tg.files f ON f.tenant_id = $1 AND f.file_unique_id = n.file_unique_id
ORDER BY n.distance, n.chunk_id`;

/**
 * Exact route: every visible row's chunk id (text: exact) and vector. $1 tenant, $2 model, $3 tg_user_id
 * (exact decimal string), $4 is_admin, $5 channel, $6 the group's chat_id (exact decimal string, null for dm).
 */
export const VISIBLE_EMBEDDINGS = `
SELECT e.chunk_id::text AS chunk_id, e.embedding
FROM kg.chunk_embeddings_1536_exact e
JOIN kg.chunks c ON c.id = e.chunk_id AND c.tenant_id = $1
JOIN content.documents d ON d.id = c.document_id AND d.tenant_id = $1
WHERE e.tenant_id = $1 AND e.model_id = $2
  AND ${visibleTo({ tenant: '$1', user: '$3', admin: '$4', channel: '$5', chat: '$6' })}`;

/** Exact route: the chosen chunks, the ACL filter applied again. $1 tenant, $2 user, $3 is_admin, $4 channel, $5 chat, $6 chunk ids (bigint[]). Columns: CHUNK_COLUMNS and file_name (as SEARCH_CHUNKS). */
export const CHUNK_DETAILS = `
SELECT ${CHUNK_COLUMNS}, f.file_name
FROM kg.chunks c
JOIN content.documents d ON d.id = c.document_id AND d.tenant_id = $1
LEFT JOIN content.urls u ON u.id = d.url_id
LEFT JOIN tg.files f ON f.tenant_id = d.tenant_id AND f.file_unique_id = d.file_unique_id
WHERE c.tenant_id = $1 AND c.id = ANY($6::bigint[])
  AND ${visibleTo({ tenant: '$1', user: '$2', admin: '$3', channel: '$4', chat: '$5' })}`;

// --- hybrid retrieval: PostgreSQL full-text rank combined with the vector score (WF51, issue 30) ---

/**
 * The question as a full-text query, SQL over placeholder `param` (the question's text): PostgreSQL's
 * 'english' configuration parses it (stop words dropped, words stemmed: plainto_tsquery) and its lexemes are
 * OR-ed (`&` → `|`: a chunk need not hold every word of a question to rank). A question of stop words only
 * is the empty query, which matches and ranks nothing.
 */
function questionQuery(param: string): string {
	return `replace(plainto_tsquery('english', ${param}::text)::text, ' & ', ' | ')::tsquery`;
}

/**
 * A chunk's lexical score against `query`, 0 to about 0.61: PostgreSQL's ts_rank over the chunk text's 'english'
 * tsvector with its positions stripped and every weight 1 — so each question lexeme the chunk holds counts once,
 * however often it repeats (a long chunk repeating one word does not outrank a short one holding several), and
 * ts_rank divides by the number of the question's lexemes: about 0.61 × the share of them the chunk holds. The
 * tsvector is the expression migration 024 indexes (GIN), used by the `@@` match.
 */
function lexicalRank(text: string, query: string): string {
	return `ts_rank('{1,1,1,1}', strip(to_tsvector('english', ${text})), ${query})`;
}

/** The hybrid score, SQL: (1 − w) × cosine + w × lexical, w = the placeholder `weight` (0–1). */
function hybridScore(cosine: string, lexical: string, weight: string): string {
	return `(1 - ${weight}::float8) * (${cosine}) + ${weight}::float8 * (${lexical})`;
}

/**
 * pgvector route, hybrid (retrieval `hybrid`): the candidates are the union of the `$9` nearest chunks by
 * cosine distance (the HNSW scan, as SEARCH_CHUNKS) and the `$9` best by full-text rank (migration 024's GIN
 * index), both filtered by `visibleTo` and then re-checked; each scored (1 − $11) × cosine + $11 × lexical,
 * the `$6` best returned, best first, ties by chunk id. $1 tenant, $2 model, $3 query vector "[…]", $4
 * tg_user_id (exact decimal string), $5 is_admin, $6 k, $7 channel, $8 the group's chat_id (exact decimal
 * string, null for dm), $9 candidates per list, $10 the question's text, $11 the lexical weight (0–1).
 * Columns: as SEARCH_CHUNKS (score = the hybrid score), and cosine, lexical.
 */
export const SEARCH_CHUNKS_HYBRID = `
WITH q AS MATERIALIZED (SELECT ${questionQuery('$10')} AS query),
nearest AS MATERIALIZED (
  SELECT e.chunk_id
  FROM kg.chunk_embeddings_1536 e
  JOIN kg.chunks c ON c.id = e.chunk_id AND c.tenant_id = $1
  JOIN content.documents d ON d.id = c.document_id AND d.tenant_id = $1
  WHERE e.tenant_id = $1 AND e.model_id = $2
    AND ${visibleTo({ tenant: '$1', user: '$4', admin: '$5', channel: '$7', chat: '$8' })}
  ORDER BY e.embedding <=> $3::vector
  LIMIT $9
),
lexical AS MATERIALIZED (
  SELECT c.id AS chunk_id
  FROM kg.chunks c
  JOIN content.documents d ON d.id = c.document_id AND d.tenant_id = $1
  CROSS JOIN q
  WHERE c.tenant_id = $1 AND to_tsvector('english', c.text) @@ q.query
    AND ${visibleTo({ tenant: '$1', user: '$4', admin: '$5', channel: '$7', chat: '$8' })}
  ORDER BY ${lexicalRank('c.text', 'q.query')} DESC, c.id
  LIMIT $9
),
scored AS (
  SELECT ${CHUNK_COLUMNS}, 1 - (e.embedding <=> $3::vector) AS cosine, ${lexicalRank('c.text', 'q.query')} AS lexical
  FROM (SELECT chunk_id FROM nearest UNION SELECT chunk_id FROM lexical) x
  JOIN kg.chunk_embeddings_1536 e ON e.chunk_id = x.chunk_id AND e.model_id = $2 AND e.tenant_id = $1
  JOIN kg.chunks c ON c.id = e.chunk_id AND c.tenant_id = $1
  JOIN content.documents d ON d.id = c.document_id AND d.tenant_id = $1
  LEFT JOIN content.urls u ON u.id = d.url_id
  CROSS JOIN q
  WHERE ${visibleTo({ tenant: '$1', user: '$4', admin: '$5', channel: '$7', chat: '$8' })}
)
SELECT s.chunk_id, s.document_id, s.chunk_no, s.text, s.title, s.doc_type, s.chat_id, s.visibility, s.message_version_id, s.file_unique_id, s.url,
       f.file_name, ${hybridScore('s.cosine', 's.lexical', '$11')} AS score, s.cosine, s.lexical
FROM scored s
LEFT JOIN tg.files f ON f.tenant_id = $1 AND f.file_unique_id = s.file_unique_id
ORDER BY score DESC, s.chunk_id
LIMIT $6`;

/**
 * Exact route, hybrid: as VISIBLE_EMBEDDINGS (every visible row's chunk id and vector, the ACL filter first)
 * with each row's full-text rank against the question ($7, text; lexicalRank). The node combines it with the cosine
 * it computes (vectorStore.ts). Columns: chunk_id (text), embedding, lexical.
 */
export const VISIBLE_EMBEDDINGS_HYBRID = `
SELECT e.chunk_id::text AS chunk_id, e.embedding, ${lexicalRank('c.text', 'q.query')} AS lexical
FROM kg.chunk_embeddings_1536_exact e
JOIN kg.chunks c ON c.id = e.chunk_id AND c.tenant_id = $1
JOIN content.documents d ON d.id = c.document_id AND d.tenant_id = $1
CROSS JOIN (SELECT ${questionQuery('$7')} AS query) q
WHERE e.tenant_id = $1 AND e.model_id = $2
  AND ${visibleTo({ tenant: '$1', user: '$3', admin: '$4', channel: '$5', chat: '$6' })}`;

// --- retention (WF60) ---

/** Documents (with their chunks and embeddings) past the chat policy's document retention, by created_at: one batch (core.retentionBatch). */
export const PRUNE_DOCUMENTS = retentionBatch({
	table: 'content.documents',
	from: 'content.documents t',
	tenant: 't.tenant_id',
	chat: 't.chat_id',
	age: 't.created_at',
	policy: 'documents',
});
