/**
 * Member changes of one second, processed out of order (retries with backoff, overlapping WF90 runs), on
 * real PostgreSQL through Update → Process (WF20) and Context Loader (WF00c): the current membership follows
 * (Telegram's date, update_id) of one bot, never "last processed wins"; when a tie's order is unknown — a row
 * written before migration 010 or by hand, updates of two bots (update_ids are numbered per bot), or no
 * bot_id — the non-member state wins.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { loadContext } from '../../nodes/shared/acl/loadContext';
import { processOperation } from '../../nodes/KnowledgeBot/actions/update/process.operation';
import type { ContractError } from '../../nodes/shared/errors';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { knowledgeRunner } from '../helpers/knowledgeOps';

let db: TestDatabase;
let tenant: string;
let botA: string;
let botB: string;
const CHAT = -1009876543210;
const SECOND = 1_764_000_000;
const { run } = knowledgeRunner(() => db.pool, '5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f');

beforeAll(async () => {
	db = await setupDatabase();
	({ tenantId: tenant, botId: botA } = await seedBot(db.pool));
	botB = (
		await db.pool.query(
			"INSERT INTO core.bots (tenant_id, bot_key, webhook_secret) VALUES ($1, 'second_bot', 's2') RETURNING bot_id",
			[tenant],
		)
	).rows[0].bot_id;
	await db.pool.query('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, $2)', [tenant, CHAT]);
});
afterAll(async () => db.drop());

type Member = { status: string; is_member?: boolean };
/** A chat_member update as Telegram sends it. */
function change(updateId: number, userId: number, date: number, from: Member, to: Member) {
	const user = { id: userId, is_bot: false, first_name: `User ${userId}` };
	return {
		update_id: updateId,
		chat_member: {
			chat: { id: CHAT, title: 'Ops', type: 'supergroup' },
			from: user,
			date,
			old_chat_member: { user, ...from },
			new_chat_member: { user, ...to },
		},
	};
}
const JOIN = (id: number, user: number, date = SECOND) =>
	change(id, user, date, { status: 'left' }, { status: 'member' });
const KICK = (id: number, user: number, date = SECOND) =>
	change(id, user, date, { status: 'member' }, { status: 'kicked' });

let nextUser = 700_000;
async function newUser(): Promise<number> {
	const user = nextUser++;
	await db.pool.query("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, $2, 'user')", [
		tenant,
		user,
	]);
	return user;
}

/** What Context Loader says for a group question, and the stored row. */
async function state(user: number) {
	let acl: string;
	try {
		await loadContext(db.pool, { tenant_id: tenant, tg_user_id: user, chat_id: CHAT, channel: 'group' }, {});
		acl = 'allowed';
	} catch (e) {
		acl = String((e as ContractError).details.code);
	}
	const { rows } = await db.pool.query(
		'SELECT status, is_member FROM tg.chat_memberships_current WHERE tenant_id = $1 AND chat_id = $2 AND tg_user_id = $3',
		[tenant, CHAT, user],
	);
	return { acl, ...rows[0] };
}

/** Each update as WF90 hands it to WF20 (the receiving bot named); `bots[i]` overrides the bot of update i (null: none). */
async function processAll(updates: Record<string, unknown>[], bots: (string | null)[] = []) {
	for (const [i, update] of updates.entries()) {
		const bot = bots[i] === undefined ? botA : bots[i];
		await run(processOperation, { tenant_id: tenant, update, ...(bot ? { bot_id: bot } : {}) });
	}
}

const CASES: {
	name: string;
	updates: (user: number) => Record<string, unknown>[];
	expected: { acl: string; status: string; is_member: boolean };
}[] = [
	{
		name: 'join then kick in one second (the kick has the higher update_id)',
		updates: (u) => [JOIN(5001, u), KICK(5002, u)],
		expected: { acl: 'NOT_A_MEMBER', status: 'kicked', is_member: false },
	},
	{
		name: 'kick then join in one second (the join has the higher update_id)',
		updates: (u) => [KICK(5001, u), JOIN(5002, u)],
		expected: { acl: 'allowed', status: 'member', is_member: true },
	},
	{
		name: 'restricted is_member true then restricted left, in one second',
		updates: (u) => [
			change(6001, u, SECOND, { status: 'member' }, { status: 'restricted', is_member: true }),
			change(6002, u, SECOND, { status: 'restricted', is_member: true }, { status: 'restricted', is_member: false }),
		],
		expected: { acl: 'NOT_A_MEMBER', status: 'restricted', is_member: false },
	},
	{
		name: 'restricted left then restricted is_member true (rejoined), in one second',
		updates: (u) => [
			change(6001, u, SECOND, { status: 'restricted', is_member: true }, { status: 'restricted', is_member: false }),
			change(6002, u, SECOND, { status: 'restricted', is_member: false }, { status: 'restricted', is_member: true }),
		],
		expected: { acl: 'allowed', status: 'restricted', is_member: true },
	},
	{
		name: 'a later second beats a higher update_id of an earlier second',
		updates: (u) => [JOIN(7005, u, SECOND), KICK(7001, u, SECOND + 1)],
		expected: { acl: 'NOT_A_MEMBER', status: 'kicked', is_member: false },
	},
];

