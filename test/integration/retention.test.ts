/**
 * Retention → Prune (WF60) on real PostgreSQL: per-chat policies and the defaults, cascades, batches
 * with `more`, tenant and chat scoping, and nothing younger than its retention touched.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { processOperation } from '../../nodes/KnowledgeBot/actions/update/process.operation';
import { pruneOperation } from '../../nodes/KnowledgeBot/actions/retention/prune.operation';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { knowledgeRunner } from '../helpers/knowledgeOps';

let db: TestDatabase;
let tenant: string;
let other: string;
const { run, failure } = knowledgeRunner(() => db.pool, '4f5a6b7c-8d9e-4fa0-b1c2-d3e4f5a6b7c8');
const SHORT = -100_31; // policy: raw 30 days, documents 60 days
const DEFAULT = -100_90; // no policy row: 90 / 3650

beforeAll(async () => {
	db = await setupDatabase();
	tenant = (await seedBot(db.pool)).tenantId;
	other = (await seedBot(db.pool, 'other_bot')).tenantId;
	await db.pool.query(
		'INSERT INTO core.chat_policies (tenant_id, chat_id, retention_days_raw, retention_days_documents) VALUES ($1, $2, 30, 60)',
		[tenant, SHORT],
	);
});
afterAll(async () => db.drop());

/** A message in `chat` sent `days` ago (via Process Update), returns its tg.messages id. */
async function message(tenantId: string, chat: number, messageId: number, days: number) {
	const date = Math.floor(Date.now() / 1000) - days * 86_400;
	const update = {
		update_id: messageId,
		message: {
			message_id: messageId,
			date,
			chat: { id: chat, type: 'supergroup', title: 'c' },
			from: { id: 7, is_bot: false, first_name: 'U' },
			text: `m ${messageId}`,
		},
	};
	return Number((await run(processOperation, { tenant_id: tenantId, update })).data.message_fk);
}
async function documentAged(tenantId: string, chat: number, days: number) {
	const { rows } = await db.pool.query(
		"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status, created_at) VALUES ($1, 'url', $2, $3, 'group', 'x', 'done', now() - make_interval(days => $4)) RETURNING id",
		[tenantId, `url:${Math.random()}`, chat, days],
	);
	await db.pool.query(
		"INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) VALUES ($1, $2, 0, 'x', 0, 1, 'h')",
		[tenantId, rows[0].id],
	);
	return Number(rows[0].id);
}
const exists = async (table: string, id: number) =>
	(await db.pool.query(`SELECT 1 FROM ${table} WHERE id = $1`, [id])).rowCount === 1;

test('each chat keeps what its policy says: 30 days raw / 60 days documents here, 90 / 3650 without a policy', async () => {
	const keep = {
		shortMsg: await message(tenant, SHORT, 1, 10),
		defaultMsg: await message(tenant, DEFAULT, 2, 45),
		shortDoc: await documentAged(tenant, SHORT, 50),
		defaultDoc: await documentAged(tenant, DEFAULT, 400),
	};
	const drop = {
		shortMsg: await message(tenant, SHORT, 3, 31),
		defaultMsg: await message(tenant, DEFAULT, 4, 91),
		shortDoc: await documentAged(tenant, SHORT, 61),
	};
	const { data } = await run(pruneOperation, {});
	assert.equal((data.deleted as Record<string, number>)['tg.messages'], 2);
	assert.equal((data.deleted as Record<string, number>)['content.documents'], 1);
	assert.equal(data.more, false);
	for (const id of [keep.shortMsg, keep.defaultMsg]) assert.ok(await exists('tg.messages', id));
	for (const id of [keep.shortDoc, keep.defaultDoc]) assert.ok(await exists('content.documents', id));
	for (const id of [drop.shortMsg, drop.defaultMsg]) assert.ok(!(await exists('tg.messages', id)));
	assert.ok(!(await exists('content.documents', drop.shortDoc)));
	const orphans = await db.pool.query(
		'SELECT (SELECT count(*) FROM tg.message_versions v WHERE NOT EXISTS (SELECT 1 FROM tg.messages m WHERE m.id = v.message_fk))::int AS versions, (SELECT count(*) FROM kg.chunks c WHERE NOT EXISTS (SELECT 1 FROM content.documents d WHERE d.id = c.document_id))::int AS chunks',
	);
	assert.deepEqual(orphans.rows[0], { versions: 0, chunks: 0 });
});

