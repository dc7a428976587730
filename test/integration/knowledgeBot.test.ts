/**
 * Knowledge Bot operations on real PostgreSQL: Process (WF20), Normalize (WF30), Chunk (WF40), Embed's vector route (WF41).
 * Replays are no-ops (every table compared row by row), failures roll back, errors name the field.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { chunkOperation } from '../../nodes/KnowledgeBot/actions/document/chunk.operation';
import { embedOperation } from '../../nodes/KnowledgeBot/actions/document/embed.operation';
import { processOperation } from '../../nodes/KnowledgeBot/actions/update/process.operation';
import { ingestUpdate } from '../../nodes/TelegramIngest/actions/ingest.operation';
import { loadContext } from '../../nodes/shared/acl/loadContext';
import type { ContractError } from '../../nodes/shared/errors';
import { normalizeOperation } from '../../nodes/KnowledgeBot/actions/url/normalize.operation';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { knowledgeRunner } from '../helpers/knowledgeOps';
import {
	documentMessage,
	editedMessage,
	memberJoined,
	mixedUpdates,
	photoWithCaption,
	textWithUrls,
} from '../helpers/updates';

let db: TestDatabase;
let tenant: string;
let botId: string;

beforeAll(async () => {
	db = await setupDatabase();
	({ tenantId: tenant, botId } = await seedBot(db.pool));
	await db.pool.query("UPDATE core.bots SET username = 'KB_helper_bot' WHERE bot_id = $1", [botId]);
});
afterAll(async () => db.drop());

const CORRELATION = '0b8f9d2e-6a43-4c55-9a51-3f1c2d4e5f60';

const { run, failure } = knowledgeRunner(() => db.pool, CORRELATION);

const TABLES = [
	'tg.users',
	'tg.chats',
	'tg.messages',
	'tg.message_versions',
	'tg.message_attachments',
	'tg.files',
	'tg.file_instances',
	'tg.chat_member_events',
	'tg.chat_memberships_current',
	'content.urls',
	'content.documents',
	'kg.chunks',
	'ops.jobs',
];

/** Every row of every table the knowledge bot writes, as text, in a stable order. */
async function snapshot(): Promise<Record<string, string[]>> {
	const out: Record<string, string[]> = {};
	for (const table of TABLES) {
		const { rows } = await db.pool.query(`SELECT t::text AS r FROM ${table} t ORDER BY 1`);
		out[table] = rows.map((r) => r.r);
	}
	return out;
}

test('a message with URLs: user, chat, message, version 0 and one url_normalize job per canonical-distinct URL', async () => {
	const update = textWithUrls();
	const { data, ctx } = await run(processOperation, { tenant_id: tenant, update });
	const message = (update as { message: { message_id: number; chat: { id: number } } }).message;
	assert.equal(data.message_id, message.message_id);
	assert.equal(ctx.chat_id, message.chat.id);
	const jobs = await db.pool.query(
		"SELECT id, payload FROM ops.jobs WHERE job_type = 'url_normalize' AND id = ANY($1) ORDER BY id",
		[(data.created_jobs as { url_jobs: number[] }).url_jobs],
	);
	assert.deepEqual(
		jobs.rows.map((r) => r.payload.url),
		['https://example.org/a?utm_source=x', 'https://n8n.io'],
	);
	assert.deepEqual(jobs.rows[0].payload.ctx, {
		chat_id: message.chat.id,
		visibility: 'group',
		dm_owner_user_id: null,
		message_version_id: data.message_version_id,
	});
	const version = await db.pool.query(
		'SELECT v.version_no, v.normalized_text, m.visibility FROM tg.message_versions v JOIN tg.messages m ON m.id = v.message_fk WHERE v.id = $1',
		[data.message_version_id],
	);
	assert.deepEqual(version.rows[0], {
		version_no: '0',
		normalized_text: '👋 see https://example.org/a?utm_source=x and https://n8n.io',
		visibility: 'group',
	});
});

