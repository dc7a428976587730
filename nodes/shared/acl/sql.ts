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

/** Chat policy when core.chat_policies has no row (seed 003 WF00c output). */
export const DEFAULT_CHAT_POLICY = {
	allow_url_fetch: true,
	allow_file_download: true,
	allow_embedding: true,
	retention_days_raw: 90,
	retention_days_documents: 3650,
} as const;
