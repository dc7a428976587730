/**
 * The statements of core.* (seed 003 §0: tenants, their users and chats, chat policies, bots), as named
 * texts. Bind parameters only. Users: Telegram Ingest (LOOKUP_BOT, WF10) and the ctx/ACL of WF00c
 * (LOAD_CONTEXT, nodes/shared/acl/loadContext.ts).
 */

/** Resolves a bot by its webhook key (one round trip). Columns: bot_id, tenant_id, webhook_secret, enabled. */
export const LOOKUP_BOT = `
SELECT b.bot_id, b.tenant_id, b.webhook_secret, (b.is_enabled AND t.is_enabled) AS enabled
FROM core.bots b JOIN core.tenants t ON t.tenant_id = b.tenant_id
WHERE b.bot_key = $1`;

/**
 * The Context Loader's one round trip (seed 003 WF00c): tenant, the user's role, the chat's registration,
 * the user's current membership and the chat policy, in one statement (LEFT JOINs: a missing row is null).
 * $1 tenant_id (uuid), $2 tg_user_id and $3 chat_id as exact decimal strings (cast ::bigint, never a JS
 * number). Membership is Telegram's own flag (migration 010), so a restricted user who left is not a member.
 */
export const LOAD_CONTEXT = `
SELECT
  t.tenant_id IS NOT NULL AS tenant_exists,
  coalesce(t.is_enabled, false) AS tenant_enabled,
  tu.role,
  tc.chat_id IS NOT NULL AS chat_registered,
  coalesce(tc.is_enabled, false) AS chat_enabled,
  coalesce(m.is_member, false) AS is_member,
  CASE WHEN cp.chat_id IS NULL THEN NULL ELSE json_build_object(
    'allow_url_fetch', cp.allow_url_fetch,
    'allow_file_download', cp.allow_file_download,
    'allow_embedding', cp.allow_embedding,
    'retention_days_raw', cp.retention_days_raw,
    'retention_days_documents', cp.retention_days_documents) END AS chat_policy
FROM (SELECT $1::uuid AS tenant_id) q
LEFT JOIN core.tenants t ON t.tenant_id = q.tenant_id
LEFT JOIN core.tenant_users tu ON tu.tenant_id = q.tenant_id AND tu.tg_user_id = $2::bigint
LEFT JOIN core.tenant_chats tc ON tc.tenant_id = q.tenant_id AND tc.chat_id = $3::bigint
LEFT JOIN tg.chat_memberships_current m ON m.tenant_id = q.tenant_id AND m.chat_id = $3::bigint AND m.tg_user_id = $2::bigint
LEFT JOIN core.chat_policies cp ON cp.tenant_id = q.tenant_id AND cp.chat_id = $3::bigint`;

// --- Knowledge Bot: chat policies and bots (WF20, WF11); retention batches (WF60) ---

/**
 * Update → Process (WF20): whether chat $2 of tenant $1 allows URL fetch and file download (its
 * core.chat_policies row, or the table's defaults: true). Columns: allow_url_fetch, allow_file_download.
 */
export const CHAT_FETCH_POLICY = `
SELECT coalesce(p.allow_url_fetch, true) AS allow_url_fetch, coalesce(p.allow_file_download, true) AS allow_file_download
FROM (SELECT 1) one LEFT JOIN core.chat_policies p ON p.tenant_id = $1 AND p.chat_id = $2`;

/** Update → Process (WF20): the username of bot $1 when it is one of tenant $2's. Column: username. */
export const BOT_USERNAME = 'SELECT username FROM core.bots WHERE bot_id = $1 AND tenant_id = $2';

/**
 * Bot Transport → Check (WF11): the bot by its id $1 (uuid; null: by $2) or by Telegram's id $2 (getMe's id,
 * core.bots.tg_bot_id), with its transport config (defaults: mode webhook, 100 pending updates) and the
 * health of its last check. Columns: bot_id, tenant_id, mode, expected_webhook_url, max_pending_updates,
 * previous_health.
 */
export const BOT_TRANSPORT = `
SELECT b.bot_id, b.tenant_id, coalesce(c.mode, 'webhook') AS mode, c.expected_webhook_url, coalesce(c.max_pending_updates, 100) AS max_pending_updates, s.health AS previous_health
FROM core.bots b
LEFT JOIN core.bot_transport_config c ON c.bot_id = b.bot_id
LEFT JOIN core.bot_transport_state s ON s.bot_id = b.bot_id
WHERE ($1::uuid IS NOT NULL AND b.bot_id = $1) OR ($1::uuid IS NULL AND b.tg_bot_id = $2::bigint)`;

/** Which retention period of core.chat_policies applies to a table's rows (seed 003 WF60). */
export type RetentionPolicy = 'raw' | 'documents';

/**
 * A table's rows past the retention of their chat's policy, as `retentionBatch` deletes them. Every field is
 * SQL written in the statements module of `table` (never input): the rows' tenant, chat and age columns over
 * alias `t` of `from` (joins allowed).
 */
export interface RetentionTarget {
	/** the table deleted from (its statements module builds the batch) */
	table: string;
	/** the row source, the table as `t` (`tg.messages t`, or with joins) */
	from: string;
	tenant: string;
	chat: string;
	age: string;
	policy: RetentionPolicy;
	/** further condition over `t` */
	where?: string;
}

/** One retention batch of a table (Retention → Prune, WF60), built by `retentionBatch`. */
export interface RetentionBatch {
	table: string;
	policy: RetentionPolicy;
	/** $1 tenant|null (every tenant), $2 chat|null (every chat), $3 batch size, $4 default days. Deletes, no columns. */
	sql: string;
}

/**
 * Retention → Prune (WF60), one batch of one table: up to $3 rows of `target.table` (ordered by id, `FOR
 * UPDATE SKIP LOCKED`: beside the workers) whose age is past the chat policy's retention days
 * (core.chat_policies.retention_days_raw or retention_days_documents; $4, the column's default, for a chat
 * without a policy row), of tenant $1 and chat $2 (null: all), deleted in one statement. The table's
 * statements module calls this with its own SQL (the statement is that table's).
 */
export function retentionBatch(t: RetentionTarget): RetentionBatch {
	const column = t.policy === 'raw' ? 'retention_days_raw' : 'retention_days_documents';
	const sql = `
WITH victims AS (
  SELECT t.id FROM ${t.from}
  LEFT JOIN core.chat_policies p ON p.tenant_id = ${t.tenant} AND p.chat_id = ${t.chat}
  WHERE ($1::uuid IS NULL OR ${t.tenant} = $1) AND ($2::bigint IS NULL OR ${t.chat} = $2)
    AND ${t.age} < now() - make_interval(days => coalesce(p.${column}, $4::int))${
			t.where
				? `
    AND ${t.where}`
				: ''
		}
  ORDER BY t.id
  LIMIT $3
  FOR UPDATE OF t SKIP LOCKED
)
DELETE FROM ${t.table} d USING victims v WHERE d.id = v.id`;
	return Object.freeze({ table: t.table, policy: t.policy, sql });
}
