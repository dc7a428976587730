/**
 * Issue 10 item 3, review fixes (real PostgreSQL, the operation called directly):
 *  A. a body that is not an update (400) is a duplicate only of the same bytes, never by update_id;
 *  B. a valid body and a poison body with the same update_id, concurrently: exactly one is kept;
 *  C. a re-delivery after the raw row was pruned (the job remains) is a duplicate of that job, not a 500;
 *  size: a body above MAX_BODY_BYTES is quarantined `too_large` before any parse;
 *  secret: the webhook secret is remembered for redaction and appears in no answer, row or error.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { ingestUpdate, type IngestInput } from '../../nodes/TelegramIngest/actions/ingest.operation';
import { ContractError } from '../../nodes/shared/errors';
import { rememberedSecrets } from '../../nodes/shared/redact';
import { ingestCounts, seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { newUpdateId, textWithUrls } from '../helpers/updates';

let db: TestDatabase;
let bot: Awaited<ReturnType<typeof seedBot>>;
const SECRET = 'Webhook-secret-for-review-test-42';
beforeAll(async () => {
	db = await setupDatabase();
	bot = await seedBot(db.pool, 'review_bot', SECRET);
});
afterAll(async () => {
	await db?.drop();
});

async function counts() {
	const quarantine = (await db.pool.query('SELECT count(*)::int AS n FROM raw.telegram_quarantine')).rows[0]
		.n as number;
	return { ...(await ingestCounts(db.pool)), quarantine };
}

function raw(text: string | Buffer, overrides: Partial<IngestInput> = {}): IngestInput {
	const rawBody = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
	return {
		botKey: bot.botKey,
		secretToken: bot.secret,
		rawBody,
		update: undefined,
		jobType: 'telegram_update',
		maxAttempts: 5,
		workflow: 'WF10',
		nodeName: 'Telegram Ingest',
		...overrides,
	};
}

async function answer(
	call: IngestInput,
): Promise<{ status: number; data: any; details: any; error?: ContractError; envelope?: unknown }> {
	try {
		const envelope = await ingestUpdate(db.pool, call, {});
		return { status: envelope.status_code, data: envelope.data, details: {}, envelope };
	} catch (error) {
		assert.ok(error instanceof ContractError, String(error));
		return { status: error.statusCode, data: {}, details: error.details, error };
	}
}

function updateJson(updateId: number, text = 'hello'): string {
	const update = textWithUrls(updateId);
	update.message.text = text;
	return JSON.stringify(update);
}

test('A: a non-update body reusing a stored update_id is kept (400, quarantined), a duplicate only of the same bytes', async () => {
	const updateId = newUpdateId();
	const stored = await answer(raw(updateJson(updateId)));
	assert.equal(stored.status, 200);
	assert.equal(stored.data.duplicate, false);
	for (const text of [`{"update_id":${updateId}}`, `{"update_id":${updateId},"other":1}`]) {
		const before = await counts();
		const first = await answer(raw(text));
		assert.equal(first.status, 400, text);
		assert.equal(first.details.duplicate, false, `${text} is kept, not a duplicate of update ${updateId}`);
		assert.equal(typeof first.details.quarantine_id, 'number');
		const afterwards = await counts();
		assert.equal(afterwards.quarantine, before.quarantine + 1);
		const again = await answer(raw(text));
		assert.deepEqual(
			[again.status, again.details.duplicate, again.details.quarantine_id],
			[400, true, first.details.quarantine_id],
		);
	}
	// a valid update whose update_id a rejected body used is still stored normally
	const otherId = newUpdateId();
	assert.equal((await answer(raw(`{"update_id":${otherId}}`))).status, 400);
	const valid = await answer(raw(updateJson(otherId)));
	assert.deepEqual([valid.status, valid.data.duplicate, valid.data.quarantined], [200, false, false]);
});

test('B: a valid body and a NUL body with the same update_id, concurrently: exactly one is kept (50 trials)', async () => {
	for (let trial = 0; trial < 50; trial++) {
		const updateId = newUpdateId();
		const answers = await Promise.all([
			answer(raw(updateJson(updateId))),
			answer(raw(updateJson(updateId, 'nul \u0000 here'))),
		]);
		const { rows } = await db.pool.query(
			`SELECT (SELECT count(*) FROM raw.telegram_update_keys WHERE bot_id = $1 AND update_id = $2)::int AS stored,
			        (SELECT count(*) FROM raw.telegram_quarantine WHERE bot_id = $1 AND update_id = $2)::int AS quarantined,
			        (SELECT count(*) FROM ops.jobs WHERE dedup_key = 'tg:' || $1 || ':' || $2)::int AS jobs,
			        (SELECT count(*) FROM ops.errors WHERE (details->>'quarantine_id')::bigint IN
			           (SELECT id FROM raw.telegram_quarantine WHERE bot_id = $1 AND update_id = $2))::int AS errors`,
			[bot.botId, updateId],
		);
		const c = rows[0];
		assert.equal(c.stored + c.quarantined, 1, `trial ${trial}: exactly one kept ${JSON.stringify(c)}`);
		assert.equal(c.jobs, c.stored, `trial ${trial}: a job only with the stored update`);
		assert.equal(c.errors, c.quarantined, `trial ${trial}: an ops.errors row only with the quarantine row`);
		assert.deepEqual(
			answers.map((a) => a.status),
			[200, 200],
		);
		assert.equal(answers.filter((a) => a.data.duplicate).length, 1, `trial ${trial}: the other is answered duplicate`);
	}
}, 120_000);

test('C: a re-delivery after the raw row was pruned (job kept) is a duplicate of that job, not a 500', async () => {
	const updateId = newUpdateId();
	const text = updateJson(updateId);
	const first = await answer(raw(text));
	assert.equal(first.status, 200);
	await db.pool.query('DELETE FROM raw.telegram_updates WHERE bot_id = $1 AND update_id = $2', [bot.botId, updateId]);
	const before = await counts();
	const again = await answer(raw(text));
	assert.equal(again.status, 200, again.error?.message);
	assert.deepEqual([again.data.duplicate, again.data.job_id, again.data.quarantined], [true, first.data.job_id, false]);
	assert.deepEqual(await counts(), before, 'nothing written');
	// a poison body with that update_id is a duplicate of the same job too
	const poison = await answer(raw(updateJson(updateId, 'nul \u0000')));
	assert.deepEqual([poison.status, poison.data.duplicate, poison.data.job_id], [200, true, first.data.job_id]);
	assert.deepEqual(await counts(), before, 'nothing written');
});

test('size: an 8 MiB body is quarantined too_large (200) without being parsed — even when it is not JSON', async () => {
	const big = 8 * 1024 * 1024;
	// not JSON at all: parsed first it would be a 400 not_json
	const notJson = Buffer.alloc(big, 'x');
	notJson.write(`{"update_id":${newUpdateId()},"message":`, 0);
	// valid JSON, not an update (no update field): checked first it would be a 400 invalid_update
	const filler = `{"update_id":${newUpdateId()},"junk":"${'y'.repeat(big)}"}`;
	for (const bytes of [notJson, Buffer.from(filler)]) {
		const before = await counts();
		const first = await answer(raw(bytes));
		assert.equal(first.status, 200, first.error?.message);
		assert.deepEqual(
			[first.data.quarantined, first.data.duplicate, first.data.reason, first.data.update_id],
			[true, false, 'too_large', null],
		);
		const afterwards = await counts();
		assert.deepEqual([afterwards.quarantine, afterwards.errors], [before.quarantine + 1, before.errors + 1]);
		const { rows } = await db.pool.query('SELECT length(body) AS n FROM raw.telegram_quarantine WHERE id = $1', [
			first.data.quarantine_id,
		]);
		assert.equal(rows[0].n, bytes.length, 'kept whole');
		const again = await answer(raw(bytes));
		assert.deepEqual(
			[again.status, again.data.duplicate, again.data.quarantine_id],
			[200, true, first.data.quarantine_id],
		);
	}
});

test('secret: remembered for redaction; absent from the answers, ops.errors and quarantine rows of a wrong-secret and a poison delivery', async () => {
	const wrong = 'Wrong-secret-value-987654';
	const rejected = await answer(raw(updateJson(newUpdateId()), { secretToken: wrong }));
	assert.equal(rejected.status, 403);
	assert.equal(
		rememberedSecrets().string(`x ${SECRET} y`).includes(SECRET),
		false,
		'the webhook secret is remembered for redaction',
	);
	const poison = await answer(raw(updateJson(newUpdateId(), 'nul \u0000')));
	const notUpdate = await answer(raw('{"update_id":1,"nothing":true}'));
	assert.deepEqual([poison.status, notUpdate.status], [200, 400]);
	const scanned = JSON.stringify([
		rejected.error,
		rejected.details,
		rejected.error?.message,
		poison.envelope,
		notUpdate.error,
		notUpdate.details,
		notUpdate.error?.message,
		(await db.pool.query('SELECT * FROM ops.errors')).rows,
		(
			await db.pool.query(
				"SELECT id, details, convert_from(body, 'UTF8') AS body FROM raw.telegram_quarantine WHERE length(body) < 100000",
			)
		).rows,
	]);
	for (const secret of [SECRET, wrong])
		assert.equal(
			scanned.includes(secret),
			false,
			`no ${secret === SECRET ? 'webhook secret' : 'header value'} in any output`,
		);
});
