-- tg.chat_memberships_current.is_member: Telegram's own flag, stored (seed 003 §0.2; issue 10 item 4).
--
-- Migration 005 generated it as status IN (creator, administrator, member, restricted). Telegram's
-- ChatMemberRestricted carries its own is_member: a restricted user who LEFT the chat (is_member: false)
-- was counted a member, so Context Loader (WF00c) admitted them and the vector search (WF51) showed them
-- the chat's chunks. From now on the column is written by Update → Process (WF20) from the update:
--   creator / administrator / member → true; left / kicked → false; restricted → its is_member.
--
-- Backfill of the rows that exist (the generated values are kept as stored values first):
--   - every status but restricted: as before (the status alone decides);
--   - restricted: the is_member of the stored raw ChatMember — the newest chat_member / my_chat_member
--     update in raw.telegram_updates (through tg.chat_member_events.raw_update_id) whose new_chat_member is
--     this user, restricted; when no such update is kept (pruned, or the row was written by hand) the
--     flag is unknown and the row is NOT a member (false): membership is never granted on a guess.
--
-- tg.chat_memberships_current.source_update_id and source_bot_id: the update_id of the Telegram update the
-- row comes from, and the bot that received it (issue 10, review of item 4). Telegram's `date` is whole
-- seconds and WF20 processes updates out of order (retries with backoff, overlapping runs), so a kick and a
-- join in the same second must be ordered by (date, update_id), never by "last processed wins". update_ids
-- are numbered per bot, so two ids compare only when the same known bot received both. Rows that exist keep
-- NULL (order unknown): on a tie whose order is unknown the non-member state wins (RECORD_MEMBERS in
-- nodes/KnowledgeBot/actions/update/sql.ts).
--
-- A writer that names only the status (fixtures, scripts) still gets a consistent flag: a trigger derives
-- it from the status, except for restricted, where a given flag is kept and a missing one is false. The
-- CHECK makes any other combination (e.g. left with is_member true) impossible.

ALTER TABLE tg.chat_memberships_current ALTER COLUMN is_member DROP EXPRESSION;

ALTER TABLE tg.chat_memberships_current ADD COLUMN source_update_id bigint, ADD COLUMN source_bot_id uuid;

COMMENT ON COLUMN tg.chat_memberships_current.source_update_id IS
  'update_id of the Telegram update this state comes from: with updated_at (Telegram''s date, whole seconds) it orders changes of one second; NULL = unknown (on such a tie the non-member state wins). Written by WF20; migration 010.';
COMMENT ON COLUMN tg.chat_memberships_current.source_bot_id IS
  'core.bots.bot_id that received the update of source_update_id (update_ids are numbered per bot: ids of two bots, or of an unknown bot, do not compare). Written by WF20; migration 010.';

UPDATE tg.chat_memberships_current c
SET is_member = coalesce((
  SELECT (cm.member->'is_member') = 'true'::jsonb
  FROM tg.chat_member_events e
  JOIN raw.telegram_updates u ON u.id = e.raw_update_id AND u.tenant_id = e.tenant_id
  CROSS JOIN LATERAL (SELECT coalesce(u.update->'chat_member', u.update->'my_chat_member')->'new_chat_member' AS member) cm
  WHERE e.tenant_id = c.tenant_id AND e.chat_id = c.chat_id AND e.tg_user_id = c.tg_user_id
    AND e.new_status = 'restricted'
    AND cm.member->>'status' = 'restricted'
    AND cm.member->'user'->>'id' = c.tg_user_id::text
  ORDER BY e.event_date DESC, e.id DESC
  LIMIT 1), false)
WHERE c.status = 'restricted';

ALTER TABLE tg.chat_memberships_current ALTER COLUMN is_member SET NOT NULL;

ALTER TABLE tg.chat_memberships_current ADD CONSTRAINT chat_memberships_current_is_member_check
  CHECK (status = 'restricted' OR is_member = (status IN ('creator', 'administrator', 'member')));

COMMENT ON COLUMN tg.chat_memberships_current.is_member IS
  'Telegram''s membership: true for creator/administrator/member, false for left/kicked, ChatMemberRestricted.is_member for restricted (unknown = false). Written by WF20; migration 010.';

CREATE FUNCTION tg.chat_membership_flag() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status <> 'restricted' THEN
    NEW.is_member := NEW.status IN ('creator', 'administrator', 'member');
  ELSIF NEW.is_member IS NULL THEN
    NEW.is_member := false;
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER chat_membership_flag BEFORE INSERT OR UPDATE OF status, is_member ON tg.chat_memberships_current
  FOR EACH ROW EXECUTE FUNCTION tg.chat_membership_flag();
