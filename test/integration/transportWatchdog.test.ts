/**
 * Bot Transport → Check (WF11) on real PostgreSQL against a Bot API stand-in: the bot found by getMe,
 * health from getWebhookInfo and the config, a snapshot per check, the state kept, an event only on a
 * change, an unreachable API recorded as down; and the Knowledge Bot node run as n8n 2.4.8 resolves a saved
 * workflow's parameters, under the resource's value ('botTransport') and its former one ('transport').
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Workflow, type IExecuteFunctions, type INode, type INodeTypes } from 'n8n-workflow';
import { checkOperation, healthOf } from '../../nodes/KnowledgeBot/actions/botTransport/check.operation';
import { SuccessItem } from '../../nodes/shared/contracts/envelope';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { startBotApi, type BotApiStandIn } from '../helpers/botApiStandIn';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { knowledgeRunner } from '../helpers/knowledgeOps';

// the .ts path: "KnowledgeBot.node" alone would resolve to the codex .json beside it
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { KnowledgeBot } =
	require('../../nodes/KnowledgeBot/KnowledgeBot.node.ts') as typeof import('../../nodes/KnowledgeBot/KnowledgeBot.node');

let db: TestDatabase;
let botApi: BotApiStandIn;
let botId: string;
let apiUp = true;
const { run, failure } = knowledgeRunner(() => db.pool, '5a6b7c8d-9e0f-4a1b-8c2d-e3f4a5b6c7d8', {
	telegram: () => ({ accessToken: botApi.token, baseUrl: apiUp ? botApi.baseUrl : 'http://127.0.0.1:9' }),
});
const URL_OK = 'https://n8n.example.com/webhook/telegram?bot=kb';

beforeAll(async () => {
	db = await setupDatabase();
	botApi = await startBotApi();
	botId = (await seedBot(db.pool, 'kb')).botId;
	await db.pool.query('UPDATE core.bots SET tg_bot_id = $2 WHERE bot_id = $1', [botId, botApi.me.id]);
	await db.pool.query(
		"INSERT INTO core.bot_transport_config (bot_id, mode, expected_webhook_url, max_pending_updates) VALUES ($1, 'webhook', $2, 100)",
		[botId, URL_OK],
	);
});
afterAll(async () => {
	await closeAllPools();
	await botApi.close();
	await db.drop();
});

const events = async () =>
	(
		await db.pool.query('SELECT old_health, new_health FROM ops.bot_transport_events WHERE bot_id = $1 ORDER BY id', [
			botId,
		])
	).rows.map((r) => [r.old_health, r.new_health]);

test('healthy, then a backlog, then no webhook: one snapshot per check, an event only when the health changes', async () => {
	botApi.webhookInfo = { url: URL_OK, pending_update_count: 3 };
	const first = (await run(checkOperation, {})).data;
	assert.deepEqual([first.bot_id, first.health, first.previous_health], [botId, 'ok', null]);
	const again = (await run(checkOperation, {})).data;
	assert.deepEqual([again.health, again.event_id], ['ok', null]);
	botApi.webhookInfo = { url: URL_OK, pending_update_count: 250 };
	assert.equal((await run(checkOperation, {})).data.health, 'degraded');
	botApi.webhookInfo = { url: '', pending_update_count: 0 };
	assert.equal((await run(checkOperation, { bot_id: botId })).data.health, 'down');
	assert.deepEqual(await events(), [
		[null, 'ok'],
		['ok', 'degraded'],
		['degraded', 'down'],
	]);
	const snapshots = await db.pool.query(
		'SELECT health, pending_update_count FROM ops.webhook_health_snapshots WHERE bot_id = $1 ORDER BY id',
		[botId],
	);
	assert.deepEqual(
		snapshots.rows.map((r) => r.health),
		['ok', 'ok', 'degraded', 'down'],
	);
	const state = await db.pool.query(
		'SELECT health, last_ok_at IS NOT NULL AS was_ok, last_error FROM core.bot_transport_state WHERE bot_id = $1',
		[botId],
	);
	assert.deepEqual(state.rows[0], { health: 'down', was_ok: true, last_error: 'no webhook set' });
});

test('the Bot API unreachable with bot_id given: recorded as down, not raised; without bot_id the bot cannot be found: 502', async () => {
	apiUp = false;
	try {
		const down = (await run(checkOperation, { bot_id: botId })).data;
		assert.equal(down.health, 'down');
		const snapshot = await db.pool.query('SELECT last_error_message FROM ops.webhook_health_snapshots WHERE id = $1', [
			down.snapshot_id,
		]);
		assert.match(snapshot.rows[0].last_error_message, /fetch failed|ECONNREFUSED/);
		const lost = await failure(checkOperation, {});
		assert.deepEqual([lost.statusCode, lost.retryable], [502, true]);
	} finally {
		apiUp = true;
	}
	botApi.me = { ...botApi.me, id: 42 };
	const unknown = await failure(checkOperation, {});
	assert.deepEqual([unknown.statusCode, unknown.details.code], [404, 'BOT_NOT_REGISTERED']);
});

test('healthOf: a wrong URL and a recent delivery error degrade; an old error does not', () => {
	const config = { mode: 'webhook', expected_webhook_url: URL_OK, max_pending_updates: 100 };
	const now = 1_800_000_000;
	assert.equal(healthOf({ url: 'https://elsewhere/x', pending_update_count: 0 }, config, now).health, 'degraded');
	assert.equal(
		healthOf(
			{
				url: URL_OK,
				pending_update_count: 0,
				last_error_date: now - 60,
				last_error_message: 'Wrong response from the webhook: 502',
			},
			config,
			now,
		).health,
		'degraded',
	);
	assert.equal(
		healthOf({ url: URL_OK, pending_update_count: 0, last_error_date: now - 3600 }, config, now).health,
		'ok',
	);
	assert.equal(
		healthOf({ url: '', pending_update_count: 0 }, { ...config, mode: 'polling', expected_webhook_url: null }, now)
			.health,
		'ok',
	);
});

test('empty fields from the canvas mean "not given": the bot of the credential', async () => {
	botApi.me = { ...botApi.me, id: 5550001 };
	botApi.webhookInfo = { url: URL_OK, pending_update_count: 0 };
	const { data } = await run(checkOperation, { tenant_id: '', bot_id: '' });
	assert.deepEqual([data.bot_id, data.health], [botId, 'ok']);
});

/**
 * The parameters of a saved Knowledge Bot node as n8n's Workflow resolves them (defaults added, parameters
 * whose displayOptions hide them dropped), then the node's execute on them with the real credentials.
 */
