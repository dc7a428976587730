/**
 * Q&A → Answer (WF51) and Upsert Session (WF50) on PGlite with pgvector, against stand-ins of the
 * embeddings endpoint, the model and the Bot API (real HTTP servers on 127.0.0.1): ACL first, citations
 * only from visible sources, the turn and citations recorded, the reply sent once, retries idempotent.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { chunkOperation } from '../../nodes/KnowledgeBot/actions/document/chunk.operation';
import { embedOperation } from '../../nodes/KnowledgeBot/actions/document/embed.operation';
import { answerOperation, nothingFoundText } from '../../nodes/KnowledgeBot/actions/qa/answer.operation';
import { DEFAULT_MIN_SCORE, DEFAULT_RELATIVE_SCORE } from '../../nodes/KnowledgeBot/actions/qa/citations';
import { HYBRID_LEXICAL_WEIGHT } from '../../nodes/KnowledgeBot/actions/qa/retrieve';
import type { KnowledgeOperation } from '../../nodes/KnowledgeBot/actions/types';
import { extractiveAnswer } from '../helpers/extractiveAnswer';
import { upsertSessionOperation } from '../../nodes/KnowledgeBot/actions/qa/upsertSession.operation';
import { startBotApi, type BotApiStandIn } from '../helpers/botApiStandIn';
import { hashedVector, startEmbeddings, type EmbeddingStandIn } from '../helpers/embeddingStandIn';
import { knowledgeRunner } from '../helpers/knowledgeOps';
import { ModelStandIn } from '../helpers/modelStandIn';
import { vectorDatabase } from '../helpers/pglite';

/** Cosine similarity of two vectors (the stand-in's are unit length; computed in full anyway). */
const cosineOf = (a: number[], b: number[]) =>
	a.reduce((sum, x, i) => sum + x * b[i], 0) / (Math.hypot(...a) * Math.hypot(...b));

let vdb: Awaited<ReturnType<typeof vectorDatabase>>;
let embeddings: EmbeddingStandIn;
let botApi: BotApiStandIn;
const model = new ModelStandIn();
const { run, failure } = knowledgeRunner(() => vdb.pool, '3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7', {
	embeddings: () => ({ api: 'gemini', baseUrl: embeddings.baseUrl }),
	telegram: () => ({ accessToken: botApi.token, baseUrl: botApi.baseUrl }),
	llm: () => ({ api: 'openai', baseUrl: model.url, model: 'stand-in' }),
});
/**
 * Answer with the node's fields set as given. The tests before issue 30's hybrid retrieval pin `vector` and the
 * floors their fixtures were written for (0.25 / 0.7: cosine of the word-hashing embedder); the hybrid tests at
 * the end use the node's defaults.
 */
const withFields = (fields: {
	minScore?: unknown;
	relativeScore?: unknown;
	retrieval?: unknown;
}): KnowledgeOperation => ({
	...answerOperation,
	execute: (deps, req) => answerOperation.execute({ ...deps, relevance: () => fields }, req),
});
const vectorAnswer = withFields({ retrieval: 'vector', minScore: 0.25, relativeScore: 0.7 });
const TENANT = '00000000-0000-4000-8000-0000000000aa';
const GROUP = -1001;
const OTHER_GROUP = -1002;
const OTHER_TENANT = '00000000-0000-4000-8000-0000000000bb';
let versionId: number;

