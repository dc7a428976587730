/**
 * WF41 (embed) and WF51 (answer) in a real n8n 2.4.8, through WF90, against stand-ins of the embeddings
 * endpoint, the model and the Bot API, on whatever vector route the test PostgreSQL has (vectorRoute.ts:
 * pgvector HNSW where migration 007 applied, else — on these machines and with the embedded PostgreSQL —
 * the exact store of migration 011): a member's question in the group and in their dm gets a cited reply
 * via the Bot API, the audit.qa_* rows are written, and no citation, prompt or reply names a chunk of a group
 * the asker is not in or of another user's dm. The error paths end in WF99 with the node named and the job failed.
 * Privacy end to end: Telegram updates posted to WF10 (chat_member joins, leaves, kicks and restrictions;
 * questions as dm texts and group @mentions) → WF90 → WF20 → qa_answer → WF51, for two tenants whose bots
 * share a group; every answer, reply, model call and audit.qa_citations row is checked against a visibility
 * oracle the test computes from the facts it sent (test/helpers/visibilityOracle.ts), not the product's ACL.
 * WF50, WF11 and WF60 are called as sub-workflows (a test webhook → Execute Workflow): their answer, and a
 * database failure injected in each → a 500 ErrorEnvelope and an ops.errors row naming the node.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { detectVectorRoute } from '../../nodes/KnowledgeBot/actions/vectorRoute';
import { startBotApi, type BotApiStandIn } from '../helpers/botApiStandIn';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { startEmbeddings, type EmbeddingStandIn } from '../helpers/embeddingStandIn';
import { memberUpdate, type MemberStatus, type TgChatRef, type TgUserRef } from '../helpers/memberUpdates';
import { ModelStandIn } from '../helpers/modelStandIn';
import { startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
import { dmQuestion, groupMention } from '../helpers/questionUpdates';
import { VisibilityOracle, type Outcome } from '../helpers/visibilityOracle';
import { nothingFoundText } from '../../nodes/KnowledgeBot/actions/qa/answer.operation';
import { sourcesOfPrompt } from '../helpers/extractiveAnswer';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');

let db: TestDatabase;
let n8n: RunningN8n;
let botApi: BotApiStandIn;
let embeddings: EmbeddingStandIn;
const model = new ModelStandIn();
let bot: Awaited<ReturnType<typeof seedBot>>;

beforeAll(async () => {
	db = await setupDatabase();
	bot = await seedBot(db.pool, 'answer_bot', 'answer-Secret_1');
	botApi = await startBotApi();
	embeddings = await startEmbeddings();
	await model.up();
	const workflows = [
		'WF99e_catch_all.json',
		'WF99_global_err_handler.json',
		'WF10_telegram_ingest.json',
		'WF11_transport_watchdog.json',
		'WF20_update_processor.json',
		'WF41_embedder.json',
		'WF50_qa_session_upserter.json',
		'WF51_answerer.json',
		'WF60_retention.json',
		'WF90_job_runner.json',
	];
	const files = [
		...workflows.map((f) => path.join(WORKFLOWS, f)),
		path.join(__dirname, 'workflows', 'test_call_workflow.json'),
	];
	n8n = await startN8n(
		db.url,
		files,
		['test/call', 'telegram'],
		[
			harness.telegramCredential(botApi.baseUrl, botApi.token),
			{
				id: 'embContracts01',
				name: 'Contracts Embeddings',
				type: 'contractsEmbeddingsApi',
				data: { api: 'gemini', baseUrl: embeddings.baseUrl, apiKey: 'k' },
			},
			{
				id: 'llmContracts01',
				name: 'Contracts LLM',
				type: 'contractsLlmApi',
				data: { api: 'openai', baseUrl: model.url, apiKey: 'sk-stand-in', model: 'stand-in' },
			},
		],
	);
}, 30 * 60_000);

afterAll(async () => {
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

test('WF90 → WF41 embeds documents, then WF90 → WF51 answers a member in the group and in their dm with citations of visible chunks only, replies via the Bot API and writes audit.qa_*', async () => {
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	const tenant = bot.tenantId;
	const route = await detectVectorRoute(db.pool);
	await q("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 2, 'user'), ($1, 3, 'user')", [
		tenant,
	]);
	await q('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, -500), ($1, -600)', [tenant]);
	// user 2: a member of -500; -600 is user 3's group only; user 3 also has a dm document
	await q(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, -500, 2, 'member'), ($1, -600, 3, 'member')",
		[tenant],
	);
	const modelId = (
		await q(
			"INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536) RETURNING id",
		)
	).rows[0].id;
	const docs: [string, number, 'group' | 'dm', number | null, string][] = [
		['url:runbook', -500, 'group', null, 'Restart the worker pool after every schema migration.'],
		['url:board', -600, 'group', null, 'Restart the worker pool after every schema migration: board secret Falcon.'],
		['url:dm3', 3, 'dm', 3, 'Restart the worker pool after every schema migration: private note Heron of user 3.'],
	];
	const chunkOf = new Map<string, number>();
	const embedJobs: number[] = [];
	for (const [key, chat, visibility, owner, text] of docs) {
		const doc = (
			await q(
				"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, dm_owner_user_id, text, status, title) VALUES ($1, 'url', $2, $3, $4, $5, $6, 'done', $7) RETURNING id",
				[tenant, key, chat, visibility, owner, text, key === 'url:runbook' ? 'Runbook' : key],
			)
		).rows[0].id;
		chunkOf.set(
			key,
			Number(
				(
					await q(
						'INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) VALUES ($1, $2, 0, $3, 0, length($3), md5($3)) RETURNING id',
						[tenant, doc, text],
					)
				).rows[0].id,
			),
		);
		embedJobs.push(
			Number(
				(
					await q(
						"INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'document_embed', jsonb_build_object('tenant_id', $2::text, 'document_id', $3::bigint, 'model_id', $4::int)) RETURNING id",
						[tenant, tenant, doc, modelId],
					)
				).rows[0].id,
			),
		);
	}
	assert.deepEqual(
		(await waitForJobs(embedJobs)).map((r) => r.status),
		['succeeded', 'succeeded', 'succeeded'],
	);
	assert.equal(
		(await q(`SELECT count(*)::int AS n FROM ${route.table}`)).rows[0].n,
		3,
		`vectors in ${route.table} (${route.route})`,
	);
	model.respond = () => ({ text: 'Restart the worker pool [1].' });
	const sentBefore = botApi.sent.length;
	const asks = [
		{ channel: 'group', chat_id: -500 },
		{ channel: 'dm', chat_id: 2 },
	];
	const askJobs: number[] = [];
	for (const a of asks) {
		askJobs.push(
			Number(
				(
					await q(
						"INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'qa_answer', jsonb_build_object('tenant_id', $2::text, 'tg_user_id', 2, 'channel', $3::text, 'chat_id', $4::bigint, 'question', 'what after a schema migration?')) RETURNING id",
						[tenant, tenant, a.channel, a.chat_id],
					)
				).rows[0].id,
			),
		);
	}
	assert.deepEqual(
		(await waitForJobs(askJobs)).map((r) => r.status),
		['succeeded', 'succeeded'],
	);
	const turns = await q(
		`SELECT s.channel, s.chat_id::int AS chat_id, t.answer_text, t.telegram_message_id IS NOT NULL AS sent,
		(SELECT array_agg(c.chunk_id::int ORDER BY c.rank) FROM audit.qa_citations c WHERE c.turn_id = t.id) AS cited
		FROM audit.qa_turns t JOIN audit.qa_sessions s ON s.session_id = t.session_id WHERE s.tenant_id = $1 ORDER BY t.id`,
		[tenant],
	);
	const visible = chunkOf.get('url:runbook');
	assert.deepEqual(turns.rows, [
		{ channel: 'group', chat_id: -500, answer_text: 'Restart the worker pool [1].', sent: true, cited: [visible] },
		{ channel: 'dm', chat_id: 2, answer_text: 'Restart the worker pool [1].', sent: true, cited: [visible] },
	]);
	const replies = botApi.sent.slice(sentBefore);
	assert.deepEqual(
		replies.map((m) => m.chat_id),
		[-500, 2],
	);
	for (const m of replies) assert.match(m.text, /^Restart the worker pool \[1\]\.\n\nSources:\n\[1\] Runbook$/);
	const prompts = JSON.stringify(model.requests.slice(-2).map((r) => r.body));
	assert.match(prompts, /Restart the worker pool after every schema migration\./);
	assert.doesNotMatch(prompts, /Falcon|Heron/, 'no invisible chunk reaches the model');
	assert.equal(
		(await q('SELECT count(*)::int AS n FROM audit.qa_citations WHERE chunk_id <> $1', [visible])).rows[0].n,
		0,
	);
}, 240_000);

test('errors end in WF99: WF41 refuses a 768-dimension model (422 MODEL_DIMS), WF51 a blocked user (403); both jobs failed, ops.errors names the node, nothing sent or asked', async () => {
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	const tenant = bot.tenantId;
	const sentBefore = botApi.sent.length;
	const askedBefore = model.requests.length;
	await q("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 9, 'blocked')", [tenant]);
	const modelId = (
		await q("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'small-768', 768) RETURNING id")
	).rows[0].id;
	const doc = (
		await q(
			"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status) VALUES ($1, 'url', 'url:nv', -500, 'group', 'x', 'done') RETURNING id",
			[tenant],
		)
	).rows[0].id;
	const embed = Number(
		(
			await q(
				"INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'document_embed', jsonb_build_object('tenant_id', $2::text, 'document_id', $3::bigint, 'model_id', $4::int)) RETURNING id",
				[tenant, tenant, doc, modelId],
			)
		).rows[0].id,
	);
	const ask = Number(
		(
			await q(
				"INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'qa_answer', jsonb_build_object('tenant_id', $2::text, 'tg_user_id', 9, 'channel', 'dm', 'chat_id', 9, 'question', 'anything?')) RETURNING id",
				[tenant, tenant],
			)
		).rows[0].id,
	);
	const jobs = await waitForJobs([embed, ask]);
	assert.deepEqual(
		jobs.map((j) => j.status),
		['failed', 'failed'],
	);
	const errors = await q(
		'SELECT job_id, node, status_code, workflow, message FROM ops.errors WHERE job_id = ANY($1) ORDER BY job_id',
		[[embed, ask]],
	);
	assert.deepEqual(
		errors.rows.map((e) => [Number(e.job_id), e.node, e.status_code]),
		[
			[embed, 'Embed Chunks', 422],
			[ask, 'Answer Question', 403],
		],
	);
	assert.match(errors.rows[0].message, /has 768 dimensions/);
	assert.equal(errors.rows[1].message, 'user is blocked');
	assert.equal(botApi.sent.length, sentBefore, 'no reply to a blocked user');
	assert.equal(model.requests.length, askedBefore, 'the model is never asked');
}, 180_000);

async function call(workflowId: string, req: unknown) {
	const res = await fetch(`${n8n.url}/webhook/test/call`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ workflow_id: workflowId, req }),
	});
	return { status: res.status, body: (await res.json()) as Record<string, any> };
}

test('WF50, WF11, WF60 and WF51 as sub-workflows: their answers, and a database failure injected in each → 500 ErrorEnvelope, ops.errors names the node', async () => {
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	const tenant = bot.tenantId;
	await q('UPDATE core.bots SET tg_bot_id = $2 WHERE bot_id = $1', [bot.botId, botApi.me.id]);
	botApi.webhookInfo = { url: 'https://n8n.example/webhook/telegram?bot=answer_bot', pending_update_count: 1 };
	const date = Math.floor(Date.now() / 1000) - 200 * 86_400;
	const msg = await q(
		"INSERT INTO tg.messages (tenant_id, chat_id, message_id, sent_at, visibility) VALUES ($1, -700, 1, to_timestamp($2), 'group') RETURNING id",
		[tenant, date],
	);
	await q("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 8, 'user') ON CONFLICT DO NOTHING", [
		tenant,
	]);
	const cases: {
		id: string;
		req: Record<string, unknown>;
		ok?: (d: any) => boolean;
		table: string;
		event: string;
		node: string;
	}[] = [
		{
			id: 'WF50QaSession',
			req: { tenant_id: tenant, tg_user_id: 2, channel: 'group', chat_id: -700, meta: { from: 'e2e' } },
			ok: (d: any) => typeof d.session_id === 'string',
			table: 'audit.qa_sessions',
			event: 'INSERT',
			node: 'Upsert Session',
		},
		{
			id: 'WF11Watchdog',
			req: { tenant_id: '', bot_id: '' },
			ok: (d: any) => d.health === 'ok' && d.bot_id === bot.botId,
			table: 'ops.webhook_health_snapshots',
			event: 'INSERT',
			node: 'Check Webhook',
		},
		{
			id: 'WF60Retention',
			req: { tenant_id: tenant },
			ok: (d: any) => d.deleted['tg.messages'] === 1,
			table: 'tg.messages',
			event: 'DELETE',
			node: 'Prune',
		},
		// its happy path is the first test; here the session write fails after the ACL passed
		{
			id: 'WF51Answerer',
			req: { tenant_id: tenant, tg_user_id: 8, channel: 'dm', chat_id: 8, question: 'anything?', send_reply: false },
			table: 'audit.qa_sessions',
			event: 'INSERT',
			node: 'Answer Question',
		},
	];
	for (const c of cases) {
		if (!c.ok) continue;
		const good = await call(c.id, c.req);
		assert.equal(good.status, 200, `${c.id}: ${JSON.stringify(good.body)}`);
		assert.ok(c.ok(good.body.data), `${c.id} answered ${JSON.stringify(good.body.data)}`);
	}
	assert.equal((await q('SELECT count(*)::int AS n FROM tg.messages WHERE id = $1', [msg.rows[0].id])).rows[0].n, 0);
	await q(
		"INSERT INTO tg.messages (tenant_id, chat_id, message_id, sent_at, visibility) VALUES ($1, -700, 2, to_timestamp($2), 'group')",
		[tenant, date],
	);
	await q(
		`CREATE FUNCTION public.e2e_fail_call() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure on %', TG_TABLE_NAME; END $$`,
	);
	try {
		for (const c of cases)
			await q(
				`DROP TRIGGER IF EXISTS e2e_fail_call ON ${c.table}; CREATE TRIGGER e2e_fail_call BEFORE ${c.event} ON ${c.table} FOR EACH ROW EXECUTE FUNCTION public.e2e_fail_call()`,
			);
		for (const c of cases) {
			const bad = await call(c.id, { ...c.req, ...(c.id === 'WF50QaSession' ? { tg_user_id: 3 } : {}) });
			assert.equal(bad.status, 500, `${c.id}: ${JSON.stringify(bad.body)}`);
			assert.equal(bad.body.ok, false);
			const rows = await q('SELECT node, status_code, message FROM ops.errors WHERE correlation_id = $1', [
				bad.body.meta.correlation.correlation_id,
			]);
			assert.deepEqual(
				rows.rows.map((r) => [r.node, r.status_code]),
				[[c.node, 500]],
				c.id,
			);
			assert.match(rows.rows[0].message, /injected failure/);
		}
	} finally {
		for (const c of cases) await q(`DROP TRIGGER IF EXISTS e2e_fail_call ON ${c.table}`);
		await q('DROP FUNCTION public.e2e_fail_call()');
	}
}, 180_000);

test("privacy through WF10 → WF90 → WF20 → qa_answer → WF51: members get cited answers in the group and their dm; who left, was kicked or restricted out, another tenant's user and everyone but a dm's owner (and admins) get none of those chunks; nothing visible → the fixed answer and no model call; audit.qa_citations agrees with an independent oracle", async () => {
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	const oracle = new VisibilityOracle();
	// two tenants whose bots are both administrators of one Telegram supergroup G; tenant A also has group H
	const botA = {
		...(await seedBot(db.pool, 'acme_bot', 'acme-Secret_1')),
		username: 'acme_kb_bot',
		tgId: 6_100_000_001,
	};
	const botB = {
		...(await seedBot(db.pool, 'other_bot', 'other-Secret_1')),
		username: 'other_kb_bot',
		tgId: 6_100_000_002,
	};
	for (const b of [botA, botB]) await q('UPDATE core.bots SET username = $2 WHERE bot_id = $1', [b.botId, b.username]);
	const G: TgChatRef = { id: -1_001_000_000_501, title: 'Platform team', type: 'supergroup' };
	const H: TgChatRef = { id: -1_001_000_000_502, title: 'Board', type: 'supergroup' };
	const person = (id: number, first_name: string): TgUserRef => ({
		id,
		is_bot: false,
		first_name,
		username: first_name.toLowerCase(),
	});
	const U = {
		member: person(7001, 'Mira'),
		leaver: person(7002, 'Leon'),
		restrictedOut: person(7003, 'Rita'),
		kicked: person(7004, 'Karl'),
		restrictedIn: person(7005, 'Rosa'),
		dmOwner: person(7006, 'Olga'),
		admin: person(7007, 'Ada'),
		outsider: person(7008, 'Xavi'),
	};
	for (const [tenant, user, role] of [
		[botA.tenantId, U.member, 'user'],
		[botA.tenantId, U.leaver, 'user'],
		[botA.tenantId, U.restrictedOut, 'user'],
		[botA.tenantId, U.kicked, 'user'],
		[botA.tenantId, U.restrictedIn, 'user'],
		[botA.tenantId, U.dmOwner, 'user'],
		[botA.tenantId, U.admin, 'admin'],
		[botB.tenantId, U.outsider, 'user'],
	] as const) {
		await q('INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, $2, $3)', [tenant, user.id, role]);
		oracle.setRole(tenant, user.id, role);
	}
	for (const [tenant, chat] of [
		[botA.tenantId, G],
		[botA.tenantId, H],
		[botB.tenantId, G],
	] as const) {
		await q('INSERT INTO core.tenant_chats (tenant_id, chat_id, chat_type, title) VALUES ($1, $2, $3, $4)', [
			tenant,
			chat.id,
			chat.type,
			chat.title,
		]);
		oracle.registerChat(tenant, chat.id);
	}

	async function deliver(bot: typeof botA, update: Record<string, unknown>): Promise<number> {
		const res = await fetch(`${n8n.url}/webhook/telegram?bot=${bot.botKey}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': bot.secret },
			body: JSON.stringify(update),
		});
		const body = (await res.json()) as { ok: boolean; job_id: number; quarantined: boolean };
		assert.equal(res.status, 200, JSON.stringify(body));
		assert.equal(body.quarantined, false);
		return Number(body.job_id);
	}
	const now = Math.floor(Date.now() / 1000);
	/** a chat_member (or the bot's my_chat_member) update through WF10; the oracle learns what Telegram said */
	async function change(
		bot: typeof botA,
		chat: TgChatRef,
		user: TgUserRef,
		from: MemberStatus,
		to: MemberStatus,
		date: number,
		isMember?: boolean,
		mine = false,
	) {
		oracle.applyStatus(bot.tenantId, chat.id, user.id, to, isMember);
		return deliver(
			bot,
			memberUpdate({ chat, user, from, to, isMember, date, by: to === 'kicked' || mine ? U.admin : user, mine }),
		);
	}
	async function finished(jobIds: number[], what: string) {
		const rows = await waitForJobs(jobIds, 120_000);
		assert.deepEqual(
			rows.filter((r) => r.status !== 'succeeded'),
			[],
			`${what}: ${n8n.logs().slice(-2000)}`,
		);
	}

	// 1. the bots are added to G; users join (chat_member), the outsider as seen by both bots
	const joined = now - 3600;
	const setup: number[] = [];
	for (const bot of [botA, botB])
		setup.push(
			await change(
				bot,
				G,
				{ id: bot.tgId, is_bot: true, first_name: 'KB', username: bot.username },
				'left',
				'administrator',
				joined - 60,
				undefined,
				true,
			),
		);
	for (const user of [U.member, U.leaver, U.restrictedOut, U.kicked, U.restrictedIn, U.outsider])
		setup.push(await change(botA, G, user, 'left', 'member', joined));
	setup.push(await change(botB, G, U.outsider, 'left', 'member', joined));
	const modelId = (
		await q(
			"INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536) ON CONFLICT (provider, name) DO UPDATE SET is_active = true RETURNING id",
		)
	).rows[0].id;
	// one chunk per document, all with the same text but for a codeword (to find it in prompts): every chunk scores
	// the same for the question, so each visible one passes the relevance floors (issue 30) and the only thing that
	// decides what is cited is who may see it
	const SAME_TEXT = 'Restart the worker pool after every schema migration.';
	const docs: {
		tenant: string;
		chat: number;
		visibility: 'group' | 'dm';
		owner: number | null;
		title: string;
		text: string;
	}[] = [
		{
			tenant: botA.tenantId,
			chat: G.id,
			visibility: 'group',
			owner: null,
			title: 'Runbook',
			text: `${SAME_TEXT} Codeword Amber.`,
		},
		{
			tenant: botA.tenantId,
			chat: G.id,
			visibility: 'group',
			owner: null,
			title: 'On-call',
			text: `${SAME_TEXT} Codeword Birch.`,
		},
		{
			tenant: botA.tenantId,
			chat: H.id,
			visibility: 'group',
			owner: null,
			title: 'Board budget',
			text: `${SAME_TEXT} Codeword Cedar.`,
		},
		{
			tenant: botA.tenantId,
			chat: U.dmOwner.id,
			visibility: 'dm',
			owner: U.dmOwner.id,
			title: 'Olga private',
			text: `${SAME_TEXT} Codeword Dahlia.`,
		},
		{
			tenant: botA.tenantId,
			chat: U.member.id,
			visibility: 'dm',
			owner: U.member.id,
			title: 'Mira private',
			text: `${SAME_TEXT} Codeword Elm.`,
		},
		{
			tenant: botB.tenantId,
			chat: G.id,
			visibility: 'group',
			owner: null,
			title: 'Other runbook',
			text: `${SAME_TEXT} Codeword Fir.`,
		},
	];
	const codeword = new Map<number, string>();
	for (const [i, d] of docs.entries()) {
		const doc = (
			await q(
				"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, dm_owner_user_id, text, status, title) VALUES ($1, 'url', $2, $3, $4, $5, $6, 'done', $7) RETURNING id",
				[d.tenant, `url:priv${i}`, d.chat, d.visibility, d.owner, d.text, d.title],
			)
		).rows[0].id;
		const chunk = Number(
			(
				await q(
					'INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) VALUES ($1, $2, 0, $3, 0, length($3), md5($3)) RETURNING id',
					[d.tenant, doc, d.text],
				)
			).rows[0].id,
		);
		oracle.addChunk({ chunk_id: chunk, tenant: d.tenant, chat: d.chat, visibility: d.visibility, owner: d.owner });
		codeword.set(chunk, d.text.match(/Codeword (\w+)/)![1]);
		setup.push(
			Number(
				(
					await q(
						"INSERT INTO ops.jobs (tenant_id, job_type, payload) VALUES ($1, 'document_embed', jsonb_build_object('tenant_id', $2::text, 'document_id', $3::bigint, 'model_id', $4::int)) RETURNING id",
						[d.tenant, d.tenant, doc, modelId],
					)
				).rows[0].id,
			),
		);
	}
	await finished(setup, 'joins and embeddings');

	// the model stand-in answers citing every source it was given ([1][2]…: issue 30 cites only what the answer
	// references, and every visible chunk here passes the relevance floors: they score the same), naming the ask
	const modelCallsBefore = model.requests.length;
	const cite = (count: number) => Array.from({ length: count }, (_, i) => `[${i + 1}]`).join('');
	model.respond = (body) => {
		const messages = (body.messages ?? []) as { role: string; content: string }[];
		const prompt = messages.find((m) => m.role === 'user')?.content ?? '';
		return {
			text: `Answer to ask ${JSON.stringify(body).match(/\(ask (\d+)\)/)?.[1] ?? '?'} ${cite(sourcesOfPrompt(prompt).length)}.`,
		};
	};
	interface Ask {
		n: number;
		bot: typeof botA;
		user: TgUserRef;
		where: TgChatRef | 'dm';
		sees: string[] | string;
		messageId: number;
		chat: number;
		outcome: Outcome;
	}
	const asks: Ask[] = [];
	let messageId = 500;
	/** `sees`: the codewords of the chunks the answer must cite — or the refusal code — written by hand; the oracle must agree */
	async function ask(n: number, bot: typeof botA, user: TgUserRef, where: TgChatRef | 'dm', sees: string[] | string) {
		const text = `how do we restart the worker pool? (ask ${n})`;
		const chat = where === 'dm' ? user.id : where.id;
		const outcome = oracle.outcome({
			tenant: bot.tenantId,
			user: String(user.id),
			channel: where === 'dm' ? 'dm' : 'group',
			chat: String(chat),
		});
		const a: Ask = { n, bot, user, where, sees, messageId: ++messageId, chat, outcome };
		const expected = 'refused' in outcome ? outcome.refused : outcome.visible.map((c) => codeword.get(c)!).sort();
		assert.deepEqual(
			expected,
			typeof sees === 'string' ? sees : [...sees].sort(),
			`ask ${n}: the oracle and the hand-written expectation differ`,
		);
		asks.push(a);
		return deliver(
			bot,
			where === 'dm'
				? dmQuestion(user, text, a.messageId, now)
				: groupMention(where, user, bot.username, text, a.messageId, now),
		);
	}
	const modelCalls = (n: number) => model.requests.filter((r) => JSON.stringify(r.body).includes(`(ask ${n})`));
	async function answered(from: number) {
		const mine = asks.filter((a) => a.n >= from);
		const deadline = Date.now() + 150_000;
		let jobs: { id: string; status: string; n: number }[] = [];
		while (Date.now() < deadline) {
			jobs = (
				await q(
					"SELECT id, status, substring(payload->>'question' from '\\(ask (\\d+)\\)')::int AS n FROM ops.jobs WHERE job_type = 'qa_answer' AND tenant_id = ANY($1::uuid[])",
					[[botA.tenantId, botB.tenantId]],
				)
			).rows.filter((j) => j.n >= from);
			if (jobs.length === mine.length && jobs.every((j) => !['queued', 'running'].includes(j.status))) break;
			await new Promise((r) => setTimeout(r, 1000));
		}
		assert.deepEqual(
			jobs.map((j) => j.n).sort((a, b) => a - b),
			mine.map((a) => a.n),
			`one qa_answer job per question: ${JSON.stringify(jobs)}\n${n8n.logs().slice(-2000)}`,
		);
		for (const a of mine) {
			const job = jobs.find((j) => j.n === a.n)!;
			const replies = botApi.sent.filter(
				(m) => String(m.chat_id) === String(a.chat) && m.reply_parameters?.message_id === a.messageId,
			);
			const turns = (
				await q(
					`SELECT t.answer_text, s.channel, s.chat_id::text AS chat, s.tg_user_id::text AS user, s.tenant_id,
				coalesce((SELECT array_agg(c.chunk_id::int ORDER BY c.chunk_id) FROM audit.qa_citations c WHERE c.turn_id = t.id), '{}') AS cited
				FROM audit.qa_turns t JOIN audit.qa_sessions s ON s.session_id = t.session_id WHERE t.question = $1`,
					[`how do we restart the worker pool? (ask ${a.n})`],
				)
			).rows;
			if ('refused' in a.outcome) {
				assert.equal(job.status, 'failed', `ask ${a.n} (${a.outcome.refused}) must be refused`);
				const errors = (
					await q(
						"SELECT node, status_code, details->'node_details'->>'code' AS code FROM ops.errors WHERE job_id = $1",
						[job.id],
					)
				).rows;
				assert.deepEqual(
					errors,
					[{ node: 'Answer Question', status_code: 403, code: a.outcome.refused }],
					`ask ${a.n}`,
				);
				assert.deepEqual(turns, [], `ask ${a.n}: no turn`);
				assert.deepEqual(replies, [], `ask ${a.n}: no reply`);
				assert.equal(modelCalls(a.n).length, 0, `ask ${a.n}: the model is not asked`);
				continue;
			}
			const visible = a.outcome.visible;
			assert.equal(job.status, 'succeeded', `ask ${a.n}`);
			assert.deepEqual(
				turns,
				[
					{
						answer_text: visible.length
							? `Answer to ask ${a.n} ${cite(visible.length)}.`
							: nothingFoundText(a.where === 'dm' ? 'dm' : 'group', `how do we restart the worker pool? (ask ${a.n})`),
						channel: a.where === 'dm' ? 'dm' : 'group',
						chat: String(a.chat),
						user: String(a.user.id),
						tenant_id: a.bot.tenantId,
						cited: visible,
					},
				],
				`ask ${a.n}: the turn cites exactly the visible chunks`,
			);
			assert.equal(replies.length, 1, `ask ${a.n}: one reply to the question`);
			const calls = modelCalls(a.n);
			if (visible.length === 0) {
				assert.match(replies[0].text, /^I found nothing in the documents you can see .*\(ask \d+\)”\.$/, `ask ${a.n}`);
				assert.equal(calls.length, 0, `ask ${a.n}: nothing visible → the model is not asked`);
				continue;
			}
			const sources = replies[0].text.split('\n\nSources:\n');
			assert.equal(sources[0], `Answer to ask ${a.n} ${cite(visible.length)}.`);
			assert.equal(
				sources[1].split('\n').length,
				visible.length,
				`ask ${a.n}: one Sources line per cited document (one chunk each here)`,
			);
			assert.equal(calls.length, 1, `ask ${a.n}: one model call`);
			const prompt = JSON.stringify(calls[0].body);
			for (const [chunk, word] of codeword)
				assert.equal(
					prompt.includes(`Codeword ${word}`),
					visible.includes(chunk),
					`ask ${a.n}: ${word} in the prompt iff visible`,
				);
		}
	}

	// 2. everyone asks while the memberships are as joined
	const round1 = [
		await ask(1, botA, U.member, G, ['Amber', 'Birch']),
		await ask(2, botA, U.member, 'dm', ['Amber', 'Birch', 'Elm']),
		await ask(3, botA, U.leaver, 'dm', ['Amber', 'Birch']),
		await ask(4, botA, U.restrictedOut, 'dm', ['Amber', 'Birch']),
		await ask(5, botA, U.kicked, 'dm', ['Amber', 'Birch']),
		await ask(6, botA, U.dmOwner, 'dm', ['Dahlia']),
		await ask(7, botA, U.admin, 'dm', ['Amber', 'Birch', 'Cedar', 'Dahlia', 'Elm']),
		await ask(8, botA, U.admin, G, ['Amber', 'Birch']),
		await ask(9, botB, U.outsider, G, ['Fir']),
		await ask(10, botB, U.outsider, 'dm', ['Fir']),
		await ask(11, botA, U.outsider, 'dm', 'NOT_ALLOWED'),
		await ask(12, botA, U.dmOwner, G, 'NOT_A_MEMBER'),
	];
	await finished(round1, 'round 1 updates');
	await answered(1);

	// 3. Leon leaves, Rita is restricted and out of the chat, Karl is kicked, Rosa is restricted but stays
	const later = now - 60;
	await finished(
		[
			await change(botA, G, U.leaver, 'member', 'left', later),
			await change(botA, G, U.restrictedOut, 'member', 'restricted', later, false),
			await change(botA, G, U.kicked, 'member', 'kicked', later),
			await change(botA, G, U.restrictedIn, 'member', 'restricted', later, true),
		],
		'membership changes',
	);
	const stored = (
		await q(
			'SELECT tg_user_id::text AS user, status, is_member FROM tg.chat_memberships_current WHERE tenant_id = $1 AND chat_id = $2 ORDER BY 1',
			[botA.tenantId, G.id],
		)
	).rows;
	for (const row of stored)
		assert.equal(row.is_member, oracle.isMember(botA.tenantId, G.id, row.user), `WF20 stored ${JSON.stringify(row)}`);

	// 4. they ask again
	const round2 = [
		await ask(13, botA, U.leaver, 'dm', []),
		await ask(14, botA, U.leaver, G, 'NOT_A_MEMBER'),
		await ask(15, botA, U.restrictedOut, 'dm', []),
		await ask(16, botA, U.restrictedOut, G, 'NOT_A_MEMBER'),
		await ask(17, botA, U.kicked, 'dm', []),
		await ask(18, botA, U.restrictedIn, 'dm', ['Amber', 'Birch']),
		await ask(19, botA, U.restrictedIn, G, ['Amber', 'Birch']),
		await ask(20, botA, U.outsider, G, 'NOT_ALLOWED'),
		await ask(21, botA, U.member, 'dm', ['Amber', 'Birch', 'Elm']),
	];
	await finished(round2, 'round 2 updates');
	await answered(13);

	// 5. every citation of both tenants, checked against the oracle as it stood when the question was asked
	const citations = (
		await q(
			`SELECT t.question, c.chunk_id::int AS chunk_id FROM audit.qa_citations c JOIN audit.qa_turns t ON t.id = c.turn_id
		JOIN audit.qa_sessions s ON s.session_id = t.session_id WHERE s.tenant_id = ANY($1::uuid[])`,
			[[botA.tenantId, botB.tenantId]],
		)
	).rows;
	assert.ok(citations.length > 0);
	assert.equal(
		model.requests.length - modelCallsBefore,
		asks.filter((a) => 'visible' in a.outcome && a.outcome.visible.length > 0).length,
		'the model is asked once per question with something visible, never otherwise',
	);
	for (const c of citations) {
		const a = asks.find((x) => c.question === `how do we restart the worker pool? (ask ${x.n})`);
		assert.ok(
			a && 'visible' in a.outcome && a.outcome.visible.includes(c.chunk_id),
			`audit.qa_citations names chunk ${c.chunk_id} (${codeword.get(c.chunk_id)}) for "${c.question}", which its asker may not see`,
		);
	}
}, 420_000);
