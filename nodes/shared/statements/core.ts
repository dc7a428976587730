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
