/**
 * The Telegram Ingest node's parameters on the hot path (issue 14): Bot Key and Secret Token left at
 * their default expressions are read from the Webhook item without n8n's expression engine, with the
 * same result; any other value still goes through getNodeParameter; parameters without expressions are
 * read as stored. The shipped WF10 uses the defaults.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { textWithUrls } from '../helpers/updates';

// "TelegramIngest.node" would resolve to the codex .json beside it
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { TelegramIngest } =
	require('../../nodes/TelegramIngest/TelegramIngest.node.ts') as typeof import('../../nodes/TelegramIngest/TelegramIngest.node');

let db: TestDatabase;
let bot: Awaited<ReturnType<typeof seedBot>>;
beforeAll(async () => {
	db = await setupDatabase();
	bot = await seedBot(db.pool, 'node_bot', 'Node-secret_1');
});
afterAll(async () => {
	await closeAllPools();
	await db?.drop();
});

const node = new TelegramIngest();
const defaultOf = (name: string) => node.description.properties.find((p) => p.name === name)!.default;

/** A node context whose parameters are `parameters` (raw, as in the workflow); records what n8n was asked to evaluate. */
function context(
	items: INodeExecutionData[],
	parameters: Record<string, unknown>,
	evaluated: string[],
	sent: unknown[] = [],
): IExecuteFunctions {
	return {
		getInputData: () => items,
		getNode: () => ({
			name: 'Telegram Ingest',
			type: 'n8n-nodes-contracts.telegramIngest',
			typeVersion: 1,
			position: [0, 0],
			parameters,
			id: '1',
		}),
		getCredentials: async () => db.credential,
		getNodeParameter: (name: string, itemIndex: number, fallback?: unknown) => {
			evaluated.push(name);
			// what n8n's expression engine would give for the custom expressions below
			if (name === 'botKey' && parameters.botKey === '={{ $json.custom_bot }}') return items[itemIndex].json.custom_bot;
			if (name === 'secretToken' && parameters.secretToken === '={{ $json.custom_secret }}')
				return items[itemIndex].json.custom_secret;
			if (name === 'update' && parameters.update === '={{ $json.body }}') return items[itemIndex].json.body;
			return name in parameters && !String(parameters[name]).startsWith('=') ? parameters[name] : fallback;
		},
		continueOnFail: () => true,
		sendResponse: (response: unknown) => sent.push(response),
		helpers: { getBinaryDataBuffer: async () => Buffer.alloc(0) },
	} as unknown as IExecuteFunctions;
}

const webhookItem = (secret: string, extra: Record<string, unknown> = {}): INodeExecutionData => ({
	json: {
		headers: { 'x-telegram-bot-api-secret-token': secret },
		query: { bot: bot.botKey },
		body: textWithUrls(),
		...extra,
	},
});

test("the shipped WF10 leaves Bot Key and Secret Token at the node's default expressions", () => {
	const wf10 = JSON.parse(
		fs.readFileSync(path.join(__dirname, '..', '..', 'workflows-json', 'WF10_telegram_ingest.json'), 'utf8'),
	);
	const params = wf10.nodes.find((n: { type: string }) => n.type === 'n8n-nodes-contracts.telegramIngest').parameters;
	assert.equal(params.botKey, defaultOf('botKey'));
	assert.equal(params.secretToken, defaultOf('secretToken'));
});

test('default expressions: read from the item without the expression engine, same answers', async () => {
	const evaluated: string[] = [];
	const parameters = {
		botKey: defaultOf('botKey'),
		secretToken: defaultOf('secretToken'),
		rawBodyProperty: 'data',
		update: '={{ $json.body }}',
		jobType: 'telegram_update',
		options: {},
	};
	const items = [webhookItem(bot.secret), webhookItem('Wrong-secret_9'), { json: { body: textWithUrls() } }];
	const [out] = await node.execute.call(context(items, parameters, evaluated));
	assert.equal(out[0].json.ok, true, JSON.stringify(out[0].json));
	assert.equal((out[0].json.data as { duplicate: boolean }).duplicate, false);
	assert.equal((out[1].json.error as { status_code: number }).status_code, 403, 'a wrong header secret is refused');
	assert.equal((out[2].json.error as { status_code: number }).status_code, 400, 'no query: no bot key');
	assert.deepEqual(
		[...new Set(evaluated)],
		['update'],
		'only Update (an expression, no raw body here) went through n8n',
	);
});

