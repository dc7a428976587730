/**
 * ctx.message_id through the real ingestion (issue 16), against real PostgreSQL: for a Telegram update
 * whose message_id is any int8 — drawn around 2^31 (the Bot API's range), 2^53 and the int8 limits — and
 * delivered as the raw webhook bytes, Telegram Ingest stores it exactly (raw.telegram_update_keys, migration
 * 015) and the envelope's `data.ctx.message_id` is the `CtxId` of nodes/shared/contracts/ctx.ts: a number
 * when it is a safe integer, else the exact decimal string, which the `Ctx` schema accepts.
 * Runs: PROPERTY_RUNS / 50 (200 by default, at least 50: a database round trip each).
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import fc from 'fast-check';
import { Ctx } from '../../nodes/shared/contracts/ctx';
import { INT8_MAX, INT8_MIN } from '../../nodes/shared/contracts/ids';
import { ingestUpdate, type IngestInput } from '../../nodes/TelegramIngest/actions/ingest.operation';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { PROPERTY_RUNS, propertyParams } from '../helpers/property';
import { newUpdateId } from '../helpers/updates';

let db: TestDatabase;
let bot: Awaited<ReturnType<typeof seedBot>>;
beforeAll(async () => {
	db = await setupDatabase();
	bot = await seedBot(db.pool);
});
afterAll(async () => {
	await db?.drop();
});

/** Telegram Ingest's parameters as the shipped WF10 sets them (the bot and the body come per call). */
const WF10 = {
	update: undefined,
	jobType: 'telegram_update',
	maxAttempts: 5,
	workflow: 'WF10',
	nodeName: 'Telegram Ingest',
};

/** int8 message ids near ±2^31, ±2^53 and the int8 limits, or anywhere in int8. */
function messageId(): fc.Arbitrary<bigint> {
	const edge = fc.constantFrom(0n, 2n ** 31n, -(2n ** 31n), 2n ** 53n, -(2n ** 53n), INT8_MAX, INT8_MIN);
	return fc
		.oneof(
			{ weight: 3, arbitrary: fc.tuple(edge, fc.bigInt({ min: -40n, max: 40n })).map(([e, d]) => e + d) },
			{ weight: 1, arbitrary: fc.bigInt({ min: INT8_MIN, max: INT8_MAX }) },
		)
		.filter((n) => n >= INT8_MIN && n <= INT8_MAX);
}

test('property: an int8 message_id is stored exactly and reaches ctx as the Ctx schema says (number iff safe, else its text)', async () => {
	let unsafe = 0;
	await fc.assert(
		fc.asyncProperty(messageId(), async (n) => {
			const updateId = newUpdateId();
			const text = `{"update_id":${updateId},"message":{"message_id":${n},"chat":{"id":-1001234567890,"type":"supergroup"},"date":1700000000,"text":"hi"}}`;
			const call: IngestInput = { ...WF10, botKey: bot.botKey, secretToken: bot.secret, rawBody: Buffer.from(text) };
			const state: { ctx?: Record<string, unknown> } = {};
			const envelope = await ingestUpdate(db.pool, call, state);
			const data = envelope.data as { quarantined: boolean; duplicate: boolean; ctx: Record<string, unknown> };
			assert.equal(data.quarantined, false, text);
			assert.equal(data.duplicate, false, text);
			const value = data.ctx.message_id;
			assert.equal(typeof value, Number.isSafeInteger(Number(n)) ? 'number' : 'string', `${n} → ${typeof value}`);
			assert.equal(BigInt(value as number | string), n, 'exact in ctx');
			if (typeof value === 'string') {
				assert.equal(value, n.toString(), 'the canonical decimal text');
				unsafe++;
			}
			const parsed = Ctx.safeParse(data.ctx);
			assert.ok(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues));
			assert.equal(state.ctx?.message_id, value, 'the item state (error output) carries the same ctx');
			const { rows } = await db.pool.query(
				'SELECT message_id::text AS message_id FROM raw.telegram_update_keys WHERE bot_id = $1 AND update_id = $2',
				[bot.botId, updateId],
			);
			assert.deepEqual(rows, [{ message_id: n.toString() }], 'stored exactly');
		}),
		propertyParams('telegramIngest ctx.message_id', { numRuns: Math.max(50, Math.round(PROPERTY_RUNS / 50)) }),
	);
	assert.ok(unsafe > 0, 'ids beyond 2^53 were exercised');
}, 300_000);
