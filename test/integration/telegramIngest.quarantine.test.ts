/**
 * Issue 10 item 3 (seed 003 WF10): a permanently bad update is kept exactly as received in
 * raw.telegram_quarantine, answered 2xx (quarantined) with one ops.errors row, never 5xx while the
 * database is up; item 6: a `__proto__` key survives. Real PostgreSQL, the built operation called directly.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Pool } from 'pg';
import { ingestUpdate, type IngestInput } from '../../nodes/TelegramIngest/actions/ingest.operation';
import { SuccessEnvelope } from '../../nodes/shared/contracts/envelope';
import { ContractError } from '../../nodes/shared/errors';
import { ingestCounts, seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { newUpdateId, textWithUrls } from '../helpers/updates';

let db: TestDatabase;
let bot: Awaited<ReturnType<typeof seedBot>>;
beforeAll(async () => {
	db = await setupDatabase();
	bot = await seedBot(db.pool);
});
afterAll(async () => {
	await db?.drop();
});

function input(update: unknown, overrides: Partial<IngestInput> = {}): IngestInput {
	return {
		botKey: bot.botKey,
		secretToken: bot.secret,
		update,
		jobType: 'telegram_update',
		maxAttempts: 5,
		workflow: 'WF10',
		nodeName: 'Telegram Ingest',
		...overrides,
	};
}

/** The same update as raw webhook bytes. */
function raw(text: string, overrides: Partial<IngestInput> = {}): IngestInput {
	return input({}, { rawBody: Buffer.from(text, 'utf8'), ...overrides });
}

async function outcome(promise: Promise<unknown>): Promise<{ status: number; body: any }> {
	try {
		const envelope = SuccessEnvelope.parse(await promise);
		return { status: envelope.status_code, body: envelope };
	} catch (error) {
		assert.ok(error instanceof ContractError, String(error));
		return { status: error.statusCode, body: error };
	}
}

async function quarantineRows(sha: Buffer) {
	const { rows } = await db.pool.query(
		'SELECT id, body, body_source, reason, status_code, update_id, details, correlation_id FROM raw.telegram_quarantine WHERE bot_id = $1 AND body_sha256 = $2',
		[bot.botId, sha],
	);
	return rows;
}