test('an edit adds a version (version_no = edit_date) to the same message; replaying it adds nothing', async () => {
	const original = {
		update_id: 1,
		message: { ...editedMessage().edited_message, edit_date: undefined, text: 'see the doc' },
	};
	const first = await run(processOperation, { tenant_id: tenant, update: original });
	const edit = editedMessage();
	const second = await run(processOperation, { tenant_id: tenant, update: edit });
	const again = await run(processOperation, { tenant_id: tenant, update: edit });
	assert.equal(second.data.message_fk, first.data.message_fk);
	assert.notEqual(second.data.message_version_id, first.data.message_version_id);
	assert.deepEqual(again.data, second.data);
	const versions = await db.pool.query(
		'SELECT version_no::int, text FROM tg.message_versions WHERE message_fk = $1 ORDER BY version_no',
		[first.data.message_fk],
	);
	assert.deepEqual(versions.rows, [
		{ version_no: 0, text: 'see the doc' },
		{ version_no: edit.edited_message.edit_date, text: 'see the docs' },
	]);
});

test('a DM photo: visibility dm owned by the sender, the largest size as the attachment, a file_download job', async () => {
	const update = photoWithCaption();
	const { data } = await run(processOperation, { tenant_id: tenant, update });
	const message = await db.pool.query(
		'SELECT visibility, dm_owner_user_id::bigint AS owner FROM tg.messages WHERE id = $1',
		[data.message_fk],
	);
	assert.deepEqual(message.rows[0], { visibility: 'dm', owner: String(update.message.from.id) });
	const attachments = await db.pool.query(
		'SELECT kind, file_unique_id FROM tg.message_attachments WHERE message_version_id = $1',
		[data.message_version_id],
	);
	assert.deepEqual(attachments.rows, [{ kind: 'photo', file_unique_id: 'AQADs2' }]);
	const fileJobs = (data.created_jobs as { file_jobs: number[] }).file_jobs;
	const job = await db.pool.query('SELECT job_type, payload FROM ops.jobs WHERE id = $1', [fileJobs[0]]);
	assert.equal(job.rows[0].job_type, 'file_download');
	assert.deepEqual(job.rows[0].payload.ctx.visibility, 'dm');
	assert.equal(job.rows[0].payload.ctx.dm_owner_user_id, update.message.from.id);
});

test('member changes: an event once, and the current membership never moves back in time', async () => {
	const joined = memberJoined(undefined, 424242, 1_763_900_000);
	const left = { ...memberJoined(undefined, 424242, 1_763_900_100) };
	left.chat_member = {
		...left.chat_member,
		old_chat_member: left.chat_member.new_chat_member,
		new_chat_member: { ...left.chat_member.new_chat_member, status: 'left' },
	};
	await run(processOperation, { tenant_id: tenant, update: joined });
	await run(processOperation, { tenant_id: tenant, update: left });
	const late = await run(processOperation, { tenant_id: tenant, update: joined }); // the older update arrives again
	assert.equal(late.data.member_events, 0);
	const current = await db.pool.query(
		'SELECT status, is_member FROM tg.chat_memberships_current WHERE tg_user_id = 424242',
	);
	assert.deepEqual(current.rows, [{ status: 'left', is_member: false }]);
	const events = await db.pool.query(
		'SELECT new_status FROM tg.chat_member_events WHERE tg_user_id = 424242 ORDER BY event_date',
	);
	assert.deepEqual(
		events.rows.map((r) => r.new_status),
		['member', 'left'],
	);
});

/** A chat_member update as Telegram sends it: `restricted` is a ChatMemberRestricted with its own is_member. */
function restrictedChange(userId: number, date: number, old: Record<string, unknown>, isMember: boolean) {
	const carol = { id: userId, is_bot: false, first_name: 'Carol' };
	const admin = { id: 111222333, is_bot: false, first_name: 'Alice', username: 'alice' };
	const restricted = {
		user: carol,
		status: 'restricted',
		is_member: isMember,
		until_date: 0,
		can_send_messages: false,
		can_send_audios: false,
		can_send_documents: false,
		can_send_photos: false,
		can_send_videos: false,
		can_send_video_notes: false,
		can_send_voice_notes: false,
		can_send_polls: false,
		can_send_other_messages: false,
		can_add_web_page_previews: false,
		can_change_info: false,
		can_invite_users: false,
		can_pin_messages: false,
		can_manage_topics: false,
	};
	return {
		update_id: date,
		chat_member: {
			chat: { id: -1001234567890, title: 'Research group', type: 'supergroup' },
			from: isMember ? admin : carol,
			date,
			old_chat_member: { user: carol, ...old },
			new_chat_member: restricted,
		},
	};
}

