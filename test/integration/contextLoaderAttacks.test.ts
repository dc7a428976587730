/**
 * Issue 10 item 4: membership and DMs cannot be spoofed through Context Loader (WF00c, seed 003 §0.2–0.4),
 * on real PostgreSQL, through the node itself (its error item: status, code, the field of a 422):
 *  - a table of attacks: left, restricted-left (ChatMemberRestricted.is_member false), kicked, another
 *    tenant, a dm naming a group or another user's dm, an id rounded beyond 2^53, ids beyond int8,
 *    ids that are not integers — every one refused with its status and code;
 *  - a property over hostile ids and bodies: never a 5xx, never a rounded id accepted, a 422 names the field.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import fc from 'fast-check';
import type { IExecuteFunctions } from 'n8n-workflow';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { hostileId, propertyParams } from '../helpers/property';
// the source node, by its .ts file: "ContextLoader.node" alone would resolve to the codex .json beside it
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ContextLoader } =
	require('../../nodes/ContextLoader/ContextLoader.node.ts') as typeof import('../../nodes/ContextLoader/ContextLoader.node');

let db: TestDatabase;
let tenant: string;
let otherTenant: string;
const GROUP = -1001;
const SHARED_GROUP = -1005; // registered in both tenants; the user is a member only in the other tenant
const OTHER_TENANT_GROUP = -2001;
const EXACT = '9007199254740993'; // 2^53 + 1: as a JSON number it is read as 9007199254740992
const ROUNDED = '9007199254740992';

beforeAll(async () => {
	db = await setupDatabase();
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	tenant = (await q("INSERT INTO core.tenants (name) VALUES ('acme') RETURNING tenant_id")).rows[0].tenant_id;
	otherTenant = (await q("INSERT INTO core.tenants (name) VALUES ('other') RETURNING tenant_id")).rows[0].tenant_id;
	// users of tenant: 2 member, 4 left, 5 restricted-left, 6 kicked, 7 restricted member, 8 only in the other tenant's chat,
	// the exact 2^53+1 user (member) and the user its rounding would name (allowed, not a member)
	await q(
		`INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) SELECT $1, u, 'user' FROM unnest($2::bigint[]) u`,
		[tenant, ['2', '4', '5', '6', '7', '8', EXACT, ROUNDED]],
	);
	await q(`INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 9, 'user'), ($1, 8, 'user')`, [
		otherTenant,
	]);
	await q(`INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, $3), ($1, $4), ($2, $4), ($2, $5)`, [
		tenant,
		otherTenant,
		GROUP,
		SHARED_GROUP,
		OTHER_TENANT_GROUP,
	]);
	await q(
		`INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status, is_member) VALUES
		   ($1, $2, 2, 'member', true), ($1, $2, 4, 'left', false), ($1, $2, 5, 'restricted', false), ($1, $2, 6, 'kicked', false),
		   ($1, $2, 7, 'restricted', true), ($1, $2, $3::bigint, 'member', true)`,
		[tenant, GROUP, EXACT],
	);
	await q(
		`INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, $2, 8, 'member'), ($1, $3, 9, 'member')`,
		[otherTenant, SHARED_GROUP, OTHER_TENANT_GROUP],
	);
});
afterAll(async () => {
	await closeAllPools();
	await db?.drop();
});

/** Runs the Context Loader node on one request, in continue mode: the success envelope or the error item. */
async function load(
	req: unknown,
): Promise<{ ok: true; ctx: Record<string, unknown> } | { ok: false; error: Record<string, any> }> {
	const fn = {
		getInputData: () => [{ json: {} }],
		getNode: () => ({
			name: 'Context Loader',
			type: 'n8n-nodes-contracts.contextLoader',
			typeVersion: 1,
			position: [0, 0],
			parameters: {},
			id: '1',
		}),
		continueOnFail: () => true,
		getCredentials: async () => db.credential,
		getNodeParameter: (name: string) => (name === 'req' ? req : {}),
	} as unknown as IExecuteFunctions;
	const [[item]] = await new ContextLoader().execute.call(fn);
	const json = item.json as Record<string, any>;
	if (json.error) return { ok: false, error: json.error };
	assert.equal(json.ok, true);
	return { ok: true, ctx: json.data.ctx };
}

