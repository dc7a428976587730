/**
 * Telegram Ingest run by n8n's own execution engine (test/helpers/n8nEngine.ts, n8n-core 2.4.4) on real
 * PostgreSQL, as WF10 runs it (seed 003 WF10, seed 002 §2): what telegramIngest.node.test.ts's fake
 * context cannot show — Bot Key / Secret Token expressions evaluated by n8n (also through
 * `$('Input').item`), the raw body read through n8n-core's binary helpers, the error output n8n builds
 * for onError continueErrorOutput (merged with the Webhook item, which is why WF10's error branch drops
 * `headers`), the webhook answer through n8n's sendResponse hook, pairedItem, and Reuse Credential keyed
 * by the workflow and credential ids n8n gives the node.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { INodeExecutionData } from 'n8n-workflow';
import { SuccessEnvelope } from '../../nodes/shared/contracts/envelope';
import { clearExecutionPools } from '../../nodes/shared/postgres/executionPool';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { runWorkflow, sinkOf, stopEngine, type RunOptions } from '../helpers/n8nEngine';
import { assertNoSecret, secret } from '../helpers/secretScan';
import { newUpdateId, textWithUrls } from '../helpers/updates';

let db: TestDatabase;
let bot: Awaited<ReturnType<typeof seedBot>>;
beforeAll(async () => {
	db = await setupDatabase();
	bot = await seedBot(db.pool, 'engine_bot', 'Engine-secret_1');
});
afterAll(async () => {
	await closeAllPools();
	await db?.drop();
	stopEngine();
});

const WF10 = JSON.parse(
	fs.readFileSync(path.join(__dirname, '..', '..', 'workflows-json', 'WF10_telegram_ingest.json'), 'utf8'),
) as { nodes: Array<{ name: string; type: string; parameters: Record<string, unknown> }> };
/** The shipped WF10's Telegram Ingest parameters (default Bot Key / Secret Token expressions, Respond, Reuse Credential). */
const SHIPPED = WF10.nodes.find((n) => n.type === 'n8n-nodes-contracts.telegramIngest')!.parameters;

/** Input → Telegram Ingest (continueErrorOutput, as in WF10) → a sink per output. */
function ingest(parameters: Record<string, unknown>, items: INodeExecutionData[], more: Partial<RunOptions> = {}) {
	return runWorkflow({
		nodes: [
			{
				name: 'Telegram Ingest',
				type: 'telegramIngest',
				parameters,
				onError: 'continueErrorOutput',
				credentials: { postgresContractsApi: 'Contracts DB' },
			},
		],
		items,
		credentials: { postgresContractsApi: { ...db.credential } },
		mode: 'webhook',
		...more,
	});
}

/** The item n8n's Webhook node emits for a Telegram call (parsed body; raw body bytes as binary `data` when given). */
function webhookItem(secretToken: string, body: unknown, raw?: string): INodeExecutionData {
	return {
		json: {
			headers: { 'x-telegram-bot-api-secret-token': secretToken, 'content-type': 'application/json' },
			params: {},
			query: { bot: bot.botKey },
			body: body as INodeExecutionData['json'],
		},
		...(raw === undefined
			? {}
			: { binary: { data: { data: Buffer.from(raw).toString('base64'), mimeType: 'application/json' } } }),
	};
}

const storedUpdate = async (updateId: number) =>
	(
		await db.pool.query<{ text: string }>(
			'SELECT update::text AS text FROM raw.telegram_updates WHERE update_id = $1',
			[updateId],
		)
	).rows.map((r) => r.text);

test("the shipped WF10 parameters through the engine: one job per update, the webhook answered once through n8n's sendResponse hook, items paired", async () => {
	clearExecutionPools();
	const first = textWithUrls();
	const second = textWithUrls();
	const result = await ingest(SHIPPED, [webhookItem(bot.secret, first), webhookItem(bot.secret, second)]);
	assert.equal(result.error, undefined);
	const done = result.output('Telegram Ingest', 0);
	const data = done.map((i) => SuccessEnvelope.parse(i.json).data as { job_id: number; duplicate: boolean });
	assert.deepEqual(
		done.map((i) => i.pairedItem),
		[{ item: 0 }, { item: 1 }],
	);
	assert.deepEqual(
		data.map((d) => d.duplicate),
		[false, false],
	);
	assert.deepEqual(result.responses, [
		{ body: { ok: true, job_id: data[0].job_id, duplicate: false, quarantined: false }, headers: {}, statusCode: 200 },
	]);
	assert.equal((await storedUpdate(first.update_id)).length, 1);
	assert.equal(result.output('Telegram Ingest', 1).length, 0, 'nothing on the error output');
});

test('custom Bot Key / Secret Token expressions are evaluated by n8n, also $("Input").item and a Workflow Label inside Options', async () => {
	const update = textWithUrls();
	const parameters = {
		...SHIPPED,
		botKey: "={{ $('Input').item.json.params.tenantBot }}",
		secretToken: '={{ $json.headers["x-telegram-bot-api-secret-token"].trim() }}',
		options: { workflow: "={{ 'WF10-' + $json.params.region }}" },
	};
	const item = webhookItem(`  ${bot.secret}  `, update);
	item.json.query = {};
	item.json.params = { tenantBot: bot.botKey, region: 'eu' };
	const result = await ingest(parameters, [item]);
	const [done] = result.output('Telegram Ingest', 0);
	assert.ok(done, JSON.stringify(result.output('Telegram Ingest', 1)[0]?.json));
	const envelope = SuccessEnvelope.parse(done.json);
	assert.equal(envelope.meta.source, 'WF10-eu');
	assert.equal((await storedUpdate(update.update_id)).length, 1);
});