test('a parameter holding an expression anywhere (e.g. inside Options) is evaluated by n8n', async () => {
	const evaluated: string[] = [];
	const parameters = {
		botKey: defaultOf('botKey'),
		secretToken: defaultOf('secretToken'),
		rawBodyProperty: 'data',
		update: '={{ $json.body }}',
		jobType: 'telegram_update',
		options: { workflow: '={{ "WF10x" }}' },
	};
	await node.execute.call(context([webhookItem(bot.secret)], parameters, evaluated));
	assert.ok(evaluated.includes('options'));
	assert.ok(!evaluated.includes('jobType') && !evaluated.includes('rawBodyProperty'));
});

test('any other Bot Key / Secret Token value is evaluated by n8n as before', async () => {
	const evaluated: string[] = [];
	const parameters = {
		botKey: '={{ $json.custom_bot }}',
		secretToken: '={{ $json.custom_secret }}',
		rawBodyProperty: 'data',
		update: '={{ $json.body }}',
		jobType: 'telegram_update',
		options: {},
	};
	const items = [webhookItem('Wrong-secret_9', { custom_bot: bot.botKey, custom_secret: bot.secret })];
	const [out] = await node.execute.call(context(items, parameters, evaluated));
	assert.equal(out[0].json.ok, true, JSON.stringify(out[0].json));
	assert.ok(evaluated.includes('botKey') && evaluated.includes('secretToken'));
});

test('Options → Respond to Webhook: one 200 answer with { ok, job_id, duplicate, quarantined } per execution, none for failures or when off', async () => {
	const wf10 = JSON.parse(
		fs.readFileSync(path.join(__dirname, '..', '..', 'workflows-json', 'WF10_telegram_ingest.json'), 'utf8'),
	);
	const shipped = wf10.nodes.find((n: { type: string }) => n.type === 'n8n-nodes-contracts.telegramIngest');
	assert.equal(shipped.parameters.options.respond, true, 'the shipped WF10 answers from the node');
	assert.ok(
		!wf10.nodes.some(
			(n: { type: string; name: string }) => n.type === 'n8n-nodes-base.respondToWebhook' && n.name !== 'Respond Error',
		),
		'no Respond node on the success path',
	);

	const parameters = (respond: boolean) => ({
		botKey: defaultOf('botKey'),
		secretToken: defaultOf('secretToken'),
		rawBodyProperty: 'data',
		update: '={{ $json.body }}',
		jobType: 'telegram_update',
		options: { respond },
	});
	const sent: unknown[] = [];
	const update = textWithUrls();
	const item = {
		json: { headers: { 'x-telegram-bot-api-secret-token': bot.secret }, query: { bot: bot.botKey }, body: update },
	};
	const [out] = await node.execute.call(context([item, item], parameters(true), [], sent));
	const first = out[0].json.data as { job_id: number };
	assert.deepEqual(
		sent,
		[{ body: { ok: true, job_id: first.job_id, duplicate: false, quarantined: false }, headers: {}, statusCode: 200 }],
		'one answer, for the first item',
	);

	sent.length = 0;
	await node.execute.call(context([webhookItem('Wrong-secret_9')], parameters(true), [], sent));
	assert.deepEqual(sent, [], 'a failure is answered by the error branch, not here');
	await node.execute.call(context([webhookItem(bot.secret)], parameters(false), [], sent));
	assert.deepEqual(sent, [], 'off: no answer');
});