beforeAll(async () => {
	vdb = await vectorDatabase();
	embeddings = await startEmbeddings();
	botApi = await startBotApi();
	await model.up();
	const q = (sql: string, params: unknown[] = []) => vdb.db.query(sql, params);
	await q("INSERT INTO core.tenants (tenant_id, name) VALUES ($1, 'T')", [TENANT]);
	await q(
		"INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 1, 'admin'), ($1, 2, 'user'), ($1, 3, 'user'), ($1, 4, 'blocked'), ($1, 5, 'user')",
		[TENANT],
	);
	await q('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, $2), ($1, $3)', [TENANT, GROUP, OTHER_GROUP]);
	await q(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, $2, 2, 'member'), ($1, $2, 3, 'member'), ($1, $3, 3, 'member')",
		[TENANT, GROUP, OTHER_GROUP],
	);
	await q("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536)");
	const docs: [string, number, 'group' | 'dm', number | null][] = [
		['The deployment runbook: restart the worker pool after every schema migration.', GROUP, 'group', null],
		['Private note of user 3: the deployment password rotates every Monday.', 3, 'dm', 3],
		['Board group only: the deployment freeze starts with the merger in May.', OTHER_GROUP, 'group', null],
	];
	for (const [i, [text, chat, visibility, owner]] of docs.entries()) {
		const { rows } = await q(
			"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, dm_owner_user_id, text, status, title) VALUES ($1, 'url', $2, $3, $4, $5, $6, 'done', $7) RETURNING id",
			[TENANT, `url:${i}`, chat, visibility, owner, text, `Doc ${i}`],
		);
		const id = Number((rows[0] as { id: number }).id);
		await run(chunkOperation, { tenant_id: TENANT, document_id: id });
		await run(embedOperation, { tenant_id: TENANT, document_id: id, model_id: 1 });
	}
	const message = await q(
		"INSERT INTO tg.messages (tenant_id, chat_id, message_id, from_user_id, sent_at, visibility) VALUES ($1, $2, 77, 2, now(), 'group') RETURNING id",
		[TENANT, GROUP],
	);
	const version = await q(
		"INSERT INTO tg.message_versions (message_fk, version_no, text, payload) VALUES ($1, 0, 'how do we deploy?', '{}') RETURNING id",
		[(message.rows[0] as { id: number }).id],
	);
	versionId = Number((version.rows[0] as { id: number }).id);
});
afterAll(async () => {
	await model.down();
	await botApi.close();
	await embeddings.close();
	await vdb.close();
});

const ask = (user: number, question: string, extra: Record<string, unknown> = {}) => ({
	tenant_id: TENANT,
	tg_user_id: user,
	channel: 'group',
	chat_id: GROUP,
	question,
	question_message_version_id: null,
	...extra,
});

test('a member asks in the group: the model answers from the visible source only, cited; turn, citations and the reply recorded', async () => {
	model.respond = () => ({ text: 'Restart the worker pool after each migration [1].' });
	const before = model.requests.length;
	const { data } = await run(
		vectorAnswer,
		ask(2, 'How do we handle deployment after a migration?', { question_message_version_id: versionId }),
	);
	assert.equal(data.answer_text, 'Restart the worker pool after each migration [1].');
	const citations = data.citations as { rank: number; snippet: string; source_ref: { title: string } }[];
	assert.deepEqual(
		citations.map((c) => c.source_ref.title),
		['Doc 0'],
		"user 3's DM note is never a source for user 2",
	);
	const prompt = JSON.stringify(model.requests.slice(before)[0].body);
	assert.match(prompt, /restart the worker pool/);
	assert.doesNotMatch(prompt, /password/);
	const reply = botApi.sent.at(-1)!;
	assert.deepEqual([reply.chat_id, reply.reply_parameters?.message_id], [GROUP, 77]);
	assert.match(reply.text, /Sources:\n\[1\] Doc 0/);
	const turn = await vdb.db.query<{ answer_text: string; telegram_message_id: number; n: number }>(
		'SELECT t.answer_text, t.telegram_message_id::int AS telegram_message_id, (SELECT count(*)::int FROM audit.qa_citations c WHERE c.turn_id = t.id) AS n FROM audit.qa_turns t WHERE t.id = $1',
		[data.turn_id],
	);
	assert.deepEqual(turn.rows[0], {
		answer_text: data.answer_text,
		telegram_message_id: data.telegram_message_id,
		n: 1,
	});
});

