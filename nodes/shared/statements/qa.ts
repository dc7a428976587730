/**
 * The statements of audit.qa_* (seed 003 WF50, WF51: a user's Q&A session per chat, its turns and their
 * citations), as named texts, in one place as pg-boss keeps its `plans`. Bind parameters only. Users: the
 * Knowledge Bot's Q&A session (qa/session.ts), Q&A → Answer and Retention → Prune (WF60).
 */
import { retentionBatch } from './core';

/**
 * The session of a user in a chat, one row per (tenant, user, chat): `last_at` moved, `channel` set and `meta`
 * merged on every question. $1 tenant_id, $2 tg_user_id and $4 chat_id as exact decimal strings (a DM's chat
 * is the user's own id), $3 channel ('group' | 'dm'), $5 meta (jsonb). Columns: session_id, created.
 */
export const UPSERT_SESSION = `
INSERT INTO audit.qa_sessions AS s (tenant_id, tg_user_id, channel, chat_id, meta) VALUES ($1, $2::bigint, $3, $4::bigint, $5::jsonb)
ON CONFLICT (tenant_id, tg_user_id, chat_id) DO UPDATE SET last_at = now(), channel = EXCLUDED.channel, meta = s.meta || EXCLUDED.meta
RETURNING session_id, (xmax = 0) AS created`;

/**
 * The turn of session $1 for question message version $2 (a retried job finds it), with its citations.
 * Columns: id, answer_text, telegram_message_id, citations (jsonb array of { rank, chunk_id, score, snippet,
 * source_ref }, by rank).
 */
export const FIND_TURN = `
SELECT t.id, t.answer_text, t.telegram_message_id,
       coalesce((SELECT jsonb_agg(jsonb_build_object('rank', c.rank, 'chunk_id', c.chunk_id, 'score', c.score, 'snippet', c.snippet, 'source_ref', c.source_ref) ORDER BY c.rank)
                 FROM audit.qa_citations c WHERE c.turn_id = t.id), '[]'::jsonb) AS citations
FROM audit.qa_turns t WHERE t.session_id = $1 AND t.question_message_version_id = $2`;

/** The turn and its citations in one statement. $1 session, $2 question, $3 version, $4 answer, $5 model, $6 correlation, $7 citations JSON. Columns: id, citations (count). */
export const INSERT_TURN = `
WITH turn AS (
  INSERT INTO audit.qa_turns (session_id, question, question_message_version_id, answer_text, model, correlation_id)
  VALUES ($1, $2, $3, $4, $5, $6) RETURNING id
), cites AS (
  INSERT INTO audit.qa_citations (turn_id, rank, chunk_id, score, snippet, source_ref)
  SELECT turn.id, c.rank, c.chunk_id, c.score, c.snippet, c.source_ref
  FROM turn, jsonb_to_recordset($7::jsonb) AS c(rank int, chunk_id bigint, score float8, snippet text, source_ref jsonb)
  RETURNING rank
)
SELECT turn.id, (SELECT count(*) FROM cites)::int AS citations FROM turn`;

/** The Telegram message_id $2 of the reply sent for turn $1. */
export const SET_TURN_MESSAGE = 'UPDATE audit.qa_turns SET telegram_message_id = $2 WHERE id = $1';

/** Q&A turns (with their citations) past the chat policy's document retention, by created_at: one batch (core.retentionBatch). */
export const PRUNE_QA_TURNS = retentionBatch({
	table: 'audit.qa_turns',
	from: 'audit.qa_turns t JOIN audit.qa_sessions s ON s.session_id = t.session_id',
	tenant: 's.tenant_id',
	chat: 's.chat_id',
	age: 't.created_at',
	policy: 'documents',
});