const req = (over: Record<string, unknown>) => ({
	tenant_id: tenant,
	tg_user_id: 2,
	chat_id: GROUP,
	channel: 'group',
	trace_id: null,
	correlation_id: null,
	...over,
});

type Expect = 'ok' | [number, string, string?];
const ATTACKS: [string, () => unknown, Expect][] = [
	['control: a member of the group', () => req({}), 'ok'],
	['control: a restricted user who is still a member (is_member true)', () => req({ tg_user_id: 7 }), 'ok'],
	['control: a dm naming the own chat', () => req({ channel: 'dm', chat_id: 2 }), 'ok'],
	['control: a dm without chat_id (the own chat)', () => req({ channel: 'dm', chat_id: null }), 'ok'],
	['left the group', () => req({ tg_user_id: 4 }), [403, 'NOT_A_MEMBER']],
	['restricted and left (ChatMemberRestricted.is_member false)', () => req({ tg_user_id: 5 }), [403, 'NOT_A_MEMBER']],
	['kicked', () => req({ tg_user_id: 6 }), [403, 'NOT_A_MEMBER']],
	[
		'a member of the same chat id in another tenant only',
		() => req({ tg_user_id: 8, chat_id: SHARED_GROUP }),
		[403, 'NOT_A_MEMBER'],
	],
	[
		"another tenant's group named in this tenant",
		() => req({ tg_user_id: 2, chat_id: OTHER_TENANT_GROUP }),
		[404, 'CHAT_NOT_REGISTERED'],
	],
	['a user of another tenant only', () => req({ tg_user_id: 9, chat_id: OTHER_TENANT_GROUP }), [403, 'NOT_ALLOWED']],
	["spoofed dm: a group's chat_id", () => req({ channel: 'dm', chat_id: GROUP }), [403, 'DM_NOT_OWN_CHAT']],
	["spoofed dm: another user's dm id", () => req({ channel: 'dm', chat_id: 4 }), [403, 'DM_NOT_OWN_CHAT']],
	[
		"spoofed dm: another user's dm id as a string",
		() => req({ channel: 'dm', chat_id: '4' }),
		[403, 'DM_NOT_OWN_CHAT'],
	],
	[
		'spoofed dm: the rounded neighbour of the own id',
		() => req({ channel: 'dm', tg_user_id: EXACT, chat_id: ROUNDED }),
		[403, 'DM_NOT_OWN_CHAT'],
	],
	[
		'rounded id: 9007199254740993 as a JSON number',
		() => req({ tg_user_id: 9007199254740993 }),
		[422, 'VALIDATION', 'req.tg_user_id'],
	],
	[
		'rounded id inside a JSON text',
		() => JSON.stringify(req({})).replace('"tg_user_id":2', `"tg_user_id":${EXACT}`),
		[422, 'VALIDATION', 'req.tg_user_id'],
	],
	['rounded chat_id as a number', () => req({ chat_id: -9007199254740993 }), [422, 'VALIDATION', 'req.chat_id']],
	['the exact id as a string: its own membership', () => req({ tg_user_id: EXACT }), 'ok'],
	['the rounded id as a string: allowed, not a member', () => req({ tg_user_id: ROUNDED }), [403, 'NOT_A_MEMBER']],
	['tg_user_id beyond int8', () => req({ tg_user_id: '9223372036854775808' }), [422, 'VALIDATION', 'req.tg_user_id']],
	['chat_id below int8', () => req({ chat_id: '-9223372036854775809' }), [422, 'VALIDATION', 'req.chat_id']],
	['tg_user_id 1e300', () => req({ tg_user_id: 1e300 }), [422, 'VALIDATION', 'req.tg_user_id']],
	[
		'tg_user_id as a bigint beyond int8 digits',
		() => req({ tg_user_id: '123456789012345678901' }),
		[422, 'VALIDATION', 'req.tg_user_id'],
	],
	['tg_user_id fractional', () => req({ tg_user_id: 2.5 }), [422, 'VALIDATION', 'req.tg_user_id']],
	['tg_user_id fractional string', () => req({ tg_user_id: '2.0' }), [422, 'VALIDATION', 'req.tg_user_id']],
	['tg_user_id exponent string', () => req({ tg_user_id: '2e0' }), [422, 'VALIDATION', 'req.tg_user_id']],
	['tg_user_id with a space', () => req({ tg_user_id: ' 2' }), [422, 'VALIDATION', 'req.tg_user_id']],
	['tg_user_id hex', () => req({ tg_user_id: '0x2' }), [422, 'VALIDATION', 'req.tg_user_id']],
	['tg_user_id with a NUL', () => req({ tg_user_id: '2\u0000' }), [422, 'VALIDATION', 'req.tg_user_id']],
	['tg_user_id empty', () => req({ tg_user_id: '' }), [422, 'VALIDATION', 'req.tg_user_id']],
	['tg_user_id NaN', () => req({ tg_user_id: NaN }), [422, 'VALIDATION', 'req.tg_user_id']],
	['tg_user_id true', () => req({ tg_user_id: true }), [422, 'VALIDATION', 'req.tg_user_id']],
	['tg_user_id an object', () => req({ tg_user_id: { id: 2 } }), [422, 'VALIDATION', 'req.tg_user_id']],
	[
		'tg_user_id missing',
		() => ({ tenant_id: tenant, chat_id: GROUP, channel: 'group' }),
		[422, 'VALIDATION', 'req.tg_user_id'],
	],
	['chat_id an array', () => req({ chat_id: [GROUP] }), [422, 'VALIDATION', 'req.chat_id']],
	['a body that is not JSON', () => '{"tenant_id":', [422, 'VALIDATION', 'req']],
];

