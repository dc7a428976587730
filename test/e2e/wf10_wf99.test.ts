/**
 * WF10 and WF99 in a real n8n 2.4.8 (seed 003 WF10/WF99, seed 002 §1.5 fixtures): the packed package
 * installed as a community package, the shipped workflow JSON imported and published, Telegram updates
 * posted to the webhook, every row checked in PostgreSQL.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { ErrorEnvelope, PublicError } from '../../nodes/shared/contracts/envelope';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { fixtureA, fixtureB } from '../helpers/fixtures';
import { mapLimit, startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
import { TcpProxy } from '../helpers/tcpProxy';
import { newUpdateId, realisticUpdates, textWithUrls } from '../helpers/updates';
import { JOB_STATUS, JOB_TYPES } from '../../nodes/shared/jobs';

let db: TestDatabase;
let n8n: RunningN8n;
let proxy: TcpProxy;
let bot: Awaited<ReturnType<typeof seedBot>>;

beforeAll(async () => {
	db = await setupDatabase();
	bot = await seedBot(db.pool, 'e2e_bot', 'e2e-Secret_123');
	const target = new URL(db.url);
	proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
	await proxy.up();
	const proxied = new URL(db.url);
	proxied.hostname = '127.0.0.1';
	proxied.port = String(proxy.port);
	n8n = await startN8n(
		proxied.toString(),
		[
			path.join(WORKFLOWS, 'WF99e_catch_all.json'),
			path.join(WORKFLOWS, 'WF99_global_err_handler.json'),
			path.join(WORKFLOWS, 'WF10_telegram_ingest.json'),
			path.join(__dirname, 'workflows', 'test_wf99_caller.json'),
			path.join(WORKFLOWS, 'WF00c_context_loader.json'),
			path.join(__dirname, 'workflows', 'test_wf00c_caller.json'),
			path.join(__dirname, 'workflows', 'telegramIngest_wf10_binary.json'),
		],
		['test/wf99', 'telegram', 'test/wf00c', 'telegram-binary'],
	);
}, 30 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await proxy?.down();
	await db?.drop();
});

/** Posts `body` as application/json: a string or Buffer is sent as these exact bytes, anything else as JSON. */
async function post(pathname: string, body: unknown, headers: Record<string, string> = {}) {
	const res = await fetch(`${n8n.url}/webhook/${pathname}`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...headers },
		body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
	});
	const text = await res.text();
	let json: any;
	try {
		json = JSON.parse(text);
	} catch {
		json = text;
	}
	return { status: res.status, body: json };
}

function postUpdate(update: unknown, secret: string | null = bot.secret, webhook = 'telegram') {
	return post(
		`${webhook}?bot=${bot.botKey}`,
		update,
		secret === null ? {} : { 'X-Telegram-Bot-Api-Secret-Token': secret },
	);
}

async function countFor(updateIds: number[]) {
	const { rows } = await db.pool.query(
		`SELECT (SELECT count(*) FROM raw.telegram_updates WHERE bot_id = $1 AND update_id = ANY($2))::int AS raw,
		        (SELECT count(*) FROM raw.telegram_update_keys WHERE bot_id = $1 AND update_id = ANY($2))::int AS keys,
		        (SELECT count(*) FROM ops.jobs WHERE dedup_key = ANY($3))::int AS jobs`,
		[bot.botId, updateIds, updateIds.map((id) => `tg:${bot.botId}:${id}`)],
	);
	return rows[0] as { raw: number; keys: number; jobs: number };
}

test('100 deliveries with duplicates → exactly the distinct updates stored and enqueued, every answer 200', async () => {
	const distinct = Array.from({ length: 70 }, (_, i) => realisticUpdates[i % realisticUpdates.length]());
	const deliveries = [...distinct, ...Array.from({ length: 30 }, (_, i) => distinct[(i * 7) % distinct.length])];
	deliveries.sort(() => Math.random() - 0.5);
	const answers = await mapLimit(deliveries, 8, (update) => postUpdate(update));
	const failed = answers.find((a) => a.status !== 200);
	const why = failed
		? (
				await db.pool.query('SELECT message FROM ops.errors WHERE correlation_id = $1', [
					failed.body.correlation_id ?? null,
				])
			).rows
		: [];
	assert.deepEqual(
		[...new Set(answers.map((a) => a.status))],
		[200],
		`${answers.filter((a) => a.status !== 200).length} failed: ${JSON.stringify(failed)} ${JSON.stringify(why)}`,
	);
	for (const answer of answers) {
		assert.equal(answer.body.ok, true);
		assert.equal('method' in answer.body, false, 'Telegram would execute a "method" key');
	}
	const jobOf = new Map<number, Set<number>>();
	deliveries.forEach((u, i) =>
		jobOf.set(u.update_id, (jobOf.get(u.update_id) ?? new Set()).add(answers[i].body.job_id)),
	);
	assert.ok(
		[...jobOf.values()].every((jobs) => jobs.size === 1),
		'every delivery of an update names the same job',
	);
	assert.equal(answers.filter((a) => a.body.duplicate === false).length, 70);
	assert.deepEqual(await countFor(distinct.map((u) => u.update_id)), { raw: 70, keys: 70, jobs: 70 });
}, 300_000);