test("the raw body binary is read through n8n-core's binary helpers: an id beyond 2^53 is stored exactly, the parsed body is not used", async () => {
	const updateId = newUpdateId();
	const raw = `{"update_id":${updateId},"message":{"message_id":7,"date":1763800000,"chat":{"id":-100,"type":"supergroup"},"from":{"id":9007199254740993,"is_bot":false,"first_name":"Big"},"text":"hi"}}`;
	const parsed = JSON.parse(raw);
	assert.equal(parsed.message.from.id, 9007199254740992, 'the parsed body lost the last digit');
	const result = await ingest(SHIPPED, [webhookItem(bot.secret, parsed, raw)]);
	assert.equal(result.output('Telegram Ingest', 0).length, 1, JSON.stringify(result.output('Telegram Ingest', 1)));
	const [stored] = await storedUpdate(updateId);
	assert.match(stored, /"id": 9007199254740993/);
});

test("continueErrorOutput: a wrong secret and a missing bot go to n8n's error output, merged with the Webhook item (WF10's error branch drops its headers); no secret in the error itself", async () => {
	const wrong = 'Wrong-secret_9';
	const noBot = webhookItem(bot.secret, textWithUrls());
	noBot.json.query = {};
	const ok = textWithUrls();
	const result = await ingest(SHIPPED, [webhookItem(wrong, textWithUrls()), webhookItem(bot.secret, ok), noBot]);
	assert.equal(result.error, undefined);
	assert.equal(result.outputCount('Telegram Ingest'), 2, 'Success and the error output n8n adds');
	assert.deepEqual(
		result.output('Telegram Ingest', 0).map((i) => i.pairedItem),
		[{ item: 1 }],
	);
	const failed = result.output('Telegram Ingest', 1);
	assert.deepEqual(
		failed.map((i) => i.pairedItem),
		[{ item: 0 }, { item: 2 }],
	);
	assert.deepEqual(
		failed.map((i) => (i.json.error as { status_code: number }).status_code),
		[403, 400],
	);
	for (const item of failed) {
		assertNoSecret('the error object', item.json.error, [
			secret('bot secret', bot.secret),
			secret('sent secret', wrong),
		]);
		// n8n's handleNodeErrorOutput merged the Webhook item's json (headers with the secret) into the error item
		assert.ok(item.json.headers && item.json.body, 'merged with the input item');
	}
	const errNode = WF10.nodes.find((n) => n.name === 'ERR — Source Telegram Ingest')!;
	assert.equal(errNode.parameters.excludeFields, 'headers', "WF10's first error-branch node drops the merged headers");
	assert.equal(result.output(sinkOf('Telegram Ingest', 1)).length, 2, 'n8n ran the error branch with both');
	assert.deepEqual(result.responses, [
		{
			body: {
				ok: true,
				job_id: SuccessEnvelope.parse(result.output('Telegram Ingest', 0)[0].json).data.job_id,
				duplicate: false,
				quarantined: false,
			},
			headers: {},
			statusCode: 200,
		},
	]);
});

test('Reuse Credential: keyed by the workflow and credential ids n8n gives the node, read through n8n once per 5 s; off: on every execution', async () => {
	clearExecutionPools();
	const reuse = { ...SHIPPED, options: { ...(SHIPPED.options as object), reuseCredential: true, respond: false } };
	const runs = [];
	for (const workflowId of ['wf-a', 'wf-a', 'wf-b']) {
		runs.push(await ingest(reuse, [webhookItem(bot.secret, textWithUrls())], { workflowId }));
	}
	assert.deepEqual(
		runs.map((r) => r.credentialsRead),
		[['postgresContractsApi'], [], ['postgresContractsApi']],
		'the second execution of wf-a reused it; wf-b read its own',
	);
	const off = { ...reuse, options: { ...reuse.options, reuseCredential: false } };
	const offRuns = [];
	for (let k = 0; k < 2; k++)
		offRuns.push(await ingest(off, [webhookItem(bot.secret, textWithUrls())], { workflowId: 'wf-a' }));
	assert.deepEqual(
		offRuns.map((r) => r.credentialsRead),
		[['postgresContractsApi'], ['postgresContractsApi']],
	);
	assert.ok([...runs, ...offRuns].every((r) => r.output('Telegram Ingest', 0).length === 1));
	clearExecutionPools();
});

test('a NUL in the X-Trace-Id header → the error output with 400 naming traceId (was a 500); a clean traceparent is kept', async () => {
	const bad = webhookItem(bot.secret, textWithUrls());
	(bad.json.headers as Record<string, string>)['x-trace-id'] = 'trace\u0000id';
	const good = webhookItem(bot.secret, textWithUrls());
	(good.json.headers as Record<string, string>).traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
	const result = await ingest(SHIPPED, [bad, good]);
	assert.equal(result.error, undefined);
	const [failed] = result.output('Telegram Ingest', 1);
	const error = failed.json.error as { status_code: number; kind: string; details: Record<string, unknown> };
	assert.deepEqual([error.status_code, error.kind, error.details.field], [400, 'validation', 'traceId']);
	assert.ok(!JSON.stringify(error).includes('trace\\u0000id'), 'the bad value is not repeated');
	const [done] = result.output('Telegram Ingest', 0);
	assert.equal(
		SuccessEnvelope.parse(done.json).meta.correlation.trace_id,
		'00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
	);
});
