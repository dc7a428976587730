/**
 * WF41 (embed) and WF51 (answer) in a real n8n 2.4.8, through WF90, against stand-ins of the embeddings
 * endpoint, the model and the Bot API. The happy path needs pgvector on the PostgreSQL server (WF41/WF51
 * write and read kg.chunk_embeddings_1536, migration 007); the test PostgreSQL of these machines has none
 * (FACTS.md), so there that test reports itself skipped with the reason — the same SQL runs on PGlite with
 * pgvector in test/integration/vectorSearch.test.ts and answer.test.ts. Without pgvector, the workflows'
 * error paths are checked instead: each ends in WF99 with the node named and the job failed.
 * WF50, WF11 and WF60 are called as sub-workflows (a test webhook → Execute Workflow): their answer, and a
 * database failure injected in each → a 500 ErrorEnvelope and an ops.errors row naming the node.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from 'pg';
import { startBotApi, type BotApiStandIn } from '../helpers/botApiStandIn';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { startEmbeddings, type EmbeddingStandIn } from '../helpers/embeddingStandIn';
import { ModelStandIn } from '../helpers/modelStandIn';
import { startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres } = require('../../scripts/lib/postgres');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');

let hasVector = false;
const NO_VECTOR = 'the PostgreSQL server has no pgvector, so kg.chunk_embeddings_1536 (migration 007) cannot exist; the vector SQL is tested on PGlite instead';
let db: TestDatabase;
let n8n: RunningN8n;
let botApi: BotApiStandIn;
let embeddings: EmbeddingStandIn;
const model = new ModelStandIn();
let bot: Awaited<ReturnType<typeof seedBot>>;

before(
	async () => {
		const server = await resolvePostgres();
		const probe = new Client({ connectionString: server.url });
		await probe.connect();
		const { rows } = await probe.query("SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'vector'");
		await probe.end();
		await server.stop();
		hasVector = rows[0].n > 0;
		db = await setupDatabase();
		bot = await seedBot(db.pool, 'answer_bot', 'answer-Secret_1');
		botApi = await startBotApi();
		embeddings = await startEmbeddings();
		await model.up();
		const workflows = ['WF99_global_err_handler.json', 'WF11_transport_watchdog.json', 'WF41_embedder.json', 'WF50_qa_session_upserter.json', 'WF51_answerer.json', 'WF60_retention.json', 'WF90_job_runner.json'];
		const files = [...workflows.map((f) => path.join(WORKFLOWS, f)), path.join(__dirname, 'workflows', 'test_call_workflow.json')];
		n8n = await startN8n(db.url, files, ['test/call'], [
			harness.telegramCredential(botApi.baseUrl, botApi.token),
			{ id: 'embContracts01', name: 'Contracts Embeddings', type: 'contractsEmbeddingsApi', data: { api: 'gemini', baseUrl: embeddings.baseUrl, apiKey: 'k' } },
			{ id: 'llmContracts01', name: 'Contracts LLM', type: 'contractsLlmApi', data: { api: 'openai', baseUrl: model.url, apiKey: 'sk-stand-in', model: 'stand-in' } },
		]);
	},
	{ timeout: 30 * 60_000 },
);

after(async () => {
	await n8n?.stop();
	await botApi?.close();
	await embeddings?.close();
	await model.down().catch(() => undefined);
	await db?.drop();
});

async function waitForJobs(ids: number[], timeoutMs = 90_000) {
	const deadline = Date.now() + timeoutMs;
	let rows: { id: string; status: string }[] = [];
	while (Date.now() < deadline) {
		rows = (await db.pool.query('SELECT id, status FROM ops.jobs WHERE id = ANY($1)', [ids])).rows;
		if (rows.every((r) => !['queued', 'running'].includes(r.status))) return rows;
		await new Promise((r) => setTimeout(r, 1000));
	}
	assert.fail(`jobs not finished: ${JSON.stringify(rows)}`);
}

test('WF90 → WF41 embeds a document, then WF90 → WF51 answers a member with a citation and replies in Telegram', { timeout: 240_000 }, async (t) => {
	if (!hasVector) {
		t.skip(NO_VECTOR);
		return;
	}
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	const tenant = bot.tenantId;
	await q("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 2, 'user')", [tenant]);
	await q('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, -500)', [tenant]);
	await q("INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, -500, 2, 'member')", [tenant]);
	const modelId = (await q("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536) RETURNING id")).rows[0].id;
	const doc = (await q("INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status, title) VALUES ($1, 'url', 'url:e2e', -500, 'group', 'Restart the worker pool after every schema migration.', 'done', 'Runbook') RETURNING id", [tenant])).rows[0].id;
	await q("INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) VALUES ($1, $2, 0, 'Restart the worker pool after every schema migration.', 0, 53, 'h0')", [tenant, doc]);
	const embed = (await q("INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'document_embed', jsonb_build_object('tenant_id', $2::text, 'document_id', $3::bigint, 'model_id', $4::int)) RETURNING id", [tenant, tenant, doc, modelId])).rows[0].id;
	assert.deepEqual((await waitForJobs([Number(embed)])).map((r) => r.status), ['succeeded']);
	assert.equal((await q('SELECT count(*)::int AS n FROM kg.chunk_embeddings_1536')).rows[0].n, 1);
	model.respond = () => ({ text: 'Restart the worker pool [1].' });
	const ask = (await q("INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'qa_answer', jsonb_build_object('tenant_id', $2::text, 'tg_user_id', 2, 'channel', 'group', 'chat_id', -500, 'question', 'what after a schema migration?')) RETURNING id", [tenant, tenant])).rows[0].id;
	assert.deepEqual((await waitForJobs([Number(ask)])).map((r) => r.status), ['succeeded']);
	const turn = await q('SELECT t.answer_text, t.telegram_message_id IS NOT NULL AS sent, (SELECT count(*)::int FROM audit.qa_citations c WHERE c.turn_id = t.id) AS citations FROM audit.qa_turns t');
	assert.deepEqual(turn.rows, [{ answer_text: 'Restart the worker pool [1].', sent: true, citations: 1 }]);
	assert.match(botApi.sent.at(-1)!.text, /\[1\] Runbook/);
});

test('without pgvector: WF41 ends in WF99 with PGVECTOR_MISSING, WF51 refuses a blocked user with 403; both jobs failed, ops.errors names the node', { timeout: 180_000 }, async (t) => {
	if (hasVector) {
		t.skip('the server has pgvector: the missing-table path cannot happen here');
		return;
	}
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	const tenant = bot.tenantId;
	await q("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 9, 'blocked')", [tenant]);
	const modelId = (await q("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536) RETURNING id")).rows[0].id;
	const doc = (await q("INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status) VALUES ($1, 'url', 'url:nv', -500, 'group', 'x', 'done') RETURNING id", [tenant])).rows[0].id;
	const embed = Number((await q("INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'document_embed', jsonb_build_object('tenant_id', $2::text, 'document_id', $3::bigint, 'model_id', $4::int)) RETURNING id", [tenant, tenant, doc, modelId])).rows[0].id);
	const ask = Number((await q("INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'qa_answer', jsonb_build_object('tenant_id', $2::text, 'tg_user_id', 9, 'channel', 'dm', 'chat_id', 9, 'question', 'anything?')) RETURNING id", [tenant, tenant])).rows[0].id);
	const jobs = await waitForJobs([embed, ask]);
	assert.deepEqual(jobs.map((j) => j.status), ['failed', 'failed']);
	const errors = await q('SELECT job_id, node, status_code, workflow, message FROM ops.errors WHERE job_id = ANY($1) ORDER BY job_id', [[embed, ask]]);
	assert.deepEqual(errors.rows.map((e) => [Number(e.job_id), e.node, e.status_code]), [[embed, 'Embed Chunks', 500], [ask, 'Answer Question', 403]]);
	assert.match(errors.rows[0].message, /007_kg_vectors\.sql was not applied/);
	assert.equal(errors.rows[1].message, 'user is blocked');
	assert.equal(botApi.sent.length, 0, 'no reply to a blocked user');
	assert.equal(model.requests.length, 0, 'the model is never asked');
});

async function call(workflowId: string, req: unknown) {
	const res = await fetch(`${n8n.url}/webhook/test/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workflow_id: workflowId, req }) });
	return { status: res.status, body: (await res.json()) as Record<string, any> };
}

test('WF50, WF11, WF60 and WF51 as sub-workflows: their answers, and a database failure injected in each → 500 ErrorEnvelope, ops.errors names the node', { timeout: 180_000 }, async () => {
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	const tenant = bot.tenantId;
	await q('UPDATE core.bots SET tg_bot_id = $2 WHERE bot_id = $1', [bot.botId, botApi.me.id]);
	botApi.webhookInfo = { url: 'https://n8n.example/webhook/telegram?bot=answer_bot', pending_update_count: 1 };
	const date = Math.floor(Date.now() / 1000) - 200 * 86_400;
	const msg = await q("INSERT INTO tg.messages (tenant_id, chat_id, message_id, sent_at, visibility) VALUES ($1, -700, 1, to_timestamp($2), 'group') RETURNING id", [tenant, date]);
	await q("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 8, 'user') ON CONFLICT DO NOTHING", [tenant]);
	const cases: { id: string; req: Record<string, unknown>; ok?: (d: any) => boolean; table: string; event: string; node: string }[] = [
		{ id: 'WF50QaSession', req: { tenant_id: tenant, tg_user_id: 2, channel: 'group', chat_id: -700, meta: { from: 'e2e' } }, ok: (d: any) => typeof d.session_id === 'string', table: 'audit.qa_sessions', event: 'INSERT', node: 'Upsert Session' },
		{ id: 'WF11Watchdog', req: { tenant_id: '', bot_id: '' }, ok: (d: any) => d.health === 'ok' && d.bot_id === bot.botId, table: 'ops.webhook_health_snapshots', event: 'INSERT', node: 'Check Webhook' },
		{ id: 'WF60Retention', req: { tenant_id: tenant }, ok: (d: any) => d.deleted['tg.messages'] === 1, table: 'tg.messages', event: 'DELETE', node: 'Prune' },
		// its happy path needs pgvector (first test); here the session write fails after the ACL passed
		{ id: 'WF51Answerer', req: { tenant_id: tenant, tg_user_id: 8, channel: 'dm', chat_id: 8, question: 'anything?', send_reply: false }, table: 'audit.qa_sessions', event: 'INSERT', node: 'Answer Question' },
	];
	for (const c of cases) {
		if (!c.ok) continue;
		const good = await call(c.id, c.req);
		assert.equal(good.status, 200, `${c.id}: ${JSON.stringify(good.body)}`);
		assert.ok(c.ok(good.body.data), `${c.id} answered ${JSON.stringify(good.body.data)}`);
	}
	assert.equal((await q('SELECT count(*)::int AS n FROM tg.messages WHERE id = $1', [msg.rows[0].id])).rows[0].n, 0);
	await q("INSERT INTO tg.messages (tenant_id, chat_id, message_id, sent_at, visibility) VALUES ($1, -700, 2, to_timestamp($2), 'group')", [tenant, date]);
	await q(`CREATE FUNCTION public.e2e_fail_call() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure on %', TG_TABLE_NAME; END $$`);
	try {
		for (const c of cases) await q(`DROP TRIGGER IF EXISTS e2e_fail_call ON ${c.table}; CREATE TRIGGER e2e_fail_call BEFORE ${c.event} ON ${c.table} FOR EACH ROW EXECUTE FUNCTION public.e2e_fail_call()`);
		for (const c of cases) {
			const bad = await call(c.id, { ...c.req, ...(c.id === 'WF50QaSession' ? { tg_user_id: 3 } : {}) });
			assert.equal(bad.status, 500, `${c.id}: ${JSON.stringify(bad.body)}`);
			assert.equal(bad.body.ok, false);
			const rows = await q('SELECT node, status_code, message FROM ops.errors WHERE correlation_id = $1', [bad.body.meta.correlation.correlation_id]);
			assert.deepEqual(rows.rows.map((r) => [r.node, r.status_code]), [[c.node, 500]], c.id);
			assert.match(rows.rows[0].message, /injected failure/);
		}
	} finally {
		for (const c of cases) await q(`DROP TRIGGER IF EXISTS e2e_fail_call ON ${c.table}`);
		await q('DROP FUNCTION public.e2e_fail_call()');
	}
});