test('batches: a full last batch reports more; the next run finishes; scoped to a tenant and a chat', async () => {
	for (let i = 0; i < 5; i++) await message(tenant, SHORT, 100 + i, 40);
	const foreign = await message(other, SHORT, 200, 400);
	const elsewhere = await message(tenant, DEFAULT, 201, 400);
	const first = (await run(pruneOperation, { tenant_id: tenant, chat_id: SHORT, batch_size: 2, max_batches: 2 })).data;
	assert.deepEqual([(first.deleted as Record<string, number>)['tg.messages'], first.more], [4, true]);
	const second = (await run(pruneOperation, { tenant_id: tenant, chat_id: SHORT, batch_size: 2, max_batches: 2 })).data;
	assert.deepEqual([(second.deleted as Record<string, number>)['tg.messages'], second.more], [1, false]);
	assert.ok(await exists('tg.messages', foreign), 'another tenant is untouched');
	assert.ok(await exists('tg.messages', elsewhere), 'another chat is untouched');
	const bad = await failure(pruneOperation, { tenant_id: 'nope' });
	assert.deepEqual([bad.statusCode, bad.details.field], [422, 'req.tenant_id']);
});

test('finished jobs past the raw retention go, with their runs; queued jobs and jobs an update key points at stay', async () => {
	const { rows } = await db.pool.query(
		`INSERT INTO ops.jobs (tenant_id, job_type, status, finished_at) VALUES
		   ($1, 'x', 'succeeded', now() - interval '100 days'), ($1, 'x', 'queued', NULL), ($1, 'x', 'dead', now() - interval '10 days')
		 RETURNING id`,
		[tenant],
	);
	const [old, queued, recent] = rows.map((r) => Number(r.id));
	await db.pool.query("INSERT INTO ops.job_runs (job_id, attempt, status) VALUES ($1, 1, 'succeeded')", [old]);
	await run(pruneOperation, { tenant_id: tenant });
	assert.deepEqual(
		[await exists('ops.jobs', old), await exists('ops.jobs', queued), await exists('ops.jobs', recent)],
		[false, true, true],
	);
});

test('a raw update past its retention stays while its job is not finished (the job payload names the raw row, not the update)', async () => {
	const bot = (await db.pool.query('SELECT bot_id FROM core.bots WHERE tenant_id = $1 LIMIT 1', [tenant])).rows[0]
		.bot_id as string;
	const job = Number(
		(
			await db.pool.query(
				"INSERT INTO ops.jobs (tenant_id, job_type, status) VALUES ($1, 'telegram_update', 'queued') RETURNING id",
				[tenant],
			)
		).rows[0].id,
	);
	const raw = Number(
		(
			await db.pool.query(
				"INSERT INTO raw.telegram_updates (bot_id, tenant_id, update_id, update, correlation_id, received_at) VALUES ($1, $2, 990001, '{\"update_id\": 990001}', gen_random_uuid(), now() - interval '40 days') RETURNING id",
				[bot, tenant],
			)
		).rows[0].id,
	);
	await db.pool.query(
		"INSERT INTO raw.telegram_update_keys (raw_update_id, bot_id, tenant_id, update_id, update_type, chat_id, job_id) VALUES ($1, $2, $3, 990001, 'message', $4, $5)",
		[raw, bot, tenant, SHORT, job],
	);
	await run(pruneOperation, { tenant_id: tenant, chat_id: SHORT });
	assert.equal(
		await exists('raw.telegram_updates', raw),
		true,
		'its job is still queued: the raw row is the only copy of the update',
	);
	await db.pool.query("UPDATE ops.jobs SET status = 'succeeded', finished_at = now() WHERE id = $1", [job]);
	await run(pruneOperation, { tenant_id: tenant, chat_id: SHORT });
	assert.equal(await exists('raw.telegram_updates', raw), false, 'once the job finished, the 30-day policy applies');
});