test('fixture A through WF99: envelope as expected, ops.errors written, job path executed', async () => {
	const { rows } = await db.pool.query(
		`INSERT INTO ops.jobs (job_type, status, attempts, locked_by, locked_at) VALUES ($1, $2, 1, 'w1', now()) RETURNING id`,
		[JOB_TYPES.telegram_update, JOB_STATUS.running],
	);
	const jobId = Number(rows[0].id);
	const { uuid, item } = fixtureA(jobId);
	const { status, body } = await post('test/wf99', item);
	assert.equal(status, 200);
	const envelope = ErrorEnvelope.parse(body);
	assert.equal(envelope.meta.correlation.correlation_id, uuid);
	assert.equal(envelope.error.details.error_context?.node, 'Lookup Bot');
	assert.equal(envelope.meta.source, 'WF99');
	const errors = await db.pool.query('SELECT node, job_id, details FROM ops.errors WHERE correlation_id = $1', [uuid]);
	assert.equal(errors.rows.length, 1);
	assert.equal(errors.rows[0].node, 'Lookup Bot');
	assert.equal(typeof errors.rows[0].details, 'object');
	const job = await db.pool.query('SELECT status FROM ops.jobs WHERE id = $1', [jobId]);
	assert.equal(job.rows[0].status, 'failed');
	const runs = await db.pool.query('SELECT count(*)::int AS n FROM ops.job_runs WHERE job_id = $1', [jobId]);
	assert.equal(runs.rows[0].n, 1);
}, 60_000);

test('fixture B through WF99: ops.errors written, no job path, every envelope key present', async () => {
	const runsBefore = (await db.pool.query('SELECT count(*)::int AS n FROM ops.job_runs')).rows[0].n;
	const { uuid, item } = fixtureB();
	const { status, body } = await post('test/wf99', item);
	assert.equal(status, 200);
	const envelope = ErrorEnvelope.parse(body);
	assert.equal(envelope.meta.correlation.correlation_id, uuid);
	assert.equal(envelope._internal?.job_id, null);
	assert.deepEqual(body._internal.job_path, { executed: false });
	for (const key of ['ok', 'status_code', 'data', 'error', 'meta']) assert.ok(key in body, key);
	for (const key of ['kind', 'message', 'retryable', 'details']) assert.ok(key in body.error, key);
	const errors = await db.pool.query(
		'SELECT count(*)::int AS n FROM ops.errors WHERE correlation_id = $1 AND job_id IS NULL',
		[uuid],
	);
	assert.equal(errors.rows[0].n, 1);
	assert.equal((await db.pool.query('SELECT count(*)::int AS n FROM ops.job_runs')).rows[0].n, runsBefore);
}, 60_000);