test("member changes: a restricted user keeps Telegram's is_member — restricted member, then restricted and left is no member (Context Loader refuses)", async () => {
	const user = 525252;
	const chat = -1001234567890;
	await db.pool.query("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, $2, 'user')", [
		tenant,
		user,
	]);
	await db.pool.query('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
		tenant,
		chat,
	]);
	const current = async () =>
		(
			await db.pool.query(
				'SELECT status, is_member FROM tg.chat_memberships_current WHERE tenant_id = $1 AND tg_user_id = $2',
				[tenant, user],
			)
		).rows;
	const acl = async () => {
		try {
			await loadContext(db.pool, { tenant_id: tenant, tg_user_id: user, chat_id: chat, channel: 'group' }, {});
			return 'allowed';
		} catch (e) {
			return (e as ContractError).details.code;
		}
	};
	await run(processOperation, {
		tenant_id: tenant,
		update: restrictedChange(user, 1_763_950_000, { status: 'member' }, true),
	});
	assert.deepEqual(await current(), [{ status: 'restricted', is_member: true }]);
	assert.equal(await acl(), 'allowed');
	const left = restrictedChange(user, 1_763_950_100, { status: 'restricted', is_member: true }, false);
	const { data } = await run(processOperation, { tenant_id: tenant, update: left });
	assert.equal(data.member_events, 1);
	assert.deepEqual(await current(), [{ status: 'restricted', is_member: false }]);
	assert.equal(await acl(), 'NOT_A_MEMBER');
	// a replay of the older update does not move the membership back
	await run(processOperation, {
		tenant_id: tenant,
		update: restrictedChange(user, 1_763_950_000, { status: 'member' }, true),
	});
	assert.deepEqual(await current(), [{ status: 'restricted', is_member: false }]);
});

test('member changes: a Telegram id beyond 2^53 (already rounded) is refused 422 naming the field, nothing stored', async () => {
	const update = restrictedChange(9007199254740993, 1_763_960_000, { status: 'member' }, true);
	const error = await failure(processOperation, { tenant_id: tenant, update });
	assert.equal(error.statusCode, 422);
	assert.match(String(error.details.field), /^req\.update\.chat_member\.(old|new)_chat_member\.user\.id$/);
	const { rows } = await db.pool.query(
		'SELECT count(*)::int AS n FROM tg.chat_memberships_current WHERE tg_user_id >= 9007199254740992',
	);
	assert.equal(rows[0].n, 0);
});

test('the chat policy gates content jobs: URL fetch and file download off → no jobs, the facts still stored', async () => {
	const update = documentMessage(undefined, 88_001);
	await db.pool.query(
		'INSERT INTO core.chat_policies (tenant_id, chat_id, allow_url_fetch, allow_file_download) VALUES ($1, $2, false, false)',
		[tenant, update.message.chat.id],
	);
	try {
		const { data } = await run(processOperation, {
			tenant_id: tenant,
			update: {
				...update,
				message: {
					...update.message,
					caption: 'x https://a.example',
					caption_entities: [{ type: 'url', offset: 2, length: 17 }],
				},
			},
		});
		assert.deepEqual(data.created_jobs, { url_jobs: [], file_jobs: [], qa_jobs: [] });
		assert.ok(Number(data.message_version_id) > 0);
	} finally {
		await db.pool.query('DELETE FROM core.chat_policies WHERE tenant_id = $1', [tenant]);
	}
});

test('bad input names the field (422) and writes nothing', async () => {
	const before = await snapshot();
	const noTenant = await failure(processOperation, { update: textWithUrls() });
	assert.deepEqual([noTenant.statusCode, noTenant.details.field], [422, 'req.tenant_id']);
	const noChat = await failure(processOperation, {
		tenant_id: tenant,
		update: { update_id: 5, message: { message_id: 1, date: 1 } },
	});
	assert.deepEqual([noChat.statusCode, noChat.details.field], [422, 'req.update.message.chat']);
	assert.deepEqual(await snapshot(), before);
});