async function runSavedNode(parameters: Record<string, unknown>) {
	const node: INode = {
		id: '1',
		name: 'Check Webhook',
		type: 'n8n-nodes-contracts.knowledgeBot',
		typeVersion: 1,
		position: [0, 0],
		parameters: parameters as INode['parameters'],
	};
	const nodeType = new KnowledgeBot();
	const nodeTypes = {
		getByName: () => nodeType,
		getByNameAndVersion: () => nodeType,
		getKnownTypes: () => ({}),
	} as unknown as INodeTypes;
	const workflow = new Workflow({ nodes: [node], connections: {}, active: false, nodeTypes });
	const resolved = workflow.getNode('Check Webhook')!.parameters as Record<string, unknown>;
	const credentials: Record<string, unknown> = {
		postgresContractsApi: db.credential,
		contractsTelegramApi: { accessToken: botApi.token, baseUrl: botApi.baseUrl },
	};
	const fn = {
		getInputData: () => [{ json: {} }],
		getNode: () => ({ ...node, parameters: resolved }),
		getCredentials: async (name: string) => credentials[name],
		getNodeParameter: (name: string, _i: number, fallback?: unknown) => {
			if (name in resolved) return resolved[name];
			if (fallback === undefined) throw new Error(`Could not get parameter ${name}`);
			return fallback;
		},
		continueOnFail: () => true,
	} as unknown as IExecuteFunctions;
	const [[item]] = await nodeType.execute.call(fn);
	return { resolved, item: item.json };
}

test("a workflow saved with the former resource value 'transport' still runs Bot Transport → Check (WF11)", async () => {
	botApi.me = { ...botApi.me, id: 5550001 };
	botApi.webhookInfo = { url: URL_OK, pending_update_count: 0 };
	const snapshots = async () =>
		Number(
			(await db.pool.query('SELECT count(*) AS n FROM ops.webhook_health_snapshots WHERE bot_id = $1', [botId])).rows[0]
				.n,
		);
	for (const resource of ['botTransport', 'transport']) {
		const before = await snapshots();
		const { resolved, item } = await runSavedNode({ resource, operation: 'check', req: '{}', ctx: '{}' });
		assert.equal(resolved.operation, 'check', `n8n keeps the operation of resource '${resource}'`);
		assert.equal(item.ok, true, JSON.stringify(item.error));
		const { ctx, ...json } = item; // Knowledge Bot puts the final ctx beside the envelope
		assert.equal((ctx as { workflow?: string }).workflow, 'WF11');
		const envelope = SuccessItem.parse(json);
		assert.equal(envelope.meta.source, 'WF11', resource);
		assert.deepEqual([envelope.data.bot_id, envelope.data.health], [botId, 'ok'], resource);
		assert.equal(await snapshots(), before + 1, `one snapshot per check under '${resource}'`);
	}
	// what 'transport' would get without formerValues: n8n drops the hidden operation, the node cannot run
	await assert.rejects(
		runSavedNode({ resource: 'nonsense', operation: 'check', req: '{}', ctx: '{}' }),
		/Could not get parameter operation/,
	);
});