test('wrong secret → 403, missing secret → 401, malformed body → 400: an ops.errors row each, no raw rows', async () => {
	const cases: Array<[unknown, string | null, number, string, string]> = [
		[textWithUrls(), 'wrong-secret', 403, 'auth', 'core.bots'],
		[textWithUrls(), null, 401, 'auth', 'core.bots'],
		[
			{ update_id: newUpdateId(), message: { text: 'no chat, no message_id' } },
			bot.secret,
			400,
			'validation',
			'raw.telegram_quarantine',
		],
		[{ update_id: 'abc', message: {} }, bot.secret, 400, 'validation', 'raw.telegram_quarantine'],
	];
	for (const [update, secret, expected, kind, table] of cases) {
		const { status, body } = await postUpdate(update, secret);
		assert.equal(status, expected, JSON.stringify(body));
		assert.equal(body.ok, false);
		assert.equal(body.kind, kind);
		const errors = await db.pool.query(
			'SELECT node, status_code, workflow, details FROM ops.errors WHERE correlation_id = $1',
			[body.correlation_id],
		);
		assert.equal(errors.rows.length, 1, `one ops.errors row for ${expected}`);
		assert.equal(errors.rows[0].node, 'Telegram Ingest');
		assert.equal(errors.rows[0].status_code, expected);
		assert.equal(errors.rows[0].workflow, 'WF10');
		assert.equal(errors.rows[0].details.error_context.table, table);
		const updateId = (update as { update_id: unknown }).update_id;
		if (typeof updateId === 'number') assert.deepEqual(await countFor([updateId]), { raw: 0, keys: 0, jobs: 0 });
	}
}, 60_000);

test('database stopped → 5xx (Telegram retries); back up → the same update is stored once', async () => {
	const update = textWithUrls();
	await proxy.down();
	let outage;
	try {
		outage = await postUpdate(update);
	} finally {
		await proxy.up();
	}
	assert.ok(outage.status >= 500 && outage.status <= 599, `status ${outage.status}: ${JSON.stringify(outage.body)}`);
	assert.equal(outage.body.kind, 'db');
	const retry = await postUpdate(update);
	assert.equal(retry.status, 200, JSON.stringify(retry.body));
	assert.equal(retry.body.duplicate, false);
	assert.deepEqual(await countFor([update.update_id]), { raw: 1, keys: 1, jobs: 1 });
}, 120_000);