test('a failure in the middle of an update rolls all of it back', async () => {
	await db.pool.query(
		`CREATE FUNCTION pg_temp_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$`.replace(
			'pg_temp_fail',
			'public.fail_attachments',
		),
	);
	await db.pool.query(
		'CREATE TRIGGER fail_attachments BEFORE INSERT ON tg.message_attachments FOR EACH ROW EXECUTE FUNCTION public.fail_attachments()',
	);
	const before = await snapshot();
	try {
		const error = await failure(processOperation, { tenant_id: tenant, update: documentMessage(undefined, 88_002) });
		assert.deepEqual([error.statusCode, error.kind, error.where.table], [500, 'db', 'tg.messages']);
		assert.deepEqual(await snapshot(), before);
	} finally {
		await db.pool.query(
			'DROP TRIGGER fail_attachments ON tg.message_attachments; DROP FUNCTION public.fail_attachments()',
		);
	}
});

test('200 mixed updates processed twice: the second pass changes no row of any table', async () => {
	const updates = mixedUpdates(200);
	for (const update of updates) await run(processOperation, { tenant_id: tenant, update });
	const first = await snapshot();
	for (const update of updates) await run(processOperation, { tenant_id: tenant, update });
	assert.deepEqual(await snapshot(), first);
	assert.ok(first['tg.message_versions'].length > 150);
	assert.ok(first['tg.chat_member_events'].length >= 25);
});

test('Normalize: variants of one URL share a row and a fetch job per chat; bad URLs are 422 on req.url', async () => {
	const ctx = { chat_id: -100777, visibility: 'group', dm_owner_user_id: null, message_version_id: null };
	const a = await run(normalizeOperation, {
		tenant_id: tenant,
		url: 'HTTPS://Docs.Example.com:443/guide/../start?b=2&a=1&utm_source=tg#intro',
		ctx,
	});
	const b = await run(normalizeOperation, {
		tenant_id: tenant,
		url: 'https://docs.example.com/start?a=1&b=2&fbclid=xyz',
		ctx,
	});
	assert.equal(a.data.normalized_url, 'https://docs.example.com/start?a=1&b=2');
	assert.deepEqual([b.data.url_id, b.data.fetch_job_id], [a.data.url_id, a.data.fetch_job_id]);
	const other = await run(normalizeOperation, {
		tenant_id: tenant,
		url: 'docs.example.com/start?a=1&b=2',
		ctx: { ...ctx, chat_id: 42, visibility: 'dm', dm_owner_user_id: 42 },
	});
	assert.notEqual(other.data.normalized_url, a.data.normalized_url); // http, not https: another URL
	const scheme = await failure(normalizeOperation, { tenant_id: tenant, url: 'ftp://example.com/x', ctx });
	assert.deepEqual(
		[scheme.statusCode, scheme.details.code, scheme.details.field],
		[422, 'UNSUPPORTED_SCHEME', 'req.url'],
	);
	const owner = await failure(normalizeOperation, {
		tenant_id: tenant,
		url: 'https://example.com',
		ctx: { ...ctx, visibility: 'dm' },
	});
	assert.equal(owner.details.field, 'req.ctx.dm_owner_user_id');
});

async function insertDocument(chatId: number, text: string | null, status: string) {
	const { rows } = await db.pool.query(
		`INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status) VALUES ($1, 'url', $2, $3, 'group', $4, $5) RETURNING id`,
		[tenant, `url:${Math.random()}`, chatId, text, status],
	);
	return Number(rows[0].id);
}

