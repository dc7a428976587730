/**
 * WF41 (embed) and WF51 (answer) in a real n8n 2.4.8, through WF90, against stand-ins of the embeddings
 * endpoint, the model and the Bot API, on whatever vector route the test PostgreSQL has (vectorRoute.ts:
 * pgvector HNSW where migration 007 applied, else — on these machines and with the embedded PostgreSQL —
 * the exact store of migration 011): a member's question in the group and in their dm gets a cited reply
 * via the Bot API, the audit.qa_* rows are written, and no citation, prompt or reply names a chunk of a group
 * the asker is not in or of another user's dm. The error paths end in WF99 with the node named and the job failed.
 * WF50, WF11 and WF60 are called as sub-workflows (a test webhook → Execute Workflow): their answer, and a
 * database failure injected in each → a 500 ErrorEnvelope and an ops.errors row naming the node.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { detectVectorRoute } from '../../nodes/KnowledgeBot/actions/vectorRoute';
import { startBotApi, type BotApiStandIn } from '../helpers/botApiStandIn';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { startEmbeddings, type EmbeddingStandIn } from '../helpers/embeddingStandIn';
import { ModelStandIn } from '../helpers/modelStandIn';
import { startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');

let db: TestDatabase;
let n8n: RunningN8n;
let botApi: BotApiStandIn;
let embeddings: EmbeddingStandIn;
const model = new ModelStandIn();
let bot: Awaited<ReturnType<typeof seedBot>>;

before(
	async () => {
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

test('WF90 → WF41 embeds documents, then WF90 → WF51 answers a member in the group and in their dm with citations of visible chunks only, replies via the Bot API and writes audit.qa_*', { timeout: 240_000 }, async () => {
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	const tenant = bot.tenantId;
	const route = await detectVectorRoute(db.pool);
	await q("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 2, 'user'), ($1, 3, 'user')", [tenant]);
	await q('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, -500), ($1, -600)', [tenant]);
	// user 2: a member of -500; -600 is user 3's group only; user 3 also has a dm document
	await q("INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, -500, 2, 'member'), ($1, -600, 3, 'member')", [tenant]);
	const modelId = (await q("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536) RETURNING id")).rows[0].id;
	const docs: [string, number, 'group' | 'dm', number | null, string][] = [
		['url:runbook', -500, 'group', null, 'Restart the worker pool after every schema migration.'],
		['url:board', -600, 'group', null, 'Restart the worker pool after every schema migration: board secret Falcon.'],
		['url:dm3', 3, 'dm', 3, 'Restart the worker pool after every schema migration: private note Heron of user 3.'],
	];
	const chunkOf = new Map<string, number>();
	const embedJobs: number[] = [];
	for (const [key, chat, visibility, owner, text] of docs) {
		const doc = (await q("INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, dm_owner_user_id, text, status, title) VALUES ($1, 'url', $2, $3, $4, $5, $6, 'done', $7) RETURNING id", [tenant, key, chat, visibility, owner, text, key === 'url:runbook' ? 'Runbook' : key])).rows[0].id;
		chunkOf.set(key, Number((await q('INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) VALUES ($1, $2, 0, $3, 0, length($3), md5($3)) RETURNING id', [tenant, doc, text])).rows[0].id));
		embedJobs.push(Number((await q("INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'document_embed', jsonb_build_object('tenant_id', $2::text, 'document_id', $3::bigint, 'model_id', $4::int)) RETURNING id", [tenant, tenant, doc, modelId])).rows[0].id));
	}
	assert.deepEqual((await waitForJobs(embedJobs)).map((r) => r.status), ['succeeded', 'succeeded', 'succeeded']);
	assert.equal((await q(`SELECT count(*)::int AS n FROM ${route.table}`)).rows[0].n, 3, `vectors in ${route.table} (${route.route})`);
	model.respond = () => ({ text: 'Restart the worker pool [1].' });
	const sentBefore = botApi.sent.length;
	const asks = [
		{ channel: 'group', chat_id: -500 },
		{ channel: 'dm', chat_id: 2 },
	];
	const askJobs: number[] = [];
	for (const a of asks) {
		askJobs.push(Number((await q("INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'qa_answer', jsonb_build_object('tenant_id', $2::text, 'tg_user_id', 2, 'channel', $3::text, 'chat_id', $4::bigint, 'question', 'what after a schema migration?')) RETURNING id", [tenant, tenant, a.channel, a.chat_id])).rows[0].id));
	}
	assert.deepEqual((await waitForJobs(askJobs)).map((r) => r.status), ['succeeded', 'succeeded']);
	const turns = await q(`SELECT s.channel, s.chat_id::int AS chat_id, t.answer_text, t.telegram_message_id IS NOT NULL AS sent,
		(SELECT array_agg(c.chunk_id::int ORDER BY c.rank) FROM audit.qa_citations c WHERE c.turn_id = t.id) AS cited
		FROM audit.qa_turns t JOIN audit.qa_sessions s ON s.session_id = t.session_id WHERE s.tenant_id = $1 ORDER BY t.id`, [tenant]);
	const visible = chunkOf.get('url:runbook');
	assert.deepEqual(turns.rows, [
		{ channel: 'group', chat_id: -500, answer_text: 'Restart the worker pool [1].', sent: true, cited: [visible] },
		{ channel: 'dm', chat_id: 2, answer_text: 'Restart the worker pool [1].', sent: true, cited: [visible] },
	]);
	const replies = botApi.sent.slice(sentBefore);
	assert.deepEqual(replies.map((m) => m.chat_id), [-500, 2]);
	for (const m of replies) assert.match(m.text, /^Restart the worker pool \[1\]\.\n\nSources:\n\[1\] Runbook$/);
	const prompts = JSON.stringify(model.requests.slice(-2).map((r) => r.body));
	assert.match(prompts, /Restart the worker pool after every schema migration\./);
	assert.doesNotMatch(prompts, /Falcon|Heron/, 'no invisible chunk reaches the model');
	assert.equal((await q('SELECT count(*)::int AS n FROM audit.qa_citations WHERE chunk_id <> $1', [visible])).rows[0].n, 0);
});

test('errors end in WF99: WF41 refuses a 768-dimension model (422 MODEL_DIMS), WF51 a blocked user (403); both jobs failed, ops.errors names the node, nothing sent or asked', { timeout: 180_000 }, async () => {
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	const tenant = bot.tenantId;
	const sentBefore = botApi.sent.length;
	const askedBefore = model.requests.length;
	await q("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 9, 'blocked')", [tenant]);
	const modelId = (await q("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'small-768', 768) RETURNING id")).rows[0].id;
	const doc = (await q("INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status) VALUES ($1, 'url', 'url:nv', -500, 'group', 'x', 'done') RETURNING id", [tenant])).rows[0].id;
	const embed = Number((await q("INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'document_embed', jsonb_build_object('tenant_id', $2::text, 'document_id', $3::bigint, 'model_id', $4::int)) RETURNING id", [tenant, tenant, doc, modelId])).rows[0].id);
	const ask = Number((await q("INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'qa_answer', jsonb_build_object('tenant_id', $2::text, 'tg_user_id', 9, 'channel', 'dm', 'chat_id', 9, 'question', 'anything?')) RETURNING id", [tenant, tenant])).rows[0].id);
	const jobs = await waitForJobs([embed, ask]);
	assert.deepEqual(jobs.map((j) => j.status), ['failed', 'failed']);
	const errors = await q('SELECT job_id, node, status_code, workflow, message FROM ops.errors WHERE job_id = ANY($1) ORDER BY job_id', [[embed, ask]]);
	assert.deepEqual(errors.rows.map((e) => [Number(e.job_id), e.node, e.status_code]), [[embed, 'Embed Chunks', 422], [ask, 'Answer Question', 403]]);
	assert.match(errors.rows[0].message, /has 768 dimensions/);
	assert.equal(errors.rows[1].message, 'user is blocked');
	assert.equal(botApi.sent.length, sentBefore, 'no reply to a blocked user');
	assert.equal(model.requests.length, askedBefore, 'the model is never asked');
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
		// its happy path is the first test; here the session write fails after the ACL passed
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
