/**
 * WF00c Context Loader against a table of ACL cases on real PostgreSQL (seed 003 §0.2, §0.4): roles,
 * group registration and membership, dm ownership, chat policy defaults, correlation ids, bad input.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { loadContext } from '../../nodes/shared/acl/loadContext';
import { AclCtx } from '../../nodes/shared/contracts/ctx';
import { ContractError } from '../../nodes/shared/errors';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
let tenant: string;
let disabledTenant: string;
const GROUP = -1001;
const OTHER_GROUP = -1002;
const DISABLED_GROUP = -1003;

beforeAll(async () => {
	db = await setupDatabase();
	tenant = (await db.pool.query("INSERT INTO core.tenants (name) VALUES ('acme') RETURNING tenant_id")).rows[0]
		.tenant_id;
	disabledTenant = (
		await db.pool.query("INSERT INTO core.tenants (name, is_enabled) VALUES ('gone', false) RETURNING tenant_id")
	).rows[0].tenant_id;
	await db.pool.query(
		`INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 1, 'admin'), ($1, 2, 'user'), ($1, 3, 'blocked'), ($1, 4, 'user'), ($2, 2, 'user')`,
		[tenant, disabledTenant],
	);
	await db.pool.query(
		`INSERT INTO core.tenant_chats (tenant_id, chat_id, is_enabled) VALUES ($1, $2, true), ($1, $3, true), ($1, $4, false)`,
		[tenant, GROUP, OTHER_GROUP, DISABLED_GROUP],
	);
	await db.pool.query(
		`INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, $2, 2, 'member'), ($1, $2, 4, 'left'), ($1, $3, 2, 'kicked')`,
		[tenant, GROUP, OTHER_GROUP],
	);
	await db.pool.query(
		`INSERT INTO core.chat_policies (tenant_id, chat_id, allow_url_fetch, retention_days_raw) VALUES ($1, $2, false, 30)`,
		[tenant, GROUP],
	);
});
afterAll(async () => {
	await db?.drop();
});

const req = (over: Record<string, unknown>) => ({
	tenant_id: tenant,
	tg_user_id: 2,
	chat_id: GROUP,
	channel: 'group',
	trace_id: null,
	correlation_id: null,
	...over,
});

const CASES: [string, () => Record<string, unknown>, number | 'ok', string?][] = [
	['member of a registered group', () => req({}), 'ok'],
	['admin in a group without membership row', () => req({ tg_user_id: 1 }), 'ok'],
	['blocked user', () => req({ tg_user_id: 3 }), 403, 'BLOCKED'],
	['user not in the allowlist', () => req({ tg_user_id: 99 }), 403, 'NOT_ALLOWED'],
	['user who left the group', () => req({ tg_user_id: 4 }), 403, 'NOT_A_MEMBER'],
	['user kicked from another group', () => req({ chat_id: OTHER_GROUP }), 403, 'NOT_A_MEMBER'],
	['unregistered group', () => req({ chat_id: -9999 }), 404, 'CHAT_NOT_REGISTERED'],
	['disabled group', () => req({ chat_id: DISABLED_GROUP }), 404, 'CHAT_NOT_REGISTERED'],
	['disabled tenant', () => req({ tenant_id: disabledTenant }), 403, 'NOT_ALLOWED'],
	['dm of an allowed user (no chat registration needed)', () => req({ channel: 'dm', chat_id: 2 }), 'ok'],
	['dm of a blocked user', () => req({ channel: 'dm', chat_id: 3, tg_user_id: 3 }), 403, 'BLOCKED'],
	['group without chat_id', () => req({ chat_id: null }), 422, 'VALIDATION'],
	['bad channel', () => req({ channel: 'channel' }), 422, 'VALIDATION'],
	['tenant_id not a UUID', () => req({ tenant_id: 'acme' }), 422, 'VALIDATION'],
];

for (const [name, make, expected, code] of CASES) {
	test(`WF00c: ${name} → ${expected}${code ? ` ${code}` : ''}`, async () => {
		const state: { ctx?: Record<string, unknown> } = {};
		if (expected === 'ok') {
			const { ctx } = (await loadContext(db.pool, make(), state)) as { ctx: Record<string, unknown> };
			AclCtx.parse(ctx);
			assert.equal(ctx.is_allowed, true);
			return;
		}
		await assert.rejects(loadContext(db.pool, make(), state), (e: ContractError) => {
			assert.deepEqual([e.statusCode, e.details.code], [expected, code], e.message);
			assert.ok(state.ctx?.correlation_id, 'a refused request still carries its correlation id');
			return true;
		});
	});
}

test('group ctx: exactly the §0.4 fields, visibility group, no dm owner, the stored chat policy', async () => {
	const correlation = '0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e';
	const { ctx } = (await loadContext(
		db.pool,
		req({ correlation_id: correlation, trace_id: 'trace-1', tg_user_id: '2' }),
		{},
	)) as { ctx: Record<string, unknown> };
	assert.deepEqual(ctx, {
		tenant_id: tenant,
		tg_user_id: 2,
		chat_id: GROUP,
		channel: 'group',
		visibility: 'group',
		dm_owner_user_id: null,
		role: 'user',
		is_allowed: true,
		trace_id: 'trace-1',
		correlation_id: correlation,
		contracts: { errorpipe: 1 },
		chat_policy: {
			allow_url_fetch: false,
			allow_file_download: true,
			allow_embedding: true,
			retention_days_raw: 30,
			retention_days_documents: 3650,
		},
	});
});

test('dm ctx: the user owns the dm; defaults for the chat policy; a correlation id is generated once', async () => {
	const { ctx } = (await loadContext(db.pool, req({ channel: 'dm', chat_id: 2 }), {})) as {
		ctx: Record<string, unknown>;
	};
	assert.deepEqual([ctx.visibility, ctx.dm_owner_user_id], ['dm', 2]);
	assert.deepEqual(ctx.chat_policy, {
		allow_url_fetch: true,
		allow_file_download: true,
		allow_embedding: true,
		retention_days_raw: 90,
		retention_days_documents: 3650,
	});
	assert.match(String(ctx.correlation_id), /^[0-9a-f-]{36}$/);
});

test('one round trip per item', async () => {
	let queries = 0;
	const counting = {
		query: (...args: Parameters<typeof db.pool.query>) => (queries++, db.pool.query(...args)),
	} as unknown as typeof db.pool;
	await loadContext(counting, req({}), {});
	assert.equal(queries, 1);
});
