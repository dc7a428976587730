/**
 * Where the SQL of each table lives (issue 28, "one home per table"): table → its statements module under
 * nodes/shared/statements/. A statement that writes a table (INSERT INTO, UPDATE, DELETE FROM) is in that
 * table's module; a read is in the module of the first table it reads (FROM); joins may name other tables.
 * No SQL naming one of these tables appears outside nodes/shared/statements/ (and db/migrations/):
 * test/unit/sqlHomes.test.ts reads every .ts file under nodes/ and holds the code to this map.
 * Every table the migrations create is listed (the test checks db/migrations/ against it).
 */
export const TABLE_HOMES = Object.freeze({
	// the ops.jobs queue (seed 003 ops.jobs; migrations 001, 008, 020, 021)
	'ops.jobs': 'jobs',
	'ops.job_runs': 'jobs',
	'ops.job_lease_absences': 'jobs',
	// ErrorEnvelope rows (seed 002) and which execution recorded them (migration 018)
	'ops.errors': 'errors',
	'ops.error_executions': 'errors',
	// the seed-001 pipeline run and its events
	'maas.pipeline_runs': 'pipelineRuns',
	'maas.raw_logs': 'pipelineRuns',
	'maas.lsm_storage': 'pipelineRuns',
	'maas.system_prompts': 'pipelineRuns',
	// Prometheus figures kept in the database (migration 017)
	'maas.metric_counters': 'metrics',
	'maas.metric_job_runs_live': 'metrics',
	'maas.metric_models': 'metrics',
	// one row per model call (migration 016)
	'maas.llm_calls': 'llmCalls',
	// seed-004 WorkflowDefinitions
	'ops.workflow_definitions': 'workflowDefinitions',
	// Telegram updates as received (WF10)
	'raw.telegram_updates': 'telegramRaw',
	'raw.telegram_update_keys': 'telegramRaw',
	'raw.telegram_quarantine': 'telegramRaw',
	// tenants, bots and the chat policies of seed 003 §0
	'core.tenants': 'core',
	'core.tenant_users': 'core',
	'core.tenant_chats': 'core',
	'core.chat_policies': 'core',
	'core.bots': 'core',
	// the bot's transport (webhook or polling) and its health
	'core.bot_transport_config': 'botTransport',
	'core.bot_transport_state': 'botTransport',
	'ops.bot_transport_events': 'botTransport',
	'ops.webhook_health_snapshots': 'botTransport',
	// Telegram's chats, users, messages and files (WF11)
	'tg.chats': 'tg',
	'tg.users': 'tg',
	'tg.messages': 'tg',
	'tg.message_versions': 'tg',
	'tg.message_attachments': 'tg',
	'tg.files': 'tg',
	'tg.file_instances': 'tg',
	'tg.chat_member_events': 'tg',
	'tg.chat_memberships_current': 'tg',
	// documents, their chunks and embeddings (WF20–WF40)
	'content.urls': 'content',
	'content.url_fetches': 'content',
	'content.blob_objects': 'content',
	'content.documents': 'content',
	'kg.chunks': 'content',
	'kg.embedding_models': 'content',
	'kg.chunk_embeddings_1536': 'content',
	'kg.chunk_embeddings_1536_exact': 'content',
	// questions, answers and their citations (WF50)
	'audit.qa_sessions': 'qa',
	'audit.qa_turns': 'qa',
	'audit.qa_citations': 'qa',
} as const);

/** A table named in TABLE_HOMES. */
export type TableName = keyof typeof TABLE_HOMES;

/** The statements module (file name without .ts under nodes/shared/statements/) of a table. */
export type StatementsModule = (typeof TABLE_HOMES)[TableName];