test('Chunk: chunks with overlap, idempotent, shrinking text removes the tail; 404 and 409 for missing or unready documents', async () => {
	const words = Array.from({ length: 700 }, (_, i) => `w${i}${i % 12 === 11 ? '.' : ''}`).join(' ');
	const id = await insertDocument(-100888, words, 'done');
	const first = await run(chunkOperation, { tenant_id: tenant, document_id: id });
	const chunks = (
		await db.pool.query(
			'SELECT chunk_no, text, char_start, char_end FROM kg.chunks WHERE document_id = $1 ORDER BY chunk_no',
			[id],
		)
	).rows;
	assert.equal(first.data.chunks_created, chunks.length);
	assert.ok(chunks.length >= 4);
	for (const [i, c] of chunks.entries()) {
		assert.ok(c.text.length <= 1200);
		assert.equal(words.slice(c.char_start, c.char_end), c.text);
		if (i > 0) assert.ok(c.char_start < chunks[i - 1].char_end, 'consecutive chunks overlap');
	}
	assert.equal(chunks.at(-1).char_end, words.length);
	const again = await run(chunkOperation, { tenant_id: tenant, document_id: id });
	assert.deepEqual([again.data.chunks_created, again.data.chunks_updated, again.data.chunks_removed], [0, 0, 0]);
	assert.equal(first.data.embed_job_id, null); // no active embedding model yet
	await db.pool.query("UPDATE content.documents SET text = 'short text now' WHERE id = $1", [id]);
	await db.pool.query(
		"INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'text-embedding-004', 1536)",
	);
	const shrunk = await run(chunkOperation, { tenant_id: tenant, document_id: id });
	assert.deepEqual(
		[shrunk.data.chunks_total, shrunk.data.chunks_updated, shrunk.data.chunks_removed],
		[1, 1, chunks.length - 1],
	);
	const embed = await db.pool.query('SELECT job_type, payload FROM ops.jobs WHERE id = $1', [shrunk.data.embed_job_id]);
	assert.deepEqual([embed.rows[0].job_type, embed.rows[0].payload.document_id], ['document_embed', id]);
	const missing = await failure(chunkOperation, { tenant_id: tenant, document_id: 99_999_999 });
	assert.deepEqual([missing.statusCode, missing.details.code], [404, 'DOCUMENT_NOT_FOUND']);
	const pending = await failure(chunkOperation, {
		tenant_id: tenant,
		document_id: await insertDocument(-100888, null, 'pending'),
	});
	assert.deepEqual([pending.statusCode, pending.details.code], [409, 'DOCUMENT_NOT_READY']);
	const overlap = await failure(chunkOperation, {
		tenant_id: tenant,
		document_id: id,
		chunking: { max_chars: 200, overlap: 150 },
	});
	assert.equal(overlap.details.field, 'req.chunking.overlap');
});

test('Embed on this server: the vector route of the database (exact without pgvector); with no vector store table, 500 VECTOR_STORE_MISSING, and the route found again once it is back', async () => {
	const { rows } = await db.pool.query("SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'vector'");
	const expected = rows[0].n > 0 ? 'pgvector_hnsw' : 'exact';
	const id = await insertDocument(-100999, 'some text', 'done'); // no chunks: nothing to embed, no embeddings call
	const model = (
		await db.pool.query(
			"INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'route-probe', 1536) RETURNING id",
		)
	).rows[0].id;
	const req = { tenant_id: tenant, document_id: id, model_id: model };
	assert.deepEqual((await run(embedOperation, req)).data, {
		document_id: id,
		model_id: model,
		embeddings_upserted: 0,
		chunks_embedded: 0,
		vector_route: expected,
	});
	const tables = ['chunk_embeddings_1536', 'chunk_embeddings_1536_exact'];
	const present = (
		await db.pool.query("SELECT relname FROM pg_class WHERE relnamespace = 'kg'::regnamespace AND relname = ANY($1)", [
			tables,
		])
	).rows.map((r) => r.relname as string);
	for (const t of present) await db.pool.query(`ALTER TABLE kg.${t} RENAME TO ${t}_away`);
	try {
		for (const attempt of ['cached route, table gone', 'looked up again']) {
			const error = await failure(embedOperation, req);
			assert.deepEqual(
				[error.statusCode, error.details.code, error.retryable],
				[500, 'VECTOR_STORE_MISSING', false],
				attempt,
			);
			assert.match(error.message, /db:migrate/);
		}
	} finally {
		for (const t of present) await db.pool.query(`ALTER TABLE kg.${t}_away RENAME TO ${t}`);
	}
	assert.equal((await run(embedOperation, req)).data.vector_route, expected);
});

