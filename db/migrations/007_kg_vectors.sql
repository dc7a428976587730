-- requires-extension: vector
-- 007: chunk embeddings in pgvector (seed 003 WF41/WF51). Needs the `vector` extension (pgvector) on
-- the server. Where the server does not have it, `npm run db:migrate` says so, skips this file without
-- recording it (everything else migrates), and applies it on a later run once pgvector is installed.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE kg.chunk_embeddings_1536 (
  chunk_id    bigint NOT NULL REFERENCES kg.chunks(id) ON DELETE CASCADE,
  model_id    integer NOT NULL REFERENCES kg.embedding_models(id),
  tenant_id   uuid NOT NULL,
  embedding   vector(1536) NOT NULL,
  -- kg.chunks.text_sha256 the vector was computed from: a changed chunk is embedded again
  chunk_sha256  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (chunk_id, model_id)
);
-- Cosine distance (`<=>`), the metric of the search in WF51.
CREATE INDEX chunk_embeddings_1536_hnsw ON kg.chunk_embeddings_1536 USING hnsw (embedding vector_cosine_ops);
