/**
 * Issue 10 item 4 through the vector search of WF51 (retrieveChunks) on both routes (vectorRoute.ts: pgvector
 * HNSW on PGlite, exact on the real PostgreSQL; the same cases for each): each attacker's question over the whole corpus (exact scan, k = 100) returns nothing it should
 * not see — left, restricted-left (ChatMemberRestricted.is_member false), kicked, a member of the same chat
 * id in another tenant, an id rounded beyond 2^53; asked in a group (whose members all read the reply),
 * nothing but that group's chunks, for a member and for an admin; a dm ctx naming another chat is refused,
 * and the search's dm branch (searchChunks, below the ctx checks) gives the same rows whatever chat is passed with it.
 */
import assert from 'node:assert/strict';
import { beforeAll, test } from '@jest/globals';
import { retrieveChunks } from '../../nodes/KnowledgeBot/actions/qa/retrieve';
import { searchChunks } from '../../nodes/KnowledgeBot/actions/vectorStore';
import { hashedVector } from '../helpers/embeddingStandIn';
import { forEachVectorBackend } from '../helpers/vectorBackends';

const TENANT_A = '00000000-0000-4000-8000-0000000000a1';
const TENANT_B = '00000000-0000-4000-8000-0000000000b1';
const GROUP = -100;
const EXACT = '9007199254740993'; // 2^53 + 1; as a JS number it is 9007199254740992
const ROUNDED = '9007199254740992';