test('questions to the bot become qa_answer jobs: a DM text (not a /command), a group text mentioning @bot (not an edit)', async () => {
	const alice = { id: 111222333, is_bot: false, first_name: 'Alice' };
	const group = { id: -1001234567890, title: 'Research group', type: 'supergroup' };
	const dm = (id: number, text: string) => ({
		update_id: id,
		message: {
			message_id: id,
			from: alice,
			chat: { id: alice.id, type: 'private', first_name: 'Alice' },
			date: 1_763_900_000,
			text,
		},
	});
	const inGroup = (id: number, text: string, edited = false) => {
		const mention = text.indexOf('@');
		const message = {
			message_id: id,
			from: alice,
			chat: group,
			date: 1_763_900_000,
			text,
			...(mention >= 0
				? { entities: [{ type: 'mention', offset: mention, length: text.slice(mention).split(' ')[0].length }] }
				: {}),
		};
		return edited
			? { update_id: id, edited_message: { ...message, edit_date: 1_763_900_100 } }
			: { update_id: id, message };
	};
	const qaJobs = async (data: Record<string, unknown>) => {
		const ids = (data.created_jobs as { qa_jobs: number[] }).qa_jobs;
		return (await db.pool.query('SELECT payload FROM ops.jobs WHERE id = ANY($1) ORDER BY id', [ids])).rows.map(
			(r) => r.payload,
		);
	};
	const asked = (
		await run(processOperation, {
			tenant_id: tenant,
			bot_id: botId,
			update: dm(61_001, 'What did we decide about pricing?'),
		})
	).data;
	const [job] = await qaJobs(asked);
	assert.deepEqual(
		[job.question, job.channel, job.chat_id, job.tg_user_id, job.question_message_version_id],
		['What did we decide about pricing?', 'dm', alice.id, alice.id, asked.message_version_id],
	);
	assert.deepEqual(
		await qaJobs(
			(await run(processOperation, { tenant_id: tenant, bot_id: botId, update: dm(61_002, '/start') })).data,
		),
		[],
	);
	const mentioned = (
		await run(processOperation, {
			tenant_id: tenant,
			bot_id: botId,
			update: inGroup(61_003, '@kb_helper_bot where is the runbook?'),
		})
	).data;
	assert.deepEqual(
		(await qaJobs(mentioned)).map((p) => [p.question, p.channel]),
		[['where is the runbook?', 'group']],
	);
	assert.deepEqual(
		await qaJobs(
			(await run(processOperation, { tenant_id: tenant, update: inGroup(61_004, '@kb_helper_bot where?') })).data,
		),
		[],
		'without bot_id no mention is recognised',
	);
	assert.deepEqual(
		await qaJobs(
			(
				await run(processOperation, {
					tenant_id: tenant,
					bot_id: botId,
					update: inGroup(61_005, '@someone_else where?'),
				})
			).data,
		),
		[],
	);
	assert.deepEqual(
		await qaJobs(
			(
				await run(processOperation, {
					tenant_id: tenant,
					bot_id: botId,
					update: inGroup(61_003, '@kb_helper_bot where is it now?', true),
				})
			).data,
		),
		[],
		'an edit asks nothing new',
	);
	const again = (
		await run(processOperation, {
			tenant_id: tenant,
			bot_id: botId,
			update: dm(61_001, 'What did we decide about pricing?'),
		})
	).data;
	assert.deepEqual(again.created_jobs, asked.created_jobs, 'a replay enqueues nothing new');
});

