-- 011: chunk embeddings without pgvector (issue 12). Always applies. Where migration 007 could not run
-- (no `vector` extension on the server: this project's PostgreSQL 15 and the embedded PostgreSQL), WF41
-- stores the vectors here and WF51 searches them exactly: the ACL filter selects the visible rows in SQL,
-- the node computes the cosine of each visible row and keeps the k nearest (nodes/KnowledgeBot/actions/
-- vectorStore.ts). Where kg.chunk_embeddings_1536 (007, pgvector + HNSW) exists, it is used and this
-- table stays empty. The route is chosen per database, by whether 007's table exists.
-- embedding: the 1536 components as IEEE-754 float32, little-endian, 4 bytes each (6144 bytes) — measured
-- 3–4x faster to read and score than real[] scored in SQL (bench/vectorSearch.bench.ts).

CREATE TABLE kg.chunk_embeddings_1536_exact (
  chunk_id      bigint NOT NULL REFERENCES kg.chunks(id) ON DELETE CASCADE,
  model_id      integer NOT NULL REFERENCES kg.embedding_models(id),
  tenant_id     uuid NOT NULL,
  embedding     bytea NOT NULL CHECK (octet_length(embedding) = 6144),
  -- kg.chunks.text_sha256 the vector was computed from: a changed chunk is embedded again
  chunk_sha256  text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (chunk_id, model_id)
);
-- out of line (TOAST), uncompressed (float32 noise does not compress): the heap stays small, so the ACL
-- filter scans ids, not vectors, and only the visible rows' vectors are read. Measured at 100k rows with 1%
-- visible: 63 ms out of line vs 345 ms inline (STORAGE PLAIN, one row per page); all visible, inline was
-- only ~20% faster.
ALTER TABLE kg.chunk_embeddings_1536_exact ALTER COLUMN embedding SET STORAGE EXTERNAL;
CREATE INDEX chunk_embeddings_1536_exact_tenant_idx ON kg.chunk_embeddings_1536_exact (tenant_id, model_id);