test('WF00c as a sub-workflow: an allowed member gets the ctx; a blocked user gets a 403 ErrorEnvelope recorded in ops.errors', async () => {
	const tenant = bot.tenantId;
	await db.pool.query(
		"INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, 501, 'user'), ($1, 502, 'blocked') ON CONFLICT DO NOTHING",
		[tenant],
	);
	await db.pool.query('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, -5001) ON CONFLICT DO NOTHING', [
		tenant,
	]);
	await db.pool.query(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, -5001, 501, 'member') ON CONFLICT DO NOTHING",
		[tenant],
	);
	const reqOf = (tg_user_id: number) => ({
		req: { tenant_id: tenant, tg_user_id, chat_id: -5001, channel: 'group', trace_id: null, correlation_id: null },
	});
	const allowed = await post('test/wf00c', reqOf(501));
	assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
	assert.deepEqual(
		[allowed.body.data.ctx.role, allowed.body.data.ctx.is_allowed, allowed.body.data.ctx.visibility],
		['user', true, 'group'],
	);
	const blocked = await post('test/wf00c', reqOf(502));
	assert.equal(blocked.status, 403, JSON.stringify(blocked.body));
	const envelope = ErrorEnvelope.parse(blocked.body);
	assert.equal(envelope.error.kind, 'auth');
	const rows = await db.pool.query('SELECT node FROM ops.errors WHERE correlation_id = $1', [
		envelope.meta.correlation.correlation_id,
	]);
	assert.deepEqual(rows.rows, [{ node: 'Context Loader' }]);
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

async function quarantined(bytes: Buffer) {
	const { rows } = await db.pool.query(
		'SELECT id, body, reason, status_code, correlation_id FROM raw.telegram_quarantine WHERE bot_id = $1 AND body_sha256 = $2',
		[bot.botId, sha256(bytes)],
	);
	return rows;
}

function poison(text: string, updateId = newUpdateId()): string {
	return JSON.stringify(textWithUrls(updateId)).replace('"text":', `"poison":${text},"text":`);
}

test('poison updates through the real n8n: 200 quarantined (no "method"), bytes kept exactly, one ops.errors row; a re-delivery is a duplicate', async () => {
	const deep = `${'['.repeat(10_000)}1${']'.repeat(10_000)}`;
	const cases: Array<[string, string]> = [
		[poison('"NUL \\u0000 here"'), 'nul_character'],
		[poison('"lone \\ud800 surrogate"'), 'lone_surrogate'],
		[JSON.stringify(textWithUrls()).replace(/"update_id":\d+/, '"update_id":9223372036854775808'), 'id_not_int8'],
		[JSON.stringify(textWithUrls()).replace(/"chat":\{"id":-?\d+/, '"chat":{"id":1e300'), 'id_not_int8'],
		[poison(deep), 'too_deep'],
	];
	for (const [text, reason] of cases) {
		const bytes = Buffer.from(text);
		const first = await postUpdate(bytes);
		assert.equal(first.status, 200, `${reason}: ${JSON.stringify(first.body)}`);
		assert.deepEqual(first.body, { ok: true, job_id: null, duplicate: false, quarantined: true }, reason);
		const rows = await quarantined(bytes);
		assert.equal(rows.length, 1, reason);
		assert.ok(Buffer.from(rows[0].body).equals(bytes), `${reason}: bytes kept exactly`);
		assert.deepEqual([rows[0].reason, rows[0].status_code], [reason, 200]);
		const errors = await db.pool.query(
			"SELECT node, status_code FROM ops.errors WHERE details->>'quarantine_id' = $1",
			[String(rows[0].id)],
		);
		assert.deepEqual(errors.rows, [{ node: 'Telegram Ingest', status_code: 422 }], reason);
		const again = await postUpdate(bytes);
		assert.deepEqual([again.status, again.body.duplicate, again.body.quarantined], [200, true, true], reason);
		assert.equal((await quarantined(bytes)).length, 1);
		assert.equal(
			(
				await db.pool.query("SELECT count(*)::int AS n FROM ops.errors WHERE details->>'quarantine_id' = $1", [
					String(rows[0].id),
				])
			).rows[0].n,
			1,
		);
	}
}, 120_000);

test('a body that is not JSON: the shipped WF10 (Webhook 2.1, Raw Body) never sees it — n8n answers 422 itself; nothing written', async () => {
	const bytes = Buffer.from(`{"update_id": ${newUpdateId()}, "message": `);
	const before = (
		await db.pool.query(
			'SELECT (SELECT count(*) FROM ops.errors)::int AS e, (SELECT count(*) FROM raw.telegram_quarantine)::int AS q',
		)
	).rows[0];
	const answer = await postUpdate(bytes);
	assert.equal(answer.status, 422, JSON.stringify(answer.body));
	assert.equal(answer.body.message, 'Failed to parse request body');
	// issue 25 §4: the harness runs n8n as the demo does (NODE_ENV=production): no stack trace, no server path
	assert.equal('stacktrace' in answer.body, false, JSON.stringify(answer.body));
	assert.doesNotMatch(JSON.stringify(answer.body), /stack|node_modules|\.js:\d+|\/(?:home|root|usr|tmp|opt)\//);
	assert.deepEqual(
		(
			await db.pool.query(
				'SELECT (SELECT count(*) FROM ops.errors)::int AS e, (SELECT count(*) FROM raw.telegram_quarantine)::int AS q',
			)
		).rows[0],
		before,
	);
}, 60_000);

test('a body that is not JSON reaches WF10 through a Webhook v1 with "Binary File": 400 envelope from WF10, one ops.errors row, body kept', async () => {
	for (const bytes of [Buffer.from('{"update_id": 1, "message": '), Buffer.from([0x7b, 0xff, 0x7d])]) {
		const answer = await postUpdate(bytes, bot.secret, 'telegram-binary');
		assert.equal(answer.status, 400, JSON.stringify(answer.body));
		assert.deepEqual([answer.body.ok, answer.body.kind], [false, 'validation']);
		assert.doesNotMatch(JSON.stringify(answer.body), /stack|node_modules|\.js:/);
		const errors = await db.pool.query('SELECT node, status_code, details FROM ops.errors WHERE correlation_id = $1', [
			answer.body.correlation_id,
		]);
		assert.equal(errors.rows.length, 1);
		assert.deepEqual([errors.rows[0].node, errors.rows[0].status_code], ['Telegram Ingest', 400]);
		const rows = await quarantined(bytes);
		assert.deepEqual([rows.length, rows[0]?.reason, rows[0]?.status_code], [1, 'not_json', 400]);
		assert.ok(Buffer.from(rows[0].body).equals(bytes));
	}
	// and an update through that webhook is stored from its exact bytes like through the shipped one
	const big = JSON.stringify(textWithUrls()).replace(/"update_id":\d+/, '"update_id":9007199254740995');
	const stored = await postUpdate(Buffer.from(big), bot.secret, 'telegram-binary');
	assert.deepEqual([stored.status, stored.body.quarantined], [200, false], JSON.stringify(stored.body));
	assert.equal(
		(await db.pool.query('SELECT count(*)::int AS n FROM raw.telegram_updates WHERE update_id = 9007199254740995'))
			.rows[0].n,
		1,
	);
}, 60_000);

test('an update_id beyond 2^53 is stored exactly; a top-level __proto__ key survives', async () => {
	const big = JSON.stringify(textWithUrls()).replace(/"update_id":\d+/, '"update_id":9007199254740993');
	const answer = await postUpdate(Buffer.from(big));
	assert.equal(answer.status, 200, JSON.stringify(answer.body));
	assert.equal(answer.body.quarantined, false);
	const stored = await db.pool.query(
		"SELECT update_id::text, update->>'update_id' AS in_json, update = $2::jsonb AS same FROM raw.telegram_updates WHERE bot_id = $1 AND update_id = 9007199254740993",
		[bot.botId, big],
	);
	assert.deepEqual(stored.rows, [{ update_id: '9007199254740993', in_json: '9007199254740993', same: true }]);
	assert.equal(
		(
			await db.pool.query(
				'SELECT count(*)::int AS n FROM raw.telegram_updates WHERE bot_id = $1 AND update_id = 9007199254740992',
				[bot.botId],
			)
		).rows[0].n,
		0,
	);

	const id = newUpdateId();
	const proto = `{"update_id":${id},"__proto__":{"chat":{"id":5},"x":1}}`;
	const protoAnswer = await postUpdate(Buffer.from(proto));
	assert.equal(protoAnswer.status, 200, JSON.stringify(protoAnswer.body));
	const row = await db.pool.query(
		"SELECT update = $3::jsonb AS same, update ? '__proto__' AS has_key FROM raw.telegram_updates WHERE bot_id = $1 AND update_id = $2",
		[bot.botId, id, proto],
	);
	assert.deepEqual(row.rows, [{ same: true, has_key: true }]);
}, 60_000);

test('an unknown bot key answers exactly like a wrong secret (403 auth); no secret header value lands in an answer, ops.errors or quarantine row', async () => {
	const wrongSecret = 'Wrong-header-value-e2e-31415';
	const wrong = await postUpdate(textWithUrls(), wrongSecret);
	const unknown = await post('telegram?bot=no_such_bot_e2e', textWithUrls(), {
		'X-Telegram-Bot-Api-Secret-Token': bot.secret,
	});
	assert.deepEqual(
		[unknown.status, unknown.body.ok, unknown.body.kind],
		[wrong.status, wrong.body.ok, wrong.body.kind],
	);
	assert.equal(wrong.status, 403);
	assert.deepEqual(Object.keys(unknown.body).sort(), Object.keys(wrong.body).sort(), 'same body shape');
	// issue 25 §4: WF10 answers Telegram with the envelope's public part only, the same for both refusals
	for (const body of [wrong.body, unknown.body]) {
		const answer = PublicError.parse(body);
		assert.deepEqual([answer.status_code, answer.kind], [403, 'auth']);
		for (const key of ['details', '_internal', 'input', 'error', 'meta']) assert.ok(!(key in body), key);
		assert.doesNotMatch(JSON.stringify(body), /no_such_bot_e2e|headers|webhookUrl|update_id/);
		const rows = await db.pool.query('SELECT node, details FROM ops.errors WHERE correlation_id = $1', [
			answer.correlation_id,
		]);
		assert.equal(rows.rows[0]?.node, 'Telegram Ingest', 'the details are in the ops.errors row');
	}
	assert.equal(wrong.body.message, unknown.body.message, 'the same message: an unknown bot is not told apart');
	const poisoned = await postUpdate(Buffer.from(poison('"NUL \\u0000 secret scan"')));
	assert.equal(poisoned.status, 200, JSON.stringify(poisoned.body));
	const outputs = [
		wrong.body,
		unknown.body,
		poisoned.body,
		...(await db.pool.query('SELECT * FROM ops.errors')).rows,
		...(
			await db.pool.query(
				"SELECT id, details, encode(body, 'escape') AS body FROM raw.telegram_quarantine WHERE length(body) < 100000",
			)
		).rows,
	].map((output) => JSON.stringify(output));
	for (const secret of [bot.secret, wrongSecret]) {
		const found = outputs.filter((text) => text.includes(secret));
		assert.deepEqual(
			found,
			[],
			`no secret header value (${secret === bot.secret ? 'the webhook secret' : 'a wrong one'}) in any output`,
		);
	}
}, 60_000);