forEachVectorBackend((backend) => {
	const vdb = {
		get pool() {
			return backend().pool;
		},
		db: { query: <R = Record<string, unknown>>(sql: string, params?: unknown[]) => backend().query<R>(sql, params) },
	};
	let model: number;
	/** chunk id → its label (which place it belongs to) */
	const label = new Map<number, string>();

	async function source(
		tenant: string,
		name: string,
		place: { chat_id: string | number; visibility: 'group' | 'dm'; owner?: string | number },
	) {
		const text = `${name} secret budget roadmap note`;
		const doc = await vdb.db.query<{ id: number }>(
			"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, dm_owner_user_id, text, status) VALUES ($1, 'url', $2, $3::bigint, $4, $5::bigint, $6, 'done') RETURNING id",
			[
				tenant,
				`url:${name}`,
				String(place.chat_id),
				place.visibility,
				place.owner === undefined ? null : String(place.owner),
				text,
			],
		);
		const chunk = await vdb.db.query<{ id: number }>(
			'INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) VALUES ($1, $2, 0, $3, 0, length($3), md5($3)) RETURNING id',
			[tenant, doc.rows[0].id, text],
		);
		const id = Number(chunk.rows[0].id);
		await backend().store({ chunk_id: id, model_id: model, tenant_id: tenant, vector: hashedVector(text, 1536), text });
		label.set(id, name);
	}

	beforeAll(async () => {
		const q = (sql: string, params: unknown[] = []) => vdb.db.query(sql, params);
		await q("INSERT INTO core.tenants (tenant_id, name) VALUES ($1, 'A'), ($2, 'B')", [TENANT_A, TENANT_B]);
		model = Number(
			(
				await vdb.db.query<{ id: number }>(
					"INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'm', 1536) RETURNING id",
				)
			).rows[0].id,
		);
		// tenant A, group -100: 2 member, 4 left, 5 restricted and left, 6 kicked, 7 restricted but a member,
		// EXACT a member; 8 is a member of -100 in tenant B only. The restricted-left row names no flag: unknown → not a member.
		await q(
			`INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES
			   ($1, $3, 2, 'member'), ($1, $3, 4, 'left'), ($1, $3, 5, 'restricted'), ($1, $3, 6, 'kicked'), ($1, $3, $4::bigint, 'member'), ($2, $3, 8, 'member')`,
			[TENANT_A, TENANT_B, GROUP, EXACT],
		);
		await q(
			"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status, is_member) VALUES ($1, $2, 7, 'restricted', true)",
			[TENANT_A, GROUP],
		);
		await source(TENANT_A, 'group A', { chat_id: GROUP, visibility: 'group' });
		await source(TENANT_B, 'group B', { chat_id: GROUP, visibility: 'group' });
		for (const user of ['2', '3', '4', '5', '6', '7', '8', EXACT, ROUNDED])
			await source(TENANT_A, `dm ${user}`, { chat_id: user, visibility: 'dm', owner: user });
		await backend().exactScan(true); // exact search: everything visible is returned, so anything invisible would be too
	});

	/** A ctx as Context Loader builds it; by default a question in the asker's own dm. */
	const ctx = (tg_user_id: number | string, extra: Record<string, unknown> = {}) => ({
		tenant_id: TENANT_A,
		tg_user_id,
		role: 'user' as 'user' | 'admin',
		is_allowed: true,
		channel: 'dm' as 'dm' | 'group',
		chat_id: null as number | string | null,
		...extra,
	});
	const inGroup = (tg_user_id: number | string, chat: number | string, extra: Record<string, unknown> = {}) =>
		ctx(tg_user_id, { channel: 'group', chat_id: chat, ...extra });

	async function seen(c: ReturnType<typeof ctx>): Promise<string[]> {
		const got = await retrieveChunks(vdb.pool, c, hashedVector('secret budget roadmap note', 1536), {
			model_id: model,
			k: 100,
		});
		return got.map((r) => label.get(r.chunk_id)!).sort();
	}

	const ATTACKS: [string, () => ReturnType<typeof ctx>, string[]][] = [
		['control: a member', () => ctx(2), ['dm 2', 'group A']],
		['control: restricted, still a member (is_member true)', () => ctx(7), ['dm 7', 'group A']],
		['left', () => ctx(4), ['dm 4']],
		['restricted and left (is_member false / unknown)', () => ctx(5), ['dm 5']],
		['kicked', () => ctx(6), ['dm 6']],
		['a member of the same chat id in another tenant', () => ctx(8), ['dm 8']],
		['another tenant asking for tenant A data', () => ({ ...ctx(8), tenant_id: TENANT_B }), ['group B']],
		['own dm named explicitly (chat_id = tg_user_id)', () => ctx(2, { chat_id: '2' }), ['dm 2', 'group A']],
		[
			'an admin in their dm: the whole tenant',
			() => ctx(3, { role: 'admin' }),
			['dm 2', 'dm 3', 'dm 4', 'dm 5', 'dm 6', 'dm 7', 'dm 8', `dm ${EXACT}`, `dm ${ROUNDED}`, 'group A'],
		],
		["asked in the group by a member: that group only, never the asker's dm", () => inGroup(2, GROUP), ['group A']],
		[
			'asked in the group by an admin who is no member: that group only, never a dm',
			() => inGroup(3, GROUP, { role: 'admin' }),
			['group A'],
		],
		['asked in the group by a non-member (a ctx Context Loader would refuse)', () => inGroup(3, GROUP), []],
		['asked in the group by a restricted user who left', () => inGroup(5, GROUP), []],
		[
			"a group ctx naming a dm chat (user 2's id), even by an admin: no dm is a group document",
			() => inGroup(2, 2, { role: 'admin' }),
			[],
		],
		[
			"a group ctx naming the chat id of tenant B's group, from tenant A's member of it only in B",
			() => inGroup(8, GROUP),
			[],
		],
		['the exact 2^53 + 1 id as a string', () => ctx(EXACT), [`dm ${EXACT}`, 'group A']],
		['the rounded neighbour as a string', () => ctx(ROUNDED), [`dm ${ROUNDED}`]],
	];

	for (const [name, make, expected] of ATTACKS) {
		test(`vector search: ${name} sees exactly ${expected.join(', ')}`, async () => {
			assert.deepEqual(await seen(make()), expected.sort());
		});
	}

	test("spoofed dm: a dm ctx naming another user's chat or a group is refused 403 DM_NOT_OWN_CHAT, nothing searched", async () => {
		for (const chat of [3, '3', GROUP, ROUNDED]) {
			await assert.rejects(
				seen(ctx(2, { chat_id: chat })),
				(e: { statusCode?: number; details?: Record<string, unknown> }) => {
					assert.deepEqual([e.statusCode, e.details?.code], [403, 'DM_NOT_OWN_CHAT'], `chat ${chat}`);
					return true;
				},
			);
		}
		await assert.rejects(
			seen(ctx(EXACT, { chat_id: ROUNDED })),
			(e: { details?: Record<string, unknown> }) => e.details?.code === 'DM_NOT_OWN_CHAT',
		);
		await assert.rejects(
			seen(inGroup(2, null as unknown as number)),
			(e: { statusCode?: number; details?: Record<string, unknown> }) =>
				e.statusCode === 422 && e.details?.field === 'ctx.chat_id',
		);
	});

	test("the search's dm branch: the chat passed with a dm neither widens nor changes what is visible", async () => {
		const vector = hashedVector('secret budget roadmap note', 1536);
		const search = async (user: string, channel: string, chat: string | null) =>
			(
				await searchChunks(vdb.pool, {
					tenant_id: TENANT_A,
					model_id: model,
					vector,
					user,
					admin: channel === 'private',
					k: 100,
					channel,
					chat,
				})
			).rows;
		const rows = async (chat: string | null) =>
			(await search('4', 'dm', chat)).map((r) => label.get(Number(r.chunk_id))!).sort();
		for (const chat of [null, '4', '3', '2', String(GROUP), EXACT])
			assert.deepEqual(await rows(chat), ['dm 4'], `dm with chat ${chat}`);
		for (const chat of [null, '3', String(GROUP)])
			assert.equal((await search('2', 'dm', chat)).length, 2, `user 2's dm with chat ${chat}: dm 2 and group A`);
		assert.equal(
			(await search('2', 'private', null)).length,
			0,
			'an unknown channel matches nothing, even for an admin',
		);
	});

	test('vector search: a rounded id (9007199254740993 as a JS number) is refused 422, never searched as …992', async () => {
		await assert.rejects(
			seen(ctx(9007199254740993)),
			(e: { statusCode?: number; details?: Record<string, unknown> }) => {
				assert.deepEqual([e.statusCode, e.details?.field], [422, 'ctx.tg_user_id']);
				return true;
			},
		);
		await assert.rejects(seen(ctx('9223372036854775808')), (e: { statusCode?: number }) => e.statusCode === 422);
	});
});
