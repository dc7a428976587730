/**
 * The statements of tg.* (seed 003 WF20: Telegram's users, chats, messages and their versions, files and
 * attachments, member events and current memberships), as named texts, in one place as pg-boss keeps its
 * `plans`. Bind parameters only. Users: the Knowledge Bot's Update → Process (WF20, one transaction: each is
 * keyed so that a replayed update changes nothing — conflicting inserts do nothing, upserts update only when
 * a value differs), File → Download (WF32), Q&A → Answer (WF51) and Retention → Prune (WF60).
 */
import { retentionBatch } from './core';

// --- Update → Process (WF20) ---

/** $1 tenant_id, $2 users as a JSON array of Telegram User objects. */
export const UPSERT_USERS = `
INSERT INTO tg.users AS t (tenant_id, tg_user_id, is_bot, username, first_name, last_name, language_code)
SELECT $1, u.id, coalesce(u.is_bot, false), u.username, u.first_name, u.last_name, u.language_code
FROM jsonb_to_recordset($2::jsonb) AS u(id bigint, is_bot boolean, username text, first_name text, last_name text, language_code text)
ON CONFLICT (tenant_id, tg_user_id) DO UPDATE SET
  is_bot = EXCLUDED.is_bot, username = EXCLUDED.username, first_name = EXCLUDED.first_name,
  last_name = EXCLUDED.last_name, language_code = EXCLUDED.language_code, updated_at = now()
WHERE (t.is_bot, t.username, t.first_name, t.last_name, t.language_code)
  IS DISTINCT FROM (EXCLUDED.is_bot, EXCLUDED.username, EXCLUDED.first_name, EXCLUDED.last_name, EXCLUDED.language_code)`;

/** $1 tenant_id, $2 chat_id, $3 chat_type, $4 title, $5 username. */
export const UPSERT_CHAT = `
INSERT INTO tg.chats AS c (tenant_id, chat_id, chat_type, title, username) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (tenant_id, chat_id) DO UPDATE SET
  chat_type = EXCLUDED.chat_type, title = EXCLUDED.title, username = EXCLUDED.username, updated_at = now()
WHERE (c.chat_type, c.title, c.username) IS DISTINCT FROM (EXCLUDED.chat_type, EXCLUDED.title, EXCLUDED.username)`;

/** $1 tenant_id, $2 chat_id, $3 message_id, $4 from_user_id, $5 sent_at (Unix s), $6 visibility, $7 dm_owner_user_id. */
export const INSERT_MESSAGE = `
INSERT INTO tg.messages (tenant_id, chat_id, message_id, from_user_id, sent_at, visibility, dm_owner_user_id)
VALUES ($1, $2, $3, $4, to_timestamp($5), $6, $7)
ON CONFLICT (tenant_id, chat_id, message_id) DO NOTHING`;

/** The message $3 of chat $2 of tenant $1. Column: id (message_fk). */
export const FIND_MESSAGE = 'SELECT id FROM tg.messages WHERE tenant_id = $1 AND chat_id = $2 AND message_id = $3';

/** $1 message_fk, $2 version_no, $3 text, $4 caption, $5 normalized_text, $6 payload, $7 raw_update_id. */
export const INSERT_VERSION = `
INSERT INTO tg.message_versions (message_fk, version_no, text, caption, normalized_text, payload, raw_update_id)
VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)
ON CONFLICT (message_fk, version_no) DO NOTHING`;

/** Version $2 of message $1. Column: id (message_version_id). */
export const FIND_VERSION = 'SELECT id FROM tg.message_versions WHERE message_fk = $1 AND version_no = $2';

/** Files of the attachments: $1 tenant_id, $2 attachments as a JSON array (kind, file_id, file_unique_id, file_name, mime_type, file_size). */
export const UPSERT_FILES = `
WITH a AS (
  SELECT * FROM jsonb_to_recordset($2::jsonb)
    AS a(kind text, file_id text, file_unique_id text, file_name text, mime_type text, file_size bigint)
), files AS (
  INSERT INTO tg.files (tenant_id, file_unique_id, file_name, mime_type, file_size)
  SELECT DISTINCT ON (file_unique_id) $1::uuid, file_unique_id, file_name, mime_type, file_size FROM a
  ON CONFLICT (tenant_id, file_unique_id) DO NOTHING
  RETURNING file_unique_id
), instances AS (
  INSERT INTO tg.file_instances (tenant_id, file_unique_id, file_id)
  SELECT DISTINCT $1::uuid, file_unique_id, file_id FROM a
  ON CONFLICT (tenant_id, file_unique_id, file_id) DO NOTHING
  RETURNING id
)
SELECT (SELECT count(*) FROM files) AS files, (SELECT count(*) FROM instances) AS instances`;