for (const [name, make, expected] of ATTACKS) {
	test(`attack: ${name} → ${expected === 'ok' ? 'allowed' : expected.slice(0, 2).join(' ')}`, async () => {
		const result = await load(make());
		if (expected === 'ok') {
			assert.ok(result.ok, `refused: ${!result.ok && JSON.stringify(result.error.details)}`);
			return;
		}
		assert.ok(!result.ok, `allowed: ${result.ok && JSON.stringify(result.ctx)}`);
		const [status, code, field] = expected;
		assert.deepEqual([result.error.status_code, result.error.details.code], [status, code], result.error.message);
		if (field) assert.equal(result.error.details.field, field, result.error.message);
		assert.equal(result.error.retryable, false);
		assert.ok(result.error.ctx.correlation_id, 'the error item carries the correlation id');
	});
}

test("exact ids come back exact: the 2^53 + 1 user's ctx names that user, as a string; safe ids stay numbers", async () => {
	const big = await load(req({ tg_user_id: EXACT, channel: 'dm', chat_id: EXACT }));
	assert.ok(big.ok);
	assert.deepEqual([big.ctx.tg_user_id, big.ctx.chat_id, big.ctx.dm_owner_user_id], [EXACT, EXACT, EXACT]);
	const small = await load(req({ tg_user_id: '2' }));
	assert.ok(small.ok);
	assert.deepEqual([small.ctx.tg_user_id, small.ctx.chat_id], [2, GROUP]);
});

/** The request's id as the exact integer it names, or null when it names none exactly (a rounded number, not an integer). */
function exactOf(v: unknown): bigint | null {
	if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : null;
	if (typeof v === 'bigint') return v;
	if (typeof v === 'string' && /^-?[0-9]{1,20}$/.test(v)) return BigInt(v);
	return null;
}

