import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Pool } from 'pg';
import { ingestUpdate, secretsMatch, type IngestInput } from '../../nodes/TelegramIngest/actions/ingest.operation';
import { SuccessEnvelope } from '../../nodes/shared/contracts/envelope';
import { ContractError } from '../../nodes/shared/errors';
import type { ItemState } from '../../nodes/shared/node/runItems';
import { ingestCounts, seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import {
	channelPost,
	editedMessage,
	myChatMember,
	photoWithCaption,
	textWithUrls,
	unknownType,
} from '../helpers/updates';

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

async function rejected(promise: Promise<unknown>): Promise<ContractError> {
	try {
		await promise;
	} catch (error) {
		assert.ok(error instanceof ContractError, String(error));
		return error;
	}
	assert.fail('expected a rejection');
}

test('every update type is stored once: raw row untouched, keys, job pointing at the raw row (the update is not copied)', async () => {
	for (const make of [textWithUrls, photoWithCaption, editedMessage, channelPost, myChatMember, unknownType]) {
		const update = make();
		const envelope = SuccessEnvelope.parse(await ingestUpdate(db.pool, input(update), {}));
		assert.equal(envelope.data.duplicate, false);
		const jobId = envelope.data.job_id as number;
		const { rows } = await db.pool.query(
			`SELECT r.id AS raw_id, r.update, r.tenant_id, k.update_type, k.chat_id, k.job_id, j.payload, j.job_type, j.status, j.dedup_key, j.correlation_id
			 FROM raw.telegram_updates r JOIN raw.telegram_update_keys k ON k.raw_update_id = r.id JOIN ops.jobs j ON j.id = k.job_id
			 WHERE r.bot_id = $1 AND r.update_id = $2`,
			[bot.botId, update.update_id],
		);
		assert.equal(rows.length, 1);
		assert.deepEqual(rows[0].update, update, 'raw JSON stored as received');
		assert.equal(Number(rows[0].job_id), jobId);
		assert.equal(
			rows[0].update_type,
			Object.keys(update).find((k) => k !== 'update_id'),
		);
		assert.equal(rows[0].payload.update, undefined, 'the job does not repeat the stored update');
		assert.equal(rows[0].payload.raw_update_id, Number(rows[0].raw_id));
		assert.equal(rows[0].payload.update_id, update.update_id);
		assert.equal(rows[0].payload.bot_id, bot.botId);
		assert.equal(rows[0].payload.tenant_id, bot.tenantId);
		assert.equal(rows[0].status, 'queued');
		assert.equal(rows[0].dedup_key, `tg:${bot.botId}:${update.update_id}`);
		assert.equal(rows[0].correlation_id, envelope.meta.correlation.correlation_id);
		assert.equal(envelope.meta.correlation.tenant_id, bot.tenantId);
		assert.equal(envelope.meta.correlation.job_id, jobId);
	}
});

test('a duplicate update creates nothing and returns the original job id', async () => {
	const update = textWithUrls();
	const first = await ingestUpdate(db.pool, input(update), {});
	const before = await ingestCounts(db.pool);
	const second = await ingestUpdate(db.pool, input(update), {});
	assert.equal(second.data.duplicate, true);
	assert.equal(second.data.job_id, first.data.job_id);
	assert.deepEqual(await ingestCounts(db.pool), before);
});

test('30 concurrent deliveries of one update: one row set, every answer names the same job', async () => {
	const update = photoWithCaption();
	const before = await ingestCounts(db.pool);
	const results = await Promise.all(Array.from({ length: 30 }, () => ingestUpdate(db.pool, input(update), {})));
	const jobIds = new Set(results.map((r) => r.data.job_id));
	assert.equal(jobIds.size, 1);
	assert.equal(results.filter((r) => r.data.duplicate === false).length, 1);
	const afterwards = await ingestCounts(db.pool);
	assert.deepEqual(
		[afterwards.raw - before.raw, afterwards.keys - before.keys, afterwards.jobs - before.jobs],
		[1, 1, 1],
	);
});

test('a wrong or missing secret is refused (403 / 401) before anything is written; ctx is kept', async () => {
	const before = await ingestCounts(db.pool);
	const state: ItemState = {};
	const wrong = await rejected(ingestUpdate(db.pool, input(textWithUrls(), { secretToken: 'nope' }), state));
	assert.deepEqual(
		[wrong.statusCode, wrong.kind, wrong.retryable, wrong.where.table],
		[403, 'auth', false, 'core.bots'],
	);
	assert.equal(state.ctx?.tenant_id, bot.tenantId);
	assert.equal(state.ctx?.workflow, 'WF10');
	assert.match(String(state.ctx?.correlation_id), /^[0-9a-f-]{36}$/);
	const missing = await rejected(ingestUpdate(db.pool, input(textWithUrls(), { secretToken: undefined }), {}));
	assert.equal(missing.statusCode, 401);
	assert.deepEqual(await ingestCounts(db.pool), before);
});

test('malformed bodies get 400 naming the field; unknown bots 403; nothing is written', async () => {
	const before = await ingestCounts(db.pool);
	const cases: Array<[Partial<IngestInput>, number, RegExp]> = [
		[{ update: '{"update_id": 1, "message": ' }, 400, /not JSON/],
		[{ update: { update_id: 'x', message: {} } }, 400, /update_id/],
		[{ update: { update_id: 5 } }, 400, /exactly one update field/],
		[{ update: { update_id: 5, message: { message_id: 1 } } }, 400, /message\.chat/],
		[{ botKey: 'no_such_bot' }, 403, /forbidden/],
		[{ botKey: '../etc' }, 400, /Bot Key/],
	];
	for (const [overrides, status, pattern] of cases) {
		const error = await rejected(ingestUpdate(db.pool, input(textWithUrls(), overrides), {}));
		assert.equal(error.statusCode, status, JSON.stringify(overrides));
		assert.match(error.message, pattern);
	}
	assert.deepEqual(await ingestCounts(db.pool), before);
});

test('a disabled bot is refused like an unknown one', async () => {
	const other = await seedBot(db.pool, 'disabled_bot', 'x');
	await db.pool.query('UPDATE core.bots SET is_enabled = false WHERE bot_id = $1', [other.botId]);
	const error = await rejected(
		ingestUpdate(db.pool, input(textWithUrls(), { botKey: 'disabled_bot', secretToken: 'x' }), {}),
	);
	assert.equal(error.statusCode, 403);
});

test('an unknown bot key cannot be told from a wrong secret (same status, kind, message); no header → 401 for both', async () => {
	const unknown = await rejected(
		ingestUpdate(db.pool, input(textWithUrls(), { botKey: 'no_such_bot', secretToken: 'guess' }), {}),
	);
	const wrong = await rejected(ingestUpdate(db.pool, input(textWithUrls(), { secretToken: 'guess' }), {}));
	assert.deepEqual([unknown.statusCode, unknown.kind, unknown.message], [wrong.statusCode, wrong.kind, wrong.message]);
	assert.equal(unknown.statusCode, 403);
	assert.deepEqual(
		[unknown.details.reason, wrong.details.reason],
		['unknown_bot', 'wrong_secret'],
		'the operator still sees which',
	);
	const noHeaderUnknown = await rejected(
		ingestUpdate(db.pool, input(textWithUrls(), { botKey: 'no_such_bot', secretToken: undefined }), {}),
	);
	const noHeaderKnown = await rejected(ingestUpdate(db.pool, input(textWithUrls(), { secretToken: undefined }), {}));
	assert.deepEqual([noHeaderUnknown.statusCode, noHeaderUnknown.message], [401, noHeaderKnown.message]);
});

test('an incoming X-Correlation-Id is kept; a non-UUID one is replaced', async () => {
	const id = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
	const kept = await ingestUpdate(db.pool, input(textWithUrls(), { correlationId: id, traceId: '00-abc-def-01' }), {});
	assert.equal(kept.meta.correlation.correlation_id, id);
	assert.equal(kept.meta.correlation.trace_id, '00-abc-def-01');
	const replaced = await ingestUpdate(db.pool, input(textWithUrls(), { correlationId: 'nope' }), {});
	assert.notEqual(replaced.meta.correlation.correlation_id, 'nope');
});

test('database unreachable: 503 db retryable, with ctx built before the failure', async () => {
	const down = new Pool({
		host: '127.0.0.1',
		port: 1,
		user: 'postgres',
		database: 'postgres',
		connectionTimeoutMillis: 1000,
	});
	down.on('error', () => undefined);
	try {
		const state: ItemState = {};
		const error = await rejected(ingestUpdate(down, input(textWithUrls()), state));
		assert.deepEqual(
			[error.statusCode, error.kind, error.retryable, error.where.table],
			[503, 'db', true, 'core.bots'],
		);
		assert.ok(state.ctx?.correlation_id);
	} finally {
		await down.end();
	}
});

test('a failing insert rolls back all three tables', async () => {
	// A NUL is no longer a failure (it is quarantined, see telegramIngest.quarantine.test.ts): inject one in ops.jobs.
	await db.pool.query(
		`CREATE FUNCTION fail_jobs() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = 'P0001'; END $$`,
	);
	await db.pool.query('CREATE TRIGGER fail_jobs BEFORE INSERT ON ops.jobs FOR EACH ROW EXECUTE FUNCTION fail_jobs()');
	try {
		const before = await ingestCounts(db.pool);
		const error = await rejected(ingestUpdate(db.pool, input(textWithUrls()), {}));
		assert.deepEqual([error.statusCode, error.kind, error.where.table], [500, 'db', 'raw.telegram_updates']);
		assert.deepEqual(await ingestCounts(db.pool), before);
	} finally {
		await db.pool.query('DROP TRIGGER fail_jobs ON ops.jobs');
		await db.pool.query('DROP FUNCTION fail_jobs()');
	}
});

test('a Job Type no worker takes for an update (unregistered, or another payload) → 500 naming jobType, nothing written', async () => {
	for (const jobType of ['telegram_updat', 'url_fetch', '', '__proto__']) {
		const before = await ingestCounts(db.pool);
		const error = await rejected(ingestUpdate(db.pool, input(textWithUrls(), { jobType }), {}));
		assert.deepEqual(
			[error.statusCode, error.details.field],
			[500, 'jobType'],
			`${JSON.stringify(jobType)}: ${error.message}`,
		);
		assert.match(error.message, /telegram_update/, 'the message names the job types it accepts');
		assert.deepEqual(await ingestCounts(db.pool), before);
	}
});

test('secretsMatch compares exactly', () => {
	assert.equal(secretsMatch('abc', 'abc'), true);
	assert.equal(secretsMatch('abc', 'abd'), false);
	assert.equal(secretsMatch('abc', 'abcd'), false);
	assert.equal(secretsMatch('', 'a'), false);
});