for (const { name, updates, expected } of CASES) {
	test(`${name}: processed in order and in reverse → ${expected.acl}`, async () => {
		for (const order of ['in order', 'reversed'] as const) {
			const user = await newUser();
			const list = updates(user);
			await processAll(order === 'in order' ? list : [...list].reverse());
			assert.deepEqual(await state(user), expected, order);
			await processAll(list); // replays change nothing
			assert.deepEqual(await state(user), expected, `${order}, replayed`);
		}
	});
}

test('a tie with a row whose update_id is unknown: the non-member state wins, whatever the order', async () => {
	const insert = (user: number, status: string) =>
		db.pool.query(
			'INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status, updated_at) VALUES ($1, $2, $3, $4, to_timestamp($5))',
			[tenant, CHAT, user, status, SECOND],
		);
	const member = await newUser();
	await insert(member, 'member');
	await processAll([KICK(8001, member)]);
	assert.deepEqual(
		await state(member),
		{ acl: 'NOT_A_MEMBER', status: 'kicked', is_member: false },
		'member (unknown id), kick in the same second',
	);
	const kicked = await newUser();
	await insert(kicked, 'kicked');
	await processAll([JOIN(8002, kicked)]);
	assert.deepEqual(
		await state(kicked),
		{ acl: 'NOT_A_MEMBER', status: 'kicked', is_member: false },
		'kicked (unknown id), join in the same second',
	);
	await processAll([JOIN(8003, kicked, SECOND + 1)]);
	assert.deepEqual(
		await state(kicked),
		{ acl: 'allowed', status: 'member', is_member: true },
		'a join one second later',
	);
	const { rows } = await db.pool.query(
		'SELECT source_update_id::int AS id FROM tg.chat_memberships_current WHERE tenant_id = $1 AND tg_user_id = $2',
		[tenant, kicked],
	);
	assert.deepEqual(rows, [{ id: 8003 }]);
});

test('update_ids of two bots, or of no known bot, do not compare: a tie keeps the non-member state in both orders', async () => {
	const expected = { acl: 'NOT_A_MEMBER', status: 'kicked', is_member: false };
	const cases: [string, Record<string, unknown>[], (string | null)[]][] = [
		['a kick by bot A (id 9001), a join by bot B (id 9500)', [KICK(9001, 0), JOIN(9500, 0)], [botA, botB]],
		['a join by bot A (id 9600), a kick by bot B (id 50)', [JOIN(9600, 0), KICK(50, 0)], [botA, botB]],
		['no bot_id: a kick (id 9700), a join (id 9701)', [KICK(9700, 0), JOIN(9701, 0)], [null, null]],
		[
			'a bot of another tenant (unknown here): a kick (id 9800), a join (id 9801)',
			[KICK(9800, 0), JOIN(9801, 0)],
			['00000000-0000-4000-8000-00000000dead', '00000000-0000-4000-8000-00000000dead'],
		],
	];
	for (const [name, template, bots] of cases) {
		for (const reversed of [false, true]) {
			const user = await newUser();
			const updates = template.map((u) => {
				const copy = structuredClone(u) as {
					chat_member: {
						from: { id: number };
						old_chat_member: { user: { id: number } };
						new_chat_member: { user: { id: number } };
					};
				};
				for (const who of [
					copy.chat_member.from,
					copy.chat_member.old_chat_member.user,
					copy.chat_member.new_chat_member.user,
				])
					who.id = user;
				return copy as unknown as Record<string, unknown>;
			});
			await processAll(reversed ? [...updates].reverse() : updates, reversed ? [...bots].reverse() : bots);
			assert.deepEqual(await state(user), expected, `${name}${reversed ? ', reversed' : ''}`);
		}
	}
});