test('the same question message again (a retried job): the same turn, no second model call, no second reply', async () => {
	const [requests, sent] = [model.requests.length, botApi.sent.length];
	const first = (
		await run(
			vectorAnswer,
			ask(2, 'How do we handle deployment after a migration?', { question_message_version_id: versionId }),
		)
	).data;
	assert.equal(model.requests.length, requests);
	assert.equal(botApi.sent.length, sent);
	const turns = await vdb.db.query<{ n: number }>(
		'SELECT count(*)::int AS n FROM audit.qa_turns WHERE question_message_version_id = $1',
		[versionId],
	);
	assert.equal(turns.rows[0].n, 1);
	assert.ok(first.turn_id);
});

test('sendMessage fails: a retryable 502 with the turn kept; the retry only sends', async () => {
	model.respond = () => ({ text: 'Answer for user 3 [1].' });
	const message = await vdb.db.query<{ id: number }>(
		"INSERT INTO tg.messages (tenant_id, chat_id, message_id, from_user_id, sent_at, visibility) VALUES ($1, $2, 78, 3, now(), 'group') RETURNING id",
		[TENANT, GROUP],
	);
	const version = await vdb.db.query<{ id: number }>(
		"INSERT INTO tg.message_versions (message_fk, version_no, text, payload) VALUES ($1, 0, 'deploy?', '{}') RETURNING id",
		[message.rows[0].id],
	);
	const req = ask(3, 'deployment steps?', { question_message_version_id: Number(version.rows[0].id) });
	botApi.failNext(502);
	const error = await failure(vectorAnswer, req);
	assert.deepEqual([error.statusCode, error.retryable, error.details.code], [502, true, 'REPLY_FAILED']);
	const calls = model.requests.length;
	const retried = (await run(vectorAnswer, req)).data;
	assert.equal(model.requests.length, calls, 'the model is not asked again');
	assert.equal(retried.turn_id, error.details.turn_id);
	assert.ok(retried.telegram_message_id);
});

