/**
 * Migration 010 on real PostgreSQL: tg.chat_memberships_current.is_member becomes a stored column,
 * backfilled for the rows that exist — every status but `restricted` as before, `restricted` from the
 * stored raw ChatMember (raw.telegram_updates through tg.chat_member_events.raw_update_id), and unknown
 * (no raw update kept) as not a member. Afterwards a writer naming only the status gets a consistent
 * flag, and an inconsistent one (left but a member) is overridden by the status. The new source_update_id
 * (the order of same-second changes) is unknown (NULL) for the rows that exist.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Pool } from 'pg';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres, createDatabase } = require('../../scripts/lib/postgres');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrate, MIGRATIONS_DIR } = require('../../scripts/lib/migrate') as {
	migrate(url: string, o?: { dir?: string }): Promise<void>;
	MIGRATIONS_DIR: string;
};

let server: { url: string; stop(): Promise<void> };
let db: { url: string; drop(): Promise<void> };
let pool: Pool;
let dir: string;

beforeAll(async () => {
	server = await resolvePostgres();
	db = await createDatabase(server.url);
	pool = new Pool({ connectionString: db.url });
	dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
});
afterAll(async () => {
	await pool?.end();
	await db?.drop();
	await server?.stop();
	fs.rmSync(dir, { recursive: true, force: true });
});

const copy = (filter: (name: string) => boolean) => {
	for (const name of fs.readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql') && filter(f)))
		fs.copyFileSync(path.join(MIGRATIONS_DIR, name), path.join(dir, name));
};

test('010 backfills is_member: restricted from the raw ChatMember, unknown → not a member; the rest by status', async () => {
	copy((name) => name < '010');
	await migrate(db.url, { dir });
	const q = (sql: string, params: unknown[] = []) => pool.query(sql, params);
	const tenant = (await q("INSERT INTO core.tenants (name) VALUES ('t') RETURNING tenant_id")).rows[0].tenant_id;
	const bot = (
		await q("INSERT INTO core.bots (tenant_id, bot_key, webhook_secret) VALUES ($1, 'b', 's') RETURNING bot_id", [
			tenant,
		])
	).rows[0].bot_id;
	const chat = -1001;
	const rawUpdate = async (updateId: number, userId: number, member: Record<string, unknown>) =>
		(
			await q(
				'INSERT INTO raw.telegram_updates (bot_id, tenant_id, update_id, update, correlation_id) VALUES ($1, $2, $3, $4, gen_random_uuid()) RETURNING id',
				[
					bot,
					tenant,
					updateId,
					JSON.stringify({
						update_id: updateId,
						chat_member: {
							chat: { id: chat, type: 'supergroup' },
							date: 1_763_000_000 + updateId,
							new_chat_member: { user: { id: userId, is_bot: false, first_name: 'U' }, ...member },
						},
					}),
				],
			)
		).rows[0].id;
	const event = async (userId: number, rawId: string | null, updateId: number) =>
		q(
			"INSERT INTO tg.chat_member_events (tenant_id, chat_id, tg_user_id, old_status, new_status, event_date, raw_update_id) VALUES ($1, $2, $3, 'member', 'restricted', to_timestamp($4), $5)",
			[tenant, chat, userId, 1_763_000_000 + updateId, rawId],
		);
	// 10 restricted, still a member (raw says so); 11 restricted and left (raw says so); 12 restricted, raw pruned;
	// 13 restricted, first a member then left (the newest raw update decides); 14 member; 15 left; 16 kicked; 17 creator
	await event(10, await rawUpdate(1, 10, { status: 'restricted', is_member: true }), 1);
	await event(11, await rawUpdate(2, 11, { status: 'restricted', is_member: false }), 2);
	await event(12, null, 3);
	await event(13, await rawUpdate(4, 13, { status: 'restricted', is_member: true }), 4);
	await event(13, await rawUpdate(5, 13, { status: 'restricted', is_member: false }), 5);
	const rows: [number, string][] = [
		[10, 'restricted'],
		[11, 'restricted'],
		[12, 'restricted'],
		[13, 'restricted'],
		[14, 'member'],
		[15, 'left'],
		[16, 'kicked'],
		[17, 'creator'],
	];
	for (const [user, status] of rows)
		await q(
			'INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, $2, $3, $4)',
			[tenant, chat, user, status],
		);
	const before = await q('SELECT tg_user_id::int AS u, is_member FROM tg.chat_memberships_current ORDER BY 1');
	assert.ok(
		before.rows.filter((r) => r.u >= 10 && r.u <= 13).every((r) => r.is_member),
		'before 010 every restricted row counted as a member',
	);

	copy(() => true);
	await migrate(db.url, { dir });
	const after = await q('SELECT tg_user_id::int AS u, is_member FROM tg.chat_memberships_current ORDER BY 1');
	assert.deepEqual(Object.fromEntries(after.rows.map((r) => [r.u, r.is_member])), {
		10: true,
		11: false,
		12: false,
		13: false,
		14: true,
		15: false,
		16: false,
		17: true,
	});
	// the rows that exist have no known update_id (ordering of a same-second change: the non-member state wins)
	const ids = await q(
		'SELECT count(*)::int AS n, count(source_update_id)::int AS known FROM tg.chat_memberships_current',
	);
	assert.deepEqual(ids.rows[0], { n: 8, known: 0 });

	// after 010: a status-only writer gets a consistent flag; restricted without a flag is not a member
	await q(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, $2, 20, 'administrator'), ($1, $2, 21, 'restricted'), ($1, $2, 22, 'kicked')",
		[tenant, chat],
	);
	await q(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status, is_member) VALUES ($1, $2, 23, 'left', true), ($1, $2, 24, 'restricted', true)",
		[tenant, chat],
	);
	await q("UPDATE tg.chat_memberships_current SET status = 'left' WHERE tg_user_id = 14");
	const written = await q(
		'SELECT tg_user_id::int AS u, is_member FROM tg.chat_memberships_current WHERE tg_user_id IN (14, 20, 21, 22, 23, 24) ORDER BY 1',
	);
	assert.deepEqual(Object.fromEntries(written.rows.map((r) => [r.u, r.is_member])), {
		14: false,
		20: true,
		21: false,
		22: false,
		23: false,
		24: true,
	});
	await q('UPDATE tg.chat_memberships_current SET is_member = NULL WHERE tg_user_id = 24'); // unknown → not a member
	assert.equal(
		(await q('SELECT is_member FROM tg.chat_memberships_current WHERE tg_user_id = 24')).rows[0].is_member,
		false,
	);
});
