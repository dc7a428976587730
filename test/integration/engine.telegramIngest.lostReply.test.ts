/**
 * Issue 26 item 1, through n8n's own execution engine (test/helpers/n8nEngine.ts) with the shipped WF10
 * parameters: the Telegram Ingest write committed but its reply was lost (a TCP proxy in front of the real
 * PostgreSQL drops it). The webhook is answered once, 200 — never the 503 of the error branch that would
 * make Telegram see a 5xx for a committed update — with the one job the update got.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { SuccessEnvelope } from '../../nodes/shared/contracts/envelope';
import { clearExecutionPools } from '../../nodes/shared/postgres/executionPool';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { runWorkflow, stopEngine } from '../helpers/n8nEngine';
import { TcpProxy } from '../helpers/tcpProxy';
import { textWithUrls } from '../helpers/updates';

let db: TestDatabase;
let proxy: TcpProxy;
let bot: Awaited<ReturnType<typeof seedBot>>;
beforeAll(async () => {
	db = await setupDatabase();
	const target = new URL(db.url);
	proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
	await proxy.up();
	bot = await seedBot(db.pool, 'engine_lost_bot', 'Engine-lost_secret1');
});
afterAll(async () => {
	await closeAllPools();
	await proxy?.down();
	await db?.drop();
	stopEngine();
});

const WF10 = JSON.parse(
	fs.readFileSync(path.join(__dirname, '..', '..', 'workflows-json', 'WF10_telegram_ingest.json'), 'utf8'),
) as { nodes: Array<{ type: string; parameters: Record<string, unknown> }> };
const SHIPPED = WF10.nodes.find((n) => n.type === 'n8n-nodes-contracts.telegramIngest')!.parameters;

test('WF10: the ingest reply lost after COMMIT → the webhook is answered 200 once with the stored job; one job, nothing on the error output', async () => {
	clearExecutionPools();
	const update = textWithUrls();
	const before = proxy.dropped;
	proxy.dropReplyTo('raw.ingest_update(');
	const result = await runWorkflow({
		nodes: [
			{
				name: 'Telegram Ingest',
				type: 'telegramIngest',
				parameters: SHIPPED,
				onError: 'continueErrorOutput',
				credentials: { postgresContractsApi: 'Contracts DB' },
			},
		],
		items: [
			{
				json: {
					headers: { 'x-telegram-bot-api-secret-token': bot.secret, 'content-type': 'application/json' },
					params: {},
					query: { bot: bot.botKey },
					body: update,
				},
			},
		],
		credentials: { postgresContractsApi: { ...db.credential, host: '127.0.0.1', port: proxy.port } },
		mode: 'webhook',
	});
	assert.equal(result.error, undefined);
	assert.equal(proxy.dropped, before + 1, 'the committed write lost its reply');
	const { rows } = await db.pool.query('SELECT id FROM ops.jobs WHERE dedup_key = $1', [
		`tg:${bot.botId}:${update.update_id}`,
	]);
	assert.equal(rows.length, 1, 'one job');
	const [done] = result.output('Telegram Ingest', 0);
	assert.equal(SuccessEnvelope.parse(done.json).data.job_id, Number(rows[0].id));
	assert.equal(result.output('Telegram Ingest', 1).length, 0, 'nothing on the error output');
	assert.deepEqual(result.responses, [
		{
			body: { ok: true, job_id: Number(rows[0].id), duplicate: true, quarantined: false },
			headers: {},
			statusCode: 200,
		},
	]);
});