test('ACL before anything: blocked → 403, non-member in the group → 403 NOT_A_MEMBER; no turn written', async () => {
	const turns = async () =>
		(await vdb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit.qa_turns')).rows[0].n;
	const before = await turns();
	const blocked = await failure(vectorAnswer, ask(4, 'deployment?'));
	assert.deepEqual([blocked.statusCode, blocked.details.code], [403, 'BLOCKED']);
	const outsider = await failure(vectorAnswer, ask(5, 'deployment?'));
	assert.deepEqual([outsider.statusCode, outsider.details.code], [403, 'NOT_A_MEMBER']);
	const empty = await failure(vectorAnswer, ask(2, '   '));
	assert.deepEqual([empty.statusCode, empty.details.field], [422, 'req.question']);
	assert.equal(await turns(), before);
});

test("spoofed DM (WF51): a dm naming a group or another user's dm is refused 403 DM_NOT_OWN_CHAT; nothing read, asked, written or sent", async () => {
	const counts = async () =>
		(
			await vdb.db.query<{ turns: number; sessions: number }>(
				'SELECT (SELECT count(*)::int FROM audit.qa_turns) AS turns, (SELECT count(*)::int FROM audit.qa_sessions) AS sessions',
			)
		).rows[0];
	const [before, calls, sent] = [await counts(), model.requests.length, botApi.sent.length];
	for (const chatId of [GROUP, 3, '3', -1]) {
		const error = await failure(vectorAnswer, {
			tenant_id: TENANT,
			tg_user_id: 2,
			channel: 'dm',
			chat_id: chatId,
			question: 'what is the deployment password?',
		});
		assert.deepEqual(
			[error.statusCode, error.kind, error.details.code],
			[403, 'auth', 'DM_NOT_OWN_CHAT'],
			`chat_id ${chatId}`,
		);
	}
	const rounded = await failure(vectorAnswer, {
		tenant_id: TENANT,
		tg_user_id: 9007199254740993,
		channel: 'dm',
		chat_id: 9007199254740993,
		question: 'password?',
	});
	assert.deepEqual([rounded.statusCode, rounded.details.field], [422, 'req.tg_user_id']);
	assert.deepEqual(await counts(), before);
	assert.equal(model.requests.length, calls, 'the model is not asked');
	assert.equal(botApi.sent.length, sent, 'nothing is sent to the named chat');
});

test("own DM (WF51): the reply goes to the asker's own private chat", async () => {
	model.respond = () => ({ text: 'Restart the worker pool [1].' });
	const { data } = await run(vectorAnswer, {
		tenant_id: TENANT,
		tg_user_id: 2,
		channel: 'dm',
		chat_id: '2',
		question: 'deployment runbook after a migration?',
	});
	assert.ok(data.telegram_message_id);
	assert.equal(botApi.sent.at(-1)!.chat_id, 2);
});

test('nothing visible: the fixed answer, no model call; the admin sees the DM note', async () => {
	const calls = model.requests.length;
	const dm = (
		await run(vectorAnswer, {
			tenant_id: TENANT,
			tg_user_id: 5,
			channel: 'dm',
			chat_id: null,
			question: 'deployment password?',
		})
	).data;
	assert.deepEqual([dm.answer_text, dm.citations], [nothingFoundText('dm', 'deployment password?'), []]);
	assert.equal(model.requests.length, calls);
	model.respond = () => ({ text: 'It rotates every Monday [1].' });
	const admin = (
		await run(vectorAnswer, {
			tenant_id: TENANT,
			tg_user_id: 1,
			channel: 'dm',
			chat_id: null,
			question: 'deployment password rotates?',
			send_reply: false,
		})
	).data;
	assert.ok((admin.citations as { source_ref: { title: string } }[]).some((c) => c.source_ref.title === 'Doc 1'));
	assert.equal(admin.telegram_message_id, null);
});

test("asked in the group, the answer cites only that group: not the asker's DM, not another group they are in, not an admin's view of the tenant", async () => {
	model.respond = () => ({ text: 'Restart the worker pool [1].' });
	for (const user of [3, 1]) {
		const before = model.requests.length;
		const { data } = await run(vectorAnswer, ask(user, 'deployment password, deployment freeze, deployment runbook?'));
		const citations = data.citations as { source_ref: { title: string; chat_id: number } }[];
		assert.deepEqual(
			citations.map((c) => [c.source_ref.title, c.source_ref.chat_id]),
			[['Doc 0', GROUP]],
			`user ${user}`,
		);
		const prompt = JSON.stringify(model.requests.slice(before));
		assert.doesNotMatch(prompt, /Monday|merger/, `user ${user}: no other place reaches the model`);
		const reply = botApi.sent.at(-1)!;
		assert.equal(reply.chat_id, GROUP);
		assert.doesNotMatch(reply.text, /Doc 1|Doc 2/, `user ${user}: the group reads only its own sources`);
	}
	// the same admin in their own dm still sees the whole tenant (the model cites all three sources)
	model.respond = () => ({ text: 'Runbook [1], password [2], freeze [3].' });
	const dm = (
		await run(vectorAnswer, {
			tenant_id: TENANT,
			tg_user_id: 1,
			channel: 'dm',
			chat_id: null,
			question: 'deployment password, deployment freeze, deployment runbook?',
			send_reply: false,
		})
	).data;
	assert.deepEqual((dm.citations as { source_ref: { title: string } }[]).map((c) => c.source_ref.title).sort(), [
		'Doc 0',
		'Doc 1',
		'Doc 2',
	]);
});

test("reply-to is scoped: a question_message_version_id of another chat or another tenant never makes the bot reply to this chat's message with the same message_id", async () => {
	model.respond = () => ({ text: 'Restart the worker pool [1].' });
	await vdb.db.query("INSERT INTO core.tenants (tenant_id, name) VALUES ($1, 'Other') ON CONFLICT DO NOTHING", [
		OTHER_TENANT,
	]);
	const version = async (tenant: string, chat: number, messageId: number) => {
		const m = await vdb.db.query<{ id: number }>(
			"INSERT INTO tg.messages (tenant_id, chat_id, message_id, from_user_id, sent_at, visibility) VALUES ($1, $2, $3, 2, now(), 'group') RETURNING id",
			[tenant, chat, messageId],
		);
		const v = await vdb.db.query<{ id: number }>(
			"INSERT INTO tg.message_versions (message_fk, version_no, text, payload) VALUES ($1, 0, 'a question', '{}') RETURNING id",
			[m.rows[0].id],
		);
		return Number(v.rows[0].id);
	};
	await version(TENANT, GROUP, 555); // the message the bot must not reply to
	for (const foreign of [await version(TENANT, OTHER_GROUP, 555), await version(OTHER_TENANT, GROUP, 555)]) {
		const { data } = await run(vectorAnswer, ask(2, 'deployment runbook?', { question_message_version_id: foreign }));
		assert.ok(data.telegram_message_id);
		const reply = botApi.sent.at(-1)!;
		assert.equal(reply.chat_id, GROUP);
		assert.equal(reply.reply_parameters?.message_id, undefined, `version ${foreign} is not a message of this chat`);
	}
	const own = await version(TENANT, GROUP, 556);
	await run(vectorAnswer, ask(2, 'deployment runbook?', { question_message_version_id: own }));
	assert.equal(botApi.sent.at(-1)!.reply_parameters?.message_id, 556, "control: this chat's own message is replied to");
});

test('a question with a NUL or a lone surrogate is refused 422 req.question, before the model is asked or anything written', async () => {
	const turns = async () =>
		(await vdb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit.qa_turns')).rows[0].n;
	const [before, calls, sent] = [await turns(), model.requests.length, botApi.sent.length];
	for (const question of ['deploy\u0000ment?', 'deploy \ud800 ment?', 'deploy \udc00?']) {
		const error = await failure(vectorAnswer, ask(2, question));
		assert.deepEqual(
			[error.statusCode, error.kind, error.details.field],
			[422, 'validation', 'req.question'],
			JSON.stringify(question),
		);
	}
	assert.deepEqual([await turns(), model.requests.length, botApi.sent.length], [before, calls, sent]);
	model.respond = () => ({ text: 'ok [1]' });
	const pair = (await run(vectorAnswer, ask(2, 'deployment 👋 runbook?', { send_reply: false }))).data;
	assert.ok(pair.turn_id, 'a valid surrogate pair (an emoji) is a question like any other');
});

test('Upsert Session (WF50): one session per user and chat, meta merged', async () => {
	const a = (
		await run(upsertSessionOperation, {
			tenant_id: TENANT,
			tg_user_id: 2,
			channel: 'group',
			chat_id: GROUP,
			meta: { lang: 'en' },
		})
	).data;
	const b = (
		await run(upsertSessionOperation, {
			tenant_id: TENANT,
			tg_user_id: 2,
			channel: 'group',
			chat_id: GROUP,
			meta: { topic: 'deploy' },
		})
	).data;
	assert.equal(a.session_id, b.session_id);
	assert.equal(b.created, false);
	const { rows } = await vdb.db.query<{ meta: Record<string, unknown> }>(
		'SELECT meta FROM audit.qa_sessions WHERE session_id = $1',
		[a.session_id],
	);
	assert.equal(rows[0].meta.lang, 'en');
	assert.equal(rows[0].meta.topic, 'deploy');
	for (const meta of [{ note: 'a\u0000b' }, { 'k\u0000': 1 }, { deep: [{ x: '\ud800' }] }]) {
		const refused = await failure(upsertSessionOperation, {
			tenant_id: TENANT,
			tg_user_id: 2,
			channel: 'group',
			chat_id: GROUP,
			meta,
		});
		assert.deepEqual([refused.statusCode, refused.details.field], [422, 'req.meta'], JSON.stringify(meta));
	}
});

// --- issue 30: relevant citations only, one Sources line per document ---

const NOTES_GROUP = -1003;

/** Answer with retrieval `vector` and the node's Minimum Score / Minimum Relative Score fields set as given. */
const withFloors = (fields: { minScore?: unknown; relativeScore?: unknown }): KnowledgeOperation =>
	withFields({ retrieval: 'vector', ...fields });

async function notesGroup() {
	const q = (sql: string, params: unknown[] = []) => vdb.db.query(sql, params);
	if ((await q('SELECT 1 FROM core.tenant_chats WHERE chat_id = $1', [NOTES_GROUP])).rows.length) return;
	await q('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, $2)', [TENANT, NOTES_GROUP]);
	await q(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, $2, 2, 'member')",
		[TENANT, NOTES_GROUP],
	);
	await q("INSERT INTO tg.files (tenant_id, file_unique_id, file_name) VALUES ($1, 'uniq-notes', 'notes.pdf')", [
		TENANT,
	]);
	const article = Array.from(
		{ length: 120 },
		(_, i) => `Paragraph ${i} explains overlap and recall in retrieval.`,
	).join('\n');
	const handbook = Array.from(
		{ length: 40 },
		(_, i) => `Section ${i}: a vector index answers nearest-neighbour queries over embeddings.`,
	).join('\n');
	const docs: [string, 'url' | 'file', string | null, string | null][] = [
		['Meeting notes on vector indexes: we rebuild them every night.', 'file', null, 'uniq-notes'],
		[article, 'url', 'Retrieval notes', null],
		[handbook, 'url', 'Vector index handbook', null],
	];
	for (const [i, [text, type, title, unique]] of docs.entries()) {
		const { rows } = await q(
			"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status, title, file_unique_id) VALUES ($1, $2, $3, $4, 'group', $5, 'done', $6, $7) RETURNING id",
			[TENANT, type, `${type}:notes-${i}`, NOTES_GROUP, text, title, unique],
		);
		const id = Number((rows[0] as { id: number }).id);
		await run(chunkOperation, { tenant_id: TENANT, document_id: id });
		await run(embedOperation, { tenant_id: TENANT, document_id: id, model_id: 1 });
	}
}

const inNotes = (question: string, extra: Record<string, unknown> = {}) =>
	ask(2, question, { chat_id: NOTES_GROUP, ...extra });

test('issue 30: the unrelated article is neither sent to the model nor cited; the file is named by its file name', async () => {
	await notesGroup();
	model.respond = extractiveAnswer;
	const before = model.requests.length;
	const { data } = await run(vectorAnswer, inNotes('What do the meeting notes say about vector indexes?'));
	const prompt = JSON.stringify(model.requests.slice(before));
	assert.doesNotMatch(prompt, /overlap and recall/, 'the noise chunks fail the floors');
	const retrieval = data.retrieval as { candidates: number; relevant: number };
	assert.equal(retrieval.candidates, 5);
	assert.ok(retrieval.relevant < retrieval.candidates, JSON.stringify(retrieval));
	const reply = botApi.sent.at(-1)!;
	const [, sources] = reply.text.split('\n\nSources:\n');
	assert.equal(sources, '[1] notes.pdf', reply.text);
	assert.match(data.answer_text as string, /Meeting notes on vector indexes[^"]*" \[1\]$/);
	const rows = await vdb.db.query<{ chunk_id: number; source: number }>(
		"SELECT chunk_id::int AS chunk_id, (source_ref->>'source')::int AS source FROM audit.qa_citations WHERE turn_id = $1 ORDER BY rank",
		[data.turn_id],
	);
	assert.deepEqual(
		rows.rows,
		(data.citations as { chunk_id: number }[]).map((c) => ({ chunk_id: c.chunk_id, source: 1 })),
	);
});

test('issue 30: several chunks of one document are one source line, every chunk id kept in audit.qa_citations', async () => {
	await notesGroup();
	model.respond = () => ({ text: 'A vector index answers nearest-neighbour queries [1].' });
	const { data } = await run(
		withFloors({ minScore: 0, relativeScore: 0.5 }),
		inNotes('vector index nearest-neighbour queries over embeddings section', { k: 4 }),
	);
	const citations = data.citations as {
		rank: number;
		chunk_id: number;
		source_ref: { document_id: number; source: number };
	}[];
	assert.ok(citations.length >= 2, `several chunks of the handbook: ${citations.length}`);
	assert.equal(new Set(citations.map((c) => c.source_ref.document_id)).size, 1);
	assert.deepEqual(
		citations.map((c) => [c.rank, c.source_ref.source]),
		citations.map((_, i) => [i + 1, 1]),
	);
	const sources = data.sources as { n: number; label: string; chunk_ids: number[] }[];
	assert.deepEqual(sources, [
		{
			n: 1,
			label: 'Vector index handbook',
			url: null,
			document_id: citations[0].source_ref.document_id,
			chunk_ids: citations.map((c) => c.chunk_id),
		},
	]);
	assert.equal(botApi.sent.at(-1)!.text.split('\n\nSources:\n')[1], '[1] Vector index handbook');
	const stored = await vdb.db.query<{ n: number }>(
		'SELECT count(*)::int AS n FROM audit.qa_citations WHERE turn_id = $1',
		[data.turn_id],
	);
	assert.equal(stored.rows[0].n, citations.length);
});

test('issue 30: only the sources the answer references are cited, renumbered in order of reference', async () => {
	await notesGroup();
	const before = model.requests.length;
	let numbered: string[] = [];
	model.respond = (body) => {
		const prompt = JSON.stringify(body);
		numbered = [...prompt.matchAll(/\[(\d+)\] (notes\.pdf|Vector index handbook|Retrieval notes)/g)].map(
			(m) => `${m[1]} ${m[2]}`,
		);
		const handbook = numbered.find((x) => x.endsWith('handbook'))?.split(' ')[0] ?? 'none';
		return { text: `Indexes answer neighbour queries [${handbook}].` };
	};
	const { data } = await run(
		withFloors({ minScore: 0, relativeScore: 0 }),
		inNotes('what do the meeting notes and the vector index handbook say about vector indexes?', { k: 10 }),
	);
	assert.equal(model.requests.length, before + 1);
	assert.ok(numbered.length >= 2, `the model saw several sources: ${numbered.join(', ')}`);
	assert.notEqual(numbered[0].split(' ')[1], 'Vector', 'the handbook is not source [1] in the prompt');
	assert.equal(data.answer_text, 'Indexes answer neighbour queries [1].');
	const sources = data.sources as { n: number; label: string }[];
	assert.deepEqual(
		sources.map((x) => [x.n, x.label]),
		[[1, 'Vector index handbook']],
	);
	assert.equal(
		botApi.sent.at(-1)!.text,
		'Indexes answer neighbour queries [1].\n\nSources:\n[1] Vector index handbook',
	);
});

test('issue 30: nothing passes the floors — a plain "found nothing" reply in the group and in a DM, no model call', async () => {
	await notesGroup();
	const calls = model.requests.length;
	const group = (await run(vectorAnswer, inNotes('What is the capital of France?'))).data;
	assert.equal(group.answer_text, "I found nothing in this chat's documents about “What is the capital of France?”.");
	assert.deepEqual([group.citations, group.sources], [[], []]);
	assert.equal(botApi.sent.at(-1)!.text, group.answer_text, 'sent as is, no Sources');
	assert.equal(botApi.sent.at(-1)!.chat_id, NOTES_GROUP);
	const dm = (
		await run(withFloors({ minScore: 0.99 }), {
			tenant_id: TENANT,
			tg_user_id: 2,
			channel: 'dm',
			chat_id: null,
			question: 'deployment runbook after a migration?',
		})
	).data;
	assert.match(
		dm.answer_text as string,
		/^I found nothing in the documents you can see .* about “deployment runbook after a migration\?”\.$/,
	);
	assert.equal(botApi.sent.at(-1)!.chat_id, 2);
	assert.equal(model.requests.length, calls, 'the model is never asked');
	const turns = await vdb.db.query<{ n: number }>(
		'SELECT count(*)::int AS n FROM audit.qa_citations WHERE turn_id = ANY($1)',
		[[group.turn_id, dm.turn_id]],
	);
	assert.equal(turns.rows[0].n, 0);
});

test('issue 30: a floor outside 0–1 is refused 422 naming the field, before anything is asked or written', async () => {
	const calls = model.requests.length;
	const error = await failure(withFloors({ relativeScore: 2 }), inNotes('vector indexes?'));
	assert.equal(error.statusCode, 422);
	assert.equal((error.details as { field: string }).field, 'relativeScore');
	assert.equal(model.requests.length, calls);
});

// --- issue 30: hybrid retrieval (the node's default Retrieval) on the pgvector route ---

test('hybrid (the default): the short document holding the question’s words is the one source; its score combines cosine and full-text rank', async () => {
	await notesGroup();
	model.respond = extractiveAnswer;
	const { data } = await run(answerOperation, inNotes('What do the meeting notes say about vector indexes?'));
	const retrieval = data.retrieval as { mode: string; min_score: number; relative_score: number };
	assert.deepEqual(
		[retrieval.mode, retrieval.min_score, retrieval.relative_score],
		['hybrid', DEFAULT_MIN_SCORE, DEFAULT_RELATIVE_SCORE],
	);
	assert.deepEqual(
		(data.sources as { label: string }[]).map((s) => s.label),
		['notes.pdf'],
	);
	// the hybrid score, recomputed from the chunk's cosine (the stand-in's vectors) and PostgreSQL's own rank
	const citation = (data.citations as { chunk_id: number; score: number; snippet: string }[])[0];
	const question = 'What do the meeting notes say about vector indexes?';
	const cosine = cosineOf(hashedVector(question, 1536), hashedVector(citation.snippet, 1536));
	const { rows } = await vdb.db.query<{ lexical: number }>(
		"SELECT ts_rank('{1,1,1,1}', strip(to_tsvector('english', $1)), replace(plainto_tsquery('english', $2)::text, ' & ', ' | ')::tsquery) AS lexical",
		[citation.snippet, question],
	);
	const lexical = Number(rows[0].lexical);
	assert.ok(lexical > 0.4, `the chunk holds 4 of the question's 5 lexemes: ${lexical}`);
	const expected = (1 - HYBRID_LEXICAL_WEIGHT) * cosine + HYBRID_LEXICAL_WEIGHT * lexical;
	assert.ok(Math.abs(citation.score - expected) < 1e-3, `${citation.score} vs ${expected}`);
});

test('hybrid: a question of common words only finds nothing (no lexeme after PostgreSQL drops the stop words); the model is not asked', async () => {
	await notesGroup();
	const calls = model.requests.length;
	const { data } = await run(answerOperation, inNotes('What is it about and how were they there?'));
	assert.match(data.answer_text as string, /^I found nothing in this chat's documents/);
	assert.deepEqual(data.sources, []);
	assert.equal(model.requests.length, calls);
});

test('Retrieval field: a value other than vector or hybrid is refused 422 naming it, before anything is asked', async () => {
	const calls = model.requests.length;
	const error = await failure(withFields({ retrieval: 'bm25' }), inNotes('vector indexes?'));
	assert.deepEqual([error.statusCode, (error.details as { field: string }).field], [422, 'retrieval']);
	assert.equal(model.requests.length, calls);
});
