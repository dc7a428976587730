/**
 * Issue 10 item 4 on PGlite with pgvector, through the vector search SQL (SEARCH_CHUNKS via retrieveChunks,
 * WF51): each attacker's question over the whole corpus (exact scan, k = 100) returns nothing it should
 * not see — left, restricted-left (ChatMemberRestricted.is_member false), kicked, a member of the same chat
 * id in another tenant, a dm ctx naming another user's chat, and an id rounded beyond 2^53.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { retrieveChunks } from '../../nodes/KnowledgeBot/actions/qa/retrieve';
import { vectorLiteral } from '../../nodes/KnowledgeBot/transport/embeddings';
import { hashedVector } from '../helpers/embeddingStandIn';
import { vectorDatabase } from '../helpers/pglite';

let vdb: Awaited<ReturnType<typeof vectorDatabase>>;
const TENANT_A = '00000000-0000-4000-8000-0000000000a1';
const TENANT_B = '00000000-0000-4000-8000-0000000000b1';
const GROUP = -100;
const EXACT = '9007199254740993'; // 2^53 + 1; as a JS number it is 9007199254740992
const ROUNDED = '9007199254740992';
let model: number;
/** chunk id → its label (which place it belongs to) */
const label = new Map<number, string>();

async function source(tenant: string, name: string, place: { chat_id: string | number; visibility: 'group' | 'dm'; owner?: string | number }) {
	const text = `${name} secret budget roadmap note`;
	const doc = await vdb.db.query<{ id: number }>(
		"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, dm_owner_user_id, text, status) VALUES ($1, 'url', $2, $3::bigint, $4, $5::bigint, $6, 'done') RETURNING id",
		[tenant, `url:${name}`, String(place.chat_id), place.visibility, place.owner === undefined ? null : String(place.owner), text],
	);
	const chunk = await vdb.db.query<{ id: number }>("INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) VALUES ($1, $2, 0, $3, 0, length($3), md5($3)) RETURNING id", [tenant, doc.rows[0].id, text]);
	const id = Number(chunk.rows[0].id);
	await vdb.db.query('INSERT INTO kg.chunk_embeddings_1536 (chunk_id, model_id, tenant_id, embedding, chunk_sha256) VALUES ($1, $2, $3, $4::vector, md5($5))', [id, model, tenant, vectorLiteral(hashedVector(text, 1536)), text]);
	label.set(id, name);
}

before(async () => {
	vdb = await vectorDatabase();
	const q = (sql: string, params: unknown[] = []) => vdb.db.query(sql, params);
	await q("INSERT INTO core.tenants (tenant_id, name) VALUES ($1, 'A'), ($2, 'B')", [TENANT_A, TENANT_B]);
	model = Number((await vdb.db.query<{ id: number }>("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'm', 1536) RETURNING id")).rows[0].id);
	// tenant A, group -100: 2 member, 4 left, 5 restricted and left, 6 kicked, 7 restricted but a member,
	// EXACT a member; 8 is a member of -100 in tenant B only. The restricted-left row names no flag: unknown → not a member.
	await q(
		`INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES
		   ($1, $3, 2, 'member'), ($1, $3, 4, 'left'), ($1, $3, 5, 'restricted'), ($1, $3, 6, 'kicked'), ($1, $3, $4::bigint, 'member'), ($2, $3, 8, 'member')`,
		[TENANT_A, TENANT_B, GROUP, EXACT],
	);
	await q("INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status, is_member) VALUES ($1, $2, 7, 'restricted', true)", [TENANT_A, GROUP]);
	await source(TENANT_A, 'group A', { chat_id: GROUP, visibility: 'group' });
	await source(TENANT_B, 'group B', { chat_id: GROUP, visibility: 'group' });
	for (const user of ['2', '3', '4', '5', '6', '7', '8', EXACT, ROUNDED]) await source(TENANT_A, `dm ${user}`, { chat_id: user, visibility: 'dm', owner: user });
	await vdb.db.query('SET enable_indexscan = off'); // exact search: everything visible is returned, so anything invisible would be too
});
after(async () => {
	await vdb.close();
});

const ctx = (tg_user_id: number | string, extra: Record<string, unknown> = {}) => ({ tenant_id: TENANT_A, tg_user_id, role: 'user' as const, is_allowed: true, ...extra });

async function seen(c: ReturnType<typeof ctx>): Promise<string[]> {
	const got = await retrieveChunks(vdb.pool, c, hashedVector('secret budget roadmap note', 1536), { model_id: model, k: 100 });
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
	['spoofed dm: a dm ctx naming user 3\'s chat', () => ctx(2, { channel: 'dm', visibility: 'dm', chat_id: 3, dm_owner_user_id: 3 }), ['dm 2', 'group A']],
	['spoofed dm: a dm ctx naming the group', () => ctx(4, { channel: 'dm', visibility: 'dm', chat_id: GROUP }), ['dm 4']],
	['the exact 2^53 + 1 id as a string', () => ctx(EXACT), [`dm ${EXACT}`, 'group A']],
	['the rounded neighbour as a string', () => ctx(ROUNDED), [`dm ${ROUNDED}`]],
];

for (const [name, make, expected] of ATTACKS) {
	test(`vector search: ${name} sees exactly ${expected.join(', ')}`, async () => {
		assert.deepEqual(await seen(make()), expected.sort());
	});
}

test('vector search: a rounded id (9007199254740993 as a JS number) is refused 422, never searched as …992', async () => {
	await assert.rejects(seen(ctx(9007199254740993)), (e: { statusCode?: number; details?: Record<string, unknown> }) => {
		assert.deepEqual([e.statusCode, e.details?.field], [422, 'ctx.tg_user_id']);
		return true;
	});
	await assert.rejects(seen(ctx('9223372036854775808')), (e: { statusCode?: number }) => e.statusCode === 422);
});