async function errorRows(correlationId: string) {
	return (
		await db.pool.query(
			'SELECT node, workflow, kind, status_code, retryable, message, details FROM ops.errors WHERE correlation_id = $1',
			[correlationId],
		)
	).rows;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

/** Asserts a 200 quarantine with the reason: one quarantine row holding exactly `bytes`, one ops.errors row, nothing stored. */
async function assertQuarantined(call: IngestInput, bytes: Buffer, reason: string) {
	const before = await ingestCounts(db.pool);
	const answer = await outcome(ingestUpdate(db.pool, call, {}));
	assert.equal(answer.status, 200, `${reason}: ${answer.body.message ?? ''}`);
	const data = answer.body.data;
	assert.deepEqual([data.quarantined, data.duplicate, data.reason, data.job_id], [true, false, reason, null]);
	assert.equal('method' in data, false);
	const rows = await quarantineRows(sha256(bytes));
	assert.equal(rows.length, 1);
	assert.ok(Buffer.from(rows[0].body).equals(bytes), 'quarantined bytes equal the body');
	assert.deepEqual([rows[0].reason, rows[0].status_code, Number(rows[0].id)], [reason, 200, data.quarantine_id]);
	const errors = await errorRows(answer.body.meta.correlation.correlation_id);
	assert.equal(errors.length, 1, 'exactly one ops.errors row');
	assert.deepEqual(
		[errors[0].node, errors[0].workflow, errors[0].kind, errors[0].status_code, errors[0].retryable],
		['Telegram Ingest', 'WF10', 'validation', 422, false],
	);
	assert.equal(errors[0].details.quarantine.answered, 200);
	assert.equal(Number(errors[0].details.quarantine_id), data.quarantine_id);
	assert.equal(errors[0].details.error_context.table, 'raw.telegram_quarantine');
	const afterwards = await ingestCounts(db.pool);
	assert.deepEqual(
		[afterwards.raw, afterwards.keys, afterwards.jobs, afterwards.errors],
		[before.raw, before.keys, before.jobs, before.errors + 1],
	);
	return answer.body;
}

function withText(text: string, updateId = newUpdateId()) {
	const update = textWithUrls(updateId);
	update.message.text = text;
	return update;
}

test('a NUL character in a text: quarantined (200), kept exactly, one ops.errors row — parsed body and raw bytes', async () => {
	const update = withText('bad \u0000 byte');
	const json = JSON.stringify(update);
	await assertQuarantined(input(update), Buffer.from(json), 'nul_character');
	const rawText = JSON.stringify(withText('raw \u0000 byte'));
	await assertQuarantined(raw(rawText), Buffer.from(rawText), 'nul_character');
});

test('a lone surrogate: quarantined (200), kept exactly', async () => {
	const rawText = JSON.stringify(withText('x')).replace('"text":"x"', '"text":"\\ud800 lone"');
	await assertQuarantined(raw(rawText), Buffer.from(rawText), 'lone_surrogate');
	const update = withText('lone \udc00 low');
	await assertQuarantined(input(update), Buffer.from(JSON.stringify(update)), 'lone_surrogate');
});

test('update_id = 2^63 and chat.id / from.id / message_id = 1e300: quarantined (200), never 5xx', async () => {
	const base = () => JSON.stringify(textWithUrls());
	const cases: Array<[string, string]> = [
		[base().replace(/"update_id":\d+/, '"update_id":9223372036854775808'), 'update_id'],
		[base().replace(/"chat":\{"id":-?\d+/, '"chat":{"id":1e300'), 'chat'],
		[base().replace(/"from":\{"id":\d+/, '"from":{"id":-9223372036854775809'), 'from'],
		[base().replace(/"message_id":\d+/, '"message_id":1e300'), 'message_id'],
	];
	for (const [text, what] of cases) {
		assert.match(text, /:(9223372036854775808|1e300|-9223372036854775809)[,}]/, what);
		const answer = await assertQuarantined(raw(text), Buffer.from(text), 'id_not_int8');
		assert.equal(answer.data.update_id === null, what === 'update_id', what);
	}
	// the parsed body n8n hands over (no raw body): the same numbers, already doubles
	const parsed = { ...textWithUrls(), update_id: 2 ** 63 };
	await assertQuarantined(input(parsed), Buffer.from(JSON.stringify(parsed)), 'id_not_int8');
	const chat = textWithUrls();
	chat.message.chat = { ...chat.message.chat, id: 1e300 };
	await assertQuarantined(input(chat), Buffer.from(JSON.stringify(chat)), 'id_not_int8');
});

test('10,000 nesting levels: quarantined (200), kept exactly (raw bytes and parsed body)', async () => {
	const deep = `${'['.repeat(10_000)}1${']'.repeat(10_000)}`;
	const rawText = JSON.stringify(textWithUrls()).replace('"text":', `"deep":${deep},"text":`);
	await assertQuarantined(raw(rawText), Buffer.from(rawText), 'too_deep');
	// the parsed body (n8n without the raw body): re-serialised by the node without a stack overflow
	const compact = JSON.stringify(textWithUrls()).replace('"text":', `"deep":${deep},"text":`);
	await assertQuarantined(input(JSON.parse(compact)), Buffer.from(compact), 'too_deep');
});

test('an id beyond 2^53 from the raw body is stored exactly (bigint columns and jsonb)', async () => {
	const rawText = JSON.stringify(textWithUrls())
		.replace(/"update_id":\d+/, '"update_id":9007199254740993')
		.replace(/"chat":\{"id":-?\d+/, '"chat":{"id":-9223372036854775808');
	const answer = await outcome(ingestUpdate(db.pool, raw(rawText), {}));
	assert.equal(answer.status, 200, answer.body.message);
	assert.equal(answer.body.data.update_id, '9007199254740993');
	const { rows } = await db.pool.query(
		`SELECT r.update_id::text, (r.update->'message'->'chat'->>'id') AS chat_json, k.chat_id::text, r.update = $2::jsonb AS same
		 FROM raw.telegram_updates r JOIN raw.telegram_update_keys k ON k.raw_update_id = r.id WHERE r.bot_id = $1 AND r.update_id = 9007199254740993`,
		[bot.botId, rawText],
	);
	assert.deepEqual(rows, [
		{ update_id: '9007199254740993', chat_json: '-9223372036854775808', chat_id: '-9223372036854775808', same: true },
	]);
	// the parsed body cannot be exact beyond 2^53: quarantined, not rounded into another update's key
	const parsed = { ...textWithUrls(), update_id: 2 ** 53 + 2 };
	await assertQuarantined(input(parsed), Buffer.from(JSON.stringify(parsed)), 'id_not_int8');
});

test('__proto__: a top-level key survives into raw.telegram_updates; beside another update field it is kept in quarantine (400)', async () => {
	const id = newUpdateId();
	const text = `{"update_id":${id},"__proto__":{"polluted":true,"chat":{"id":5}}}`;
	for (const call of [input(JSON.parse(text)), input(text)]) {
		const answer = await outcome(ingestUpdate(db.pool, call, {}));
		assert.equal(answer.status, 200, answer.body.message);
		assert.equal(answer.body.data.update_type, '__proto__');
	}
	const stored = await db.pool.query(
		"SELECT update, update = $2::jsonb AS same, update ? '__proto__' AS has_key FROM raw.telegram_updates WHERE bot_id = $1 AND update_id = $3",
		[bot.botId, text, id],
	);
	assert.deepEqual([stored.rows[0].same, stored.rows[0].has_key], [true, true]);
	assert.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype pollution');

	const nested = JSON.stringify(textWithUrls()).replace('"text":', '"__proto__":{"x":1},"text":');
	const nestedAnswer = await outcome(ingestUpdate(db.pool, input(JSON.parse(nested)), {}));
	assert.equal(nestedAnswer.status, 200);
	const nestedRow = await db.pool.query('SELECT update = $2::jsonb AS same FROM raw.telegram_updates WHERE id = $1', [
		nestedAnswer.body.data.raw_update_id,
		nested,
	]);
	assert.equal(nestedRow.rows[0].same, true, 'a nested __proto__ is stored too');

	const both = JSON.stringify(textWithUrls()).replace(/^\{/, '{"__proto__":{"a":1},');
	const rejected = await outcome(ingestUpdate(db.pool, input(JSON.parse(both)), {}));
	assert.equal(rejected.status, 400);
	assert.match(rejected.body.message, /found 2 \(__proto__, message\)/);
	const rows = await quarantineRows(sha256(Buffer.from(both)));
	assert.deepEqual([rows.length, rows[0]?.reason, rows[0]?.status_code], [1, 'invalid_update', 400]);
});

test('a duplicate of a quarantined update (same bytes, or same update_id) is recognised: 200 duplicate, no second row', async () => {
	const id = newUpdateId();
	const first = JSON.stringify(withText('nul \u0000 one', id));
	const answer = await assertQuarantined(raw(first), Buffer.from(first), 'nul_character');
	const before = await ingestCounts(db.pool);
	const quarantineBefore = (await db.pool.query('SELECT count(*)::int AS n FROM raw.telegram_quarantine')).rows[0].n;
	const again = await outcome(ingestUpdate(db.pool, raw(first), {}));
	const sameId = await outcome(ingestUpdate(db.pool, raw(JSON.stringify(withText('nul \u0000 two', id))), {}));
	const parsedAgain = await outcome(ingestUpdate(db.pool, input(JSON.parse(first)), {}));
	const clean = await outcome(ingestUpdate(db.pool, input(textWithUrls(id)), {})); // a storable body with that update_id
	for (const dup of [again, sameId, parsedAgain, clean]) {
		assert.equal(dup.status, 200);
		assert.deepEqual(
			[dup.body.data.duplicate, dup.body.data.quarantined, dup.body.data.quarantine_id, dup.body.data.job_id],
			[true, true, answer.data.quarantine_id, null],
		);
	}
	assert.deepEqual(await ingestCounts(db.pool), before);
	assert.equal(
		(await db.pool.query('SELECT count(*)::int AS n FROM raw.telegram_quarantine')).rows[0].n,
		quarantineBefore,
	);

	// and the other way round: a poison body whose update_id is already stored is a duplicate of that job
	const stored = await outcome(ingestUpdate(db.pool, input(textWithUrls()), {}));
	const poison = JSON.stringify(withText('late \u0000', stored.body.data.update_id));
	const late = await outcome(ingestUpdate(db.pool, raw(poison), {}));
	assert.deepEqual(
		[late.status, late.body.data.duplicate, late.body.data.job_id, late.body.data.quarantined],
		[200, true, stored.body.data.job_id, false],
	);
});

test('20 concurrent deliveries of one poison update: one quarantine row, one ops.errors row, every answer 200 naming it', async () => {
	const text = JSON.stringify(withText('concurrent \u0000'));
	const answers = await Promise.all(Array.from({ length: 20 }, () => outcome(ingestUpdate(db.pool, raw(text), {}))));
	assert.deepEqual([...new Set(answers.map((a) => a.status))], [200]);
	assert.equal(new Set(answers.map((a) => a.body.data.quarantine_id)).size, 1);
	assert.equal(answers.filter((a) => !a.body.data.duplicate).length, 1);
	const rows = await quarantineRows(sha256(Buffer.from(text)));
	assert.equal(rows.length, 1);
	const errors = await db.pool.query("SELECT count(*)::int AS n FROM ops.errors WHERE details->>'quarantine_id' = $1", [
		String(rows[0].id),
	]);
	assert.equal(errors.rows[0].n, 1);
});

test('not a Telegram update (not UTF-8, not JSON, not an object, not an Update): 400 naming the field, body kept, no row written by the node', async () => {
	const cases: Array<[Buffer, string, RegExp]> = [
		[Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), 'not_json', /not UTF-8/],
		[Buffer.from('{"update_id": 1, "message": '), 'not_json', /not JSON/],
		[Buffer.from(''), 'not_json', /not JSON/],
		[Buffer.from('[1,2,3]'), 'not_object', /not an object \(array\)/],
		[Buffer.from(`{"update_id":${newUpdateId()},"message":{"message_id":1}}`), 'invalid_update', /message\.chat/],
	];
	for (const [bytes, reason, pattern] of cases) {
		const before = await ingestCounts(db.pool);
		const answer = await outcome(ingestUpdate(db.pool, input({}, { rawBody: bytes }), {}));
		assert.equal(answer.status, 400, reason);
		assert.match(answer.body.message, pattern);
		assert.deepEqual(
			[answer.body.kind, answer.body.details.reason, answer.body.details.field],
			['validation', reason, 'body'],
		);
		const rows = await quarantineRows(sha256(bytes));
		assert.equal(rows.length, 1, reason);
		assert.ok(Buffer.from(rows[0].body).equals(bytes));
		assert.deepEqual([rows[0].status_code, Number(rows[0].id)], [400, answer.body.details.quarantine_id]);
		assert.deepEqual(await ingestCounts(db.pool), before, 'the ops.errors row comes from WF99 (error output)');
		const again = await outcome(ingestUpdate(db.pool, input({}, { rawBody: bytes }), {}));
		assert.deepEqual(
			[again.status, again.body.details.duplicate, again.body.details.quarantine_id],
			[400, true, answer.body.details.quarantine_id],
		);
	}
});

test('safety net: a value the database refuses as data (22xxx) is quarantined, never a 5xx', async () => {
	const text = JSON.stringify(textWithUrls()).replace('"text":', '"huge":1e1000000,"text":');
	const answer = await assertQuarantined(raw(text), Buffer.from(text), 'rejected_by_database');
	const row = await db.pool.query('SELECT details FROM raw.telegram_quarantine WHERE id = $1', [
		answer.data.quarantine_id,
	]);
	assert.equal(row.rows[0].details.sqlstate, '22003');
});

test('the quarantine row and its ops.errors row are written together or not at all', async () => {
	await db.pool.query(
		`CREATE FUNCTION pg_temp_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = 'P0001'; END $$`,
	);
	await db.pool.query(
		'CREATE TRIGGER fail_errors BEFORE INSERT ON ops.errors FOR EACH ROW EXECUTE FUNCTION pg_temp_fail()',
	);
	const text = JSON.stringify(withText('atomic \u0000'));
	try {
		const answer = await outcome(ingestUpdate(db.pool, raw(text), {}));
		assert.deepEqual(
			[answer.status, answer.body.kind, answer.body.where.table],
			[500, 'db', 'raw.telegram_quarantine'],
		);
		assert.equal(
			(await quarantineRows(sha256(Buffer.from(text)))).length,
			0,
			'no quarantine row without its ops.errors row',
		);
	} finally {
		await db.pool.query('DROP TRIGGER fail_errors ON ops.errors');
		await db.pool.query('DROP FUNCTION pg_temp_fail()');
	}
	await assertQuarantined(raw(text), Buffer.from(text), 'nul_character');
});

test('database down: a poison update still gets 503 retryable (nothing could be stored)', async () => {
	const down = new Pool({
		host: '127.0.0.1',
		port: 1,
		user: 'postgres',
		database: 'postgres',
		connectionTimeoutMillis: 1000,
	});
	down.on('error', () => undefined);
	try {
		for (const call of [raw(JSON.stringify(withText('nul \u0000'))), raw('not json')]) {
			const answer = await outcome(ingestUpdate(down, call, {}));
			assert.deepEqual([answer.status, answer.body.kind, answer.body.retryable], [503, 'db', true]);
		}
	} finally {
		await down.end();
	}
});
