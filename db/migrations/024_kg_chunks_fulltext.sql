-- 024: full-text index of the chunks' text for Q&A → Answer's hybrid retrieval (issue 30): PostgreSQL's
-- 'english' text-search configuration (stop words, Snowball stemming). The expression is the one
-- nodes/shared/statements/content.ts ranks and matches (to_tsvector('english', text)), so the planner can
-- use the index for the `@@` of the lexical candidates (SEARCH_CHUNKS_HYBRID).
CREATE INDEX chunks_text_english_fts ON kg.chunks USING gin (to_tsvector('english', text));
