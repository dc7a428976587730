/**
 * Issue 10 item 4 in a real n8n 2.4.8: WF00c (Context Loader) called as a sub-workflow through a test
 * webhook refuses spoofed DMs, a restricted user who left and an id rounded by JSON, each with an
 * ErrorEnvelope (status, code, the field of a 422) and one ops.errors row; the exact id sent as a string
 * names its own user.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { ErrorEnvelope } from '../../nodes/shared/contracts/envelope';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';

let db: TestDatabase;
let n8n: RunningN8n;
let tenant: string;
const GROUP = -5101;
const EXACT = '9007199254740993';

beforeAll(async () => {
	db = await setupDatabase();
	tenant = (await seedBot(db.pool, 'acl_bot', 'acl-Secret_123')).tenantId;
	await db.pool.query(
		"INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) SELECT $1, u, 'user' FROM unnest($2::bigint[]) u",
		[tenant, ['601', '602', '603', EXACT, '9007199254740992']],
	);
	await db.pool.query('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, $2)', [tenant, GROUP]);
	await db.pool.query(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status, is_member) VALUES ($1, $2, 601, 'member', true), ($1, $2, 602, 'restricted', false), ($1, $2, $3::bigint, 'member', true)",
		[tenant, GROUP, EXACT],
	);
	n8n = await startN8n(
		db.url,
		[
			path.join(WORKFLOWS, 'WF99e_catch_all.json'),
			path.join(WORKFLOWS, 'WF99_global_err_handler.json'),
			path.join(WORKFLOWS, 'WF00c_context_loader.json'),
			path.join(__dirname, 'workflows', 'test_wf00c_caller.json'),
		],
		['test/wf00c'],
	);
}, 30 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await db?.drop();
});

/** Posts a raw JSON text (so a big number reaches n8n as written) to the WF00c test webhook. */
async function call(reqJson: string) {
	const res = await fetch(`${n8n.url}/webhook/test/wf00c`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: `{"req":${reqJson}}`,
	});
	return { status: res.status, body: (await res.json()) as any };
}

const req = (over: Record<string, unknown>) =>
	JSON.stringify({
		tenant_id: tenant,
		tg_user_id: 601,
		chat_id: GROUP,
		channel: 'group',
		trace_id: null,
		correlation_id: null,
		...over,
	});

async function refused(reqJson: string, status: number, code: string, field?: string) {
	const res = await call(reqJson);
	assert.equal(res.status, status, JSON.stringify(res.body));
	const envelope = ErrorEnvelope.parse(res.body);
	// WF99's envelope keeps the node's own details under details.node_details
	const nodeDetails = envelope.error.details.node_details as Record<string, unknown>;
	assert.equal(nodeDetails.code, code, JSON.stringify(res.body));
	if (field) assert.equal(nodeDetails.field, field);
	const rows = await db.pool.query('SELECT node, status_code FROM ops.errors WHERE correlation_id = $1', [
		envelope.meta.correlation.correlation_id,
	]);
	assert.deepEqual(
		rows.rows.map((r) => [r.node, Number(r.status_code)]),
		[['Context Loader', status]],
	);
}

test('WF00c in n8n: spoofed dms, a restricted user who left and a rounded id are refused with an ErrorEnvelope and an ops.errors row', async () => {
	const ok = await call(req({}));
	assert.equal(ok.status, 200, JSON.stringify(ok.body));
	await refused(req({ channel: 'dm', chat_id: GROUP }), 403, 'DM_NOT_OWN_CHAT');
	await refused(req({ channel: 'dm', chat_id: 603 }), 403, 'DM_NOT_OWN_CHAT');
	await refused(req({ tg_user_id: 602 }), 403, 'NOT_A_MEMBER');
	await refused(req({}).replace('"tg_user_id":601', `"tg_user_id":${EXACT}`), 422, 'VALIDATION', 'req.tg_user_id');
	await refused(req({ tg_user_id: '9223372036854775808' }), 422, 'VALIDATION', 'req.tg_user_id');
});

test('WF00c in n8n: the exact id 2^53 + 1 as a string is that user (a member), not its rounded neighbour', async () => {
	const res = await call(req({ tg_user_id: EXACT }));
	assert.equal(res.status, 200, JSON.stringify(res.body));
	assert.equal(res.body.data.ctx.tg_user_id, EXACT);
	await refused(req({ tg_user_id: '9007199254740992' }), 403, 'NOT_A_MEMBER');
});