test('a message text with a NUL or a lone surrogate (anywhere: text, caption, names, title) is stored with U+FFFD in their place — never a 5xx, the rest as sent', async () => {
	const sender = { id: 131313, is_bot: false, first_name: 'Nu\u0000ll', last_name: 'Half \ud83d' };
	const text = 'budget\u0000plan \ud800 see https://example.org/nul 👋 @kb_helper_bot why\udc00?';
	const url = 'https://example.org/nul';
	const mention = text.indexOf('@kb_helper_bot');
	const update = {
		update_id: 62_001,
		message: {
			message_id: 62_001,
			from: sender,
			chat: { id: -1001313131313, title: 'T\u0000itle', type: 'supergroup' },
			date: 1_763_900_000,
			text,
			entities: [
				{ type: 'url', offset: text.indexOf(url), length: url.length },
				{ type: 'mention', offset: mention, length: '@kb_helper_bot'.length },
			],
		},
	};
	const { data } = await run(processOperation, { tenant_id: tenant, bot_id: botId, update });
	const stored = 'budget\ufffdplan \ufffd see https://example.org/nul 👋 @kb_helper_bot why\ufffd?';
	const version = await db.pool.query(
		"SELECT text, payload->>'text' AS payload_text FROM tg.message_versions WHERE id = $1",
		[data.message_version_id],
	);
	assert.deepEqual(version.rows[0], { text: stored, payload_text: stored });
	const names = await db.pool.query(
		'SELECT u.first_name, u.last_name, c.title FROM tg.users u, tg.chats c WHERE u.tenant_id = $1 AND u.tg_user_id = 131313 AND c.tenant_id = $1 AND c.chat_id = -1001313131313',
		[tenant],
	);
	assert.deepEqual(names.rows[0], { first_name: 'Nu\ufffdll', last_name: 'Half \ufffd', title: 'T\ufffditle' });
	const jobs = await db.pool.query('SELECT job_type, payload FROM ops.jobs WHERE id = ANY($1) ORDER BY job_type', [
		[
			...(data.created_jobs as { url_jobs: number[]; qa_jobs: number[] }).url_jobs,
			...(data.created_jobs as { qa_jobs: number[] }).qa_jobs,
		],
	]);
	assert.deepEqual(
		jobs.rows.map((r) => (r.job_type === 'url_normalize' ? r.payload.url : r.payload.question)),
		['budget\ufffdplan \ufffd see https://example.org/nul 👋 why\ufffd?', url],
		'the entity offsets still find the URL and the mention',
	);
	const replay = await run(processOperation, { tenant_id: tenant, bot_id: botId, update });
	assert.equal(replay.data.message_version_id, data.message_version_id, 'a replay is the same version');
	const trace = await failure(processOperation, {
		tenant_id: tenant,
		update: { ...update, update_id: 62_002 },
		trace_id: 't\u0000',
	});
	assert.deepEqual(
		[trace.statusCode, trace.details.field],
		[422, 'req.trace_id'],
		'a trace id goes into job payloads as given: refused, not a 5xx',
	);
});

test("WF10's job payload (raw_update_id, no update): Process reads the raw row; another tenant's or a missing row is a 404", async () => {
	const bot = await seedBot(db.pool, 'kb_payload_bot', 'Payload-secret_1');
	const update = textWithUrls();
	const stored = await ingestUpdate(
		db.pool,
		{
			botKey: bot.botKey,
			secretToken: bot.secret,
			update,
			jobType: 'telegram_update',
			maxAttempts: 5,
			workflow: 'WF10',
			nodeName: 'Telegram Ingest',
		},
		{},
	);
	const job = await db.pool.query('SELECT payload FROM ops.jobs WHERE id = $1', [stored.data.job_id]);
	const payload = job.rows[0].payload as Record<string, unknown>;
	assert.equal(payload.update, undefined);
	const { data } = await run(processOperation, payload);
	const message = (update as { message: { message_id: number; chat: { id: number }; text: string } }).message;
	assert.equal(data.message_id, message.message_id);
	const version = await db.pool.query('SELECT v.text, v.raw_update_id FROM tg.message_versions v WHERE v.id = $1', [
		data.message_version_id,
	]);
	assert.deepEqual(
		[version.rows[0].text, Number(version.rows[0].raw_update_id)],
		[message.text, payload.raw_update_id],
		"the version is the raw row's message and points at it",
	);
	assert.equal(
		(data.created_jobs as { url_jobs: number[] }).url_jobs.length > 0,
		true,
		'its URLs were read from the raw row',
	);

	const before = await snapshot();
	const other = await failure(processOperation, { ...payload, tenant_id: tenant });
	assert.deepEqual(
		[other.statusCode, other.kind, other.details.field],
		[404, 'not_found', 'req.raw_update_id'],
		"another tenant's raw row is not found",
	);
	const missing = await failure(processOperation, { ...payload, raw_update_id: 987_654_321 });
	assert.deepEqual([missing.statusCode, missing.retryable], [404, false]);
	const neither = await failure(processOperation, { tenant_id: bot.tenantId });
	assert.deepEqual([neither.statusCode, neither.details.field], [422, 'req.raw_update_id']);
	assert.deepEqual(await snapshot(), before, 'nothing written');
});