test('property: hostile ids and bodies through Context Loader on PostgreSQL — never a 5xx, never a rounded id, a 422 names the field', async () => {
	const users = [2, 4, 5, 6, 7, 8, 9, EXACT, ROUNDED];
	// mostly plausible ids (seeded users and chats, as numbers, strings, and the rounded number of a string), some hostile
	const known = fc
		.constantFrom<string | number>(...users, GROUP, SHARED_GROUP, OTHER_TENANT_GROUP)
		.chain((v) => fc.constantFrom<unknown>(v, String(v), Number(v)));
	const id = fc.oneof({ arbitrary: known, weight: 4 }, { arbitrary: hostileId(), weight: 1 });
	const body = fc.record(
		{
			tenant_id: fc.oneof(
				{ arbitrary: fc.constantFrom<unknown>(tenant, tenant, tenant, otherTenant), weight: 6 },
				{ arbitrary: hostileId(), weight: 1 },
			),
			tg_user_id: id,
			chat_id: fc.oneof(id, fc.constant(null)),
			channel: fc.constantFrom<unknown>('group', 'dm', 'group', 'dm', 'channel', null),
			trace_id: fc.oneof(fc.constant(null), fc.string({ maxLength: 8 })),
		},
		{ requiredKeys: ['tenant_id', 'tg_user_id', 'channel'] },
	);
	// a third of the bodies name the user's own id as the chat (a dm's own chat, in any of its forms)
	const bodies = fc
		.tuple(
			body,
			fc.nat(2),
			fc.constantFrom(
				(v: unknown) => v,
				(v: unknown) => String(v),
			),
		)
		.map(([b, n, form]) => (n === 0 ? { ...b, chat_id: form(b.tg_user_id) } : b));
	let allowed = 0;
	const bigintsAsText = (v: unknown) =>
		JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x)));
	await fc.assert(
		fc.asyncProperty(bodies, async (raw) => {
			const sent = bigintsAsText(raw) as Record<string, unknown>; // what JSON can carry: a bigint only as text
			const result = await load(sent);
			if (!result.ok) {
				assert.ok(result.error.status_code < 500, `5xx: ${result.error.message}`);
				assert.ok([403, 404, 422].includes(result.error.status_code), `status ${result.error.status_code}`);
				if (result.error.status_code === 422) assert.match(String(result.error.details.field), /^req(\.|$)/);
				return;
			}
			// allowed: every id is the exact integer sent, never a rounded neighbour
			allowed++;
			const user = exactOf(sent.tg_user_id);
			assert.ok(user !== null, `allowed a tg_user_id that names no exact integer: ${fc.stringify(sent.tg_user_id)}`);
			assert.equal(String(result.ctx.tg_user_id), user.toString());
			if (sent.chat_id !== null && sent.chat_id !== undefined) {
				const chat = exactOf(sent.chat_id);
				assert.ok(chat !== null, `allowed a chat_id that names no exact integer: ${fc.stringify(sent.chat_id)}`);
				assert.equal(String(result.ctx.chat_id), chat.toString());
			}
			if (result.ctx.channel === 'dm' && result.ctx.chat_id !== null)
				assert.equal(String(result.ctx.chat_id), String(result.ctx.tg_user_id), 'a dm is the own chat');
			if (result.ctx.channel === 'group') {
				const member = await db.pool.query(
					'SELECT 1 FROM tg.chat_memberships_current WHERE tenant_id = $1 AND chat_id = $2::bigint AND tg_user_id = $3::bigint AND is_member',
					[result.ctx.tenant_id, String(result.ctx.chat_id), String(result.ctx.tg_user_id)],
				);
				assert.equal(member.rowCount, 1, 'a group ctx only for a current member');
			}
		}),
		propertyParams('Context Loader hostile ids', { numRuns: Math.min(500, Number(process.env.PROPERTY_RUNS) || 500) }),
	);
	console.log(`[property] Context Loader hostile ids: ${allowed} allowed requests checked`);
	assert.ok(allowed > 0, 'the property reached allowed requests too');
});
