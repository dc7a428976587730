/**
 * Who may read a chunk (seed 003 §0.2), as one SQL predicate over `d` (content.documents) shared by both
 * vector routes (vectorSql.ts: pgvector HNSW; exactSql.ts: no extension), so they cannot drift apart.
 * The reply of WF51 goes to the chat of the request, so the request's channel and chat decide:
 *  - `group` (channel = 'group', chat = the group): ONLY `group` documents of that chat — never a dm, never
 *    another group, whoever asks (a tenant admin too: every member of the group reads the answer and its
 *    Sources) — and the asker a current member of it (tg.chat_memberships_current.is_member: Telegram's flag,
 *    migration 010 — a `restricted` user who left is not a member, nor is `left` or `kicked`) or an admin;
 *  - `dm` (only the asker reads the reply; chat plays no part): the asker's own `dm` documents and the
 *    `group` documents of every chat the asker is a current member of; a tenant admin sees every document
 *    of the tenant.
 * Any other channel, or a group without chat, matches nothing. The caller also restricts `d` to the tenant.
 */

/** The placeholders (`$n`) of the predicate's inputs in the statement that embeds it. */
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

/** The predicate, with the placeholders given (fixed `$n` names only, never values). */
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

/** The columns of a retrieved chunk (RetrievedChunk without score), over `c`, `d` and `u` (content.urls). */
export const CHUNK_COLUMNS = `c.id AS chunk_id, c.document_id, c.chunk_no, c.text, d.title, d.doc_type, d.chat_id, d.visibility,
       d.message_version_id, d.file_unique_id, u.normalized_url AS url`;
