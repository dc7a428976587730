/** Chat policy when core.chat_policies has no row (seed 003 WF00c output). */
export const DEFAULT_CHAT_POLICY = {
	allow_url_fetch: true,
	allow_file_download: true,
	allow_embedding: true,
	retention_days_raw: 90,
	retention_days_documents: 3650,
} as const;