/** $1 tenant_id, $2 message_version_id, $3 attachments: after UPSERT_FILES (a CTE cannot see its siblings' rows). */
export const INSERT_ATTACHMENTS = `
INSERT INTO tg.message_attachments (message_version_id, kind, tenant_id, file_unique_id, file_id)
SELECT $2, a.kind, $1, a.file_unique_id, a.file_id
FROM jsonb_to_recordset($3::jsonb) AS a(kind text, file_id text, file_unique_id text)
ON CONFLICT (message_version_id, kind, file_unique_id) DO NOTHING`;

/**
 * Member changes: $1 tenant_id, $2 chat_id, $3 raw_update_id, $4 JSON array of { tg_user_id, old_status,
 * new_status, is_member, date }, $5 the update's update_id, $6 the bot that received it (core.bots.bot_id,
 * null when unknown). An event (user, time, new status) is recorded once. The current membership (status and
 * Telegram's is_member flag, migration 010: a restricted user who left is not a member) moves only forward in
 * (date, update_id) order: Telegram's `date` is whole seconds and updates are processed out of order
 * (retries, overlapping runs), so within one second the higher update_id wins — Telegram numbers a bot's
 * updates in the order it sends them, so only ids of the same known bot compare. When a tie's order is
 * unknown (another bot, an unknown bot, or a row written without them: before migration 010, or by hand) the
 * non-member state wins: membership is never granted on a guess. A replay of the same update changes nothing.
 * Columns: events, memberships (rows written).
 */
export const RECORD_MEMBERS = `
WITH m AS (
  SELECT * FROM jsonb_to_recordset($4::jsonb) AS m(tg_user_id bigint, old_status text, new_status text, is_member boolean, date bigint)
), events AS (
  INSERT INTO tg.chat_member_events (tenant_id, chat_id, tg_user_id, old_status, new_status, event_date, raw_update_id)
  SELECT $1, $2, tg_user_id, old_status, new_status, to_timestamp(date), $3 FROM m
  ON CONFLICT (tenant_id, chat_id, tg_user_id, event_date, new_status) DO NOTHING
  RETURNING id
), current AS (
  INSERT INTO tg.chat_memberships_current AS c (tenant_id, chat_id, tg_user_id, status, is_member, updated_at, source_update_id, source_bot_id)
  SELECT $1, $2, tg_user_id, new_status, is_member, to_timestamp(date), $5::bigint, $6::uuid FROM m
  ON CONFLICT (tenant_id, chat_id, tg_user_id) DO UPDATE SET
    status = EXCLUDED.status, is_member = EXCLUDED.is_member, updated_at = EXCLUDED.updated_at,
    source_update_id = EXCLUDED.source_update_id, source_bot_id = EXCLUDED.source_bot_id
  WHERE c.updated_at < EXCLUDED.updated_at
     OR (c.updated_at = EXCLUDED.updated_at AND CASE
           WHEN c.source_update_id IS NOT NULL AND EXCLUDED.source_update_id IS NOT NULL
                AND c.source_bot_id IS NOT NULL AND c.source_bot_id = EXCLUDED.source_bot_id
             THEN c.source_update_id < EXCLUDED.source_update_id
           ELSE c.is_member AND NOT EXCLUDED.is_member
         END)
  RETURNING tg_user_id
)
SELECT (SELECT count(*) FROM events)::int AS events, (SELECT count(*) FROM current)::int AS memberships`;

// --- File → Download (WF32) ---

/** The file's path as getFile answered it: $1 tenant_id, $2 file_unique_id, $3 file_id, $4 tg_file_path; last_seen_at moved. */
export const TOUCH_FILE_INSTANCE = `
UPDATE tg.file_instances SET tg_file_path = $4, last_seen_at = now()
WHERE tenant_id = $1 AND file_unique_id = $2 AND file_id = $3`;

// --- Q&A → Answer (WF51) ---

/** The Telegram message_id to reply to: $1 message version, only of $2 tenant and $3 chat (exact decimal string). Column: message_id. */
export const REPLY_TARGET =
	'SELECT m.message_id FROM tg.message_versions v JOIN tg.messages m ON m.id = v.message_fk WHERE v.id = $1 AND m.tenant_id = $2 AND m.chat_id = $3::bigint';

// --- Retention → Prune (WF60) ---

/** Messages (with their versions and attachments) past the chat policy's raw retention, by sent_at: one batch (core.retentionBatch). */
export const PRUNE_MESSAGES = retentionBatch({
	table: 'tg.messages',
	from: 'tg.messages t',
	tenant: 't.tenant_id',
	chat: 't.chat_id',
	age: 't.sent_at',
	policy: 'raw',
});

/** Member events past the chat policy's raw retention, by event_date: one batch (core.retentionBatch). */
export const PRUNE_MEMBER_EVENTS = retentionBatch({
	table: 'tg.chat_member_events',
	from: 'tg.chat_member_events t',
	tenant: 't.tenant_id',
	chat: 't.chat_id',
	age: 't.event_date',
	policy: 'raw',
});
