/**
 * Telegram Ingest's bot cache (actions/botCache.ts, migration 013) against real PostgreSQL: one bot
 * lookup per key per TTL while nothing changes; a disabled bot, a disabled tenant or a rotated secret is
 * refused as soon as the NOTIFY arrives, and within BOT_CACHE_TTL_MS when the notification is lost
 * (trigger bypassed); a new secret is accepted at once; the listener reconnects after its connection dies.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Pool } from 'pg';
import { BOT_CACHE_TTL_MS, botCacheOf } from '../../nodes/TelegramIngest/actions/botCache';
import { ingestUpdate, type IngestInput } from '../../nodes/TelegramIngest/actions/ingest.operation';
import { LOOKUP_BOT } from '../../nodes/shared/statements/core';
import { ContractError } from '../../nodes/shared/errors';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { textWithUrls } from '../helpers/updates';

let db: TestDatabase;
/** The pool the node uses (its own, so its cache starts empty); `lookups` counts LOOKUP_BOT statements sent on it. */
let pool: Pool;
let lookups = 0;

beforeAll(async () => {
	db = await setupDatabase();
	pool = new Pool({ connectionString: db.url, max: 4 });
	pool.on('error', () => undefined);
	const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
	(pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
		if (args[0] === LOOKUP_BOT) lookups++;
		return query(...args);
	};
});
afterAll(async () => {
	botCacheOf(pool).close();
	await pool.end();
	await db?.drop();
});

function input(bot: { botKey: string }, secretToken: string): IngestInput {
	return {
		botKey: bot.botKey,
		secretToken,
		update: textWithUrls(),
		jobType: 'telegram_update',
		maxAttempts: 5,
		workflow: 'WF10',
		nodeName: 'Telegram Ingest',
	};
}

/** The outcome of one ingest: 'stored', or the refusal's status and reason. */
async function outcome(bot: { botKey: string }, secret: string): Promise<string> {
	try {
		const envelope = await ingestUpdate(pool, input(bot, secret), {});
		assert.equal(envelope.data.duplicate, false);
		return 'stored';
	} catch (error) {
		assert.ok(error instanceof ContractError, String(error));
		return `${error.statusCode} ${String((error.details as { reason?: string }).reason)}`;
	}
}

/** Retries `fn` every 20 ms until it returns `want`; resolves with the ms it took (fails after `limitMs`). */
async function msUntil(fn: () => Promise<string>, want: string, limitMs: number): Promise<number> {
	const started = Date.now();
	let last = '';
	while (Date.now() - started <= limitMs) {
		last = await fn();
		if (last === want) return Date.now() - started;
		await new Promise((r) => setTimeout(r, 20));
	}
	assert.fail(`still "${last}" after ${limitMs} ms (wanted "${want}")`);
}

/** Waits until the pool's listener is connected (LISTEN issued); a lookup starts it. */
async function listening(): Promise<number> {
	botCacheOf(pool).get('no_such_bot');
	const deadline = Date.now() + 10_000;
	while (Date.now() < deadline) {
		const pid = botCacheOf(pool).listener?.backendPid;
		if (pid) return pid;
		await new Promise((r) => setTimeout(r, 20));
	}
	assert.fail('the bot listener never connected');
}

/** seedBot, then waits for its INSERT's notification to reach the cache (so it cannot clear what comes next). */
async function seeded(key: string, secret: string) {
	await listening();
	const seen = botCacheOf(pool).invalidations;
	const bot = await seedBot(db.pool, key, secret);
	const deadline = Date.now() + 5_000;
	while (botCacheOf(pool).invalidations === seen && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
	assert.ok(botCacheOf(pool).invalidations > seen, 'the INSERT notified the listener');
	return bot;
}

/** Runs `sql` with triggers off: the change sends no notification (as one lost while the listener is down). */
async function silently(sql: string, params: unknown[]): Promise<void> {
	const client = await db.pool.connect();
	try {
		await client.query("SET session_replication_role = 'replica'");
		await client.query(sql, params);
		await client.query("SET session_replication_role = 'origin'");
	} finally {
		client.release();
	}
}

test('an unchanged bot is looked up once per TTL, not once per update', async () => {
	const bot = await seeded('cache_once', 'Once-secret_1');
	await listening();
	const before = lookups;
	for (let i = 0; i < 20; i++) assert.equal(await outcome(bot, bot.secret), 'stored');
	assert.equal(lookups - before, 1, 'twenty updates, one bot lookup');
});

test('disabling a bot or its tenant, or rotating its secret, is refused as soon as the NOTIFY arrives', async () => {
	await listening();
	const disabled = await seedBot(db.pool, 'cache_disable', 'Disable-secret_1');
	assert.equal(await outcome(disabled, disabled.secret), 'stored');
	await db.pool.query('UPDATE core.bots SET is_enabled = false WHERE bot_id = $1', [disabled.botId]);
	const ms = await msUntil(() => outcome(disabled, disabled.secret), '403 unknown_bot', BOT_CACHE_TTL_MS);
	assert.ok(ms < 1_000, `refused ${ms} ms after the COMMIT (notification), not at the TTL`);

	const tenant = await seedBot(db.pool, 'cache_tenant', 'Tenant-secret_1');
	assert.equal(await outcome(tenant, tenant.secret), 'stored');
	await db.pool.query('UPDATE core.tenants SET is_enabled = false WHERE tenant_id = $1', [tenant.tenantId]);
	assert.ok((await msUntil(() => outcome(tenant, tenant.secret), '403 unknown_bot', BOT_CACHE_TTL_MS)) < 1_000);

	const rotated = await seedBot(db.pool, 'cache_rotate', 'Rotate-secret_1');
	assert.equal(await outcome(rotated, rotated.secret), 'stored');
	await db.pool.query("UPDATE core.bots SET webhook_secret = 'Rotate-secret_2' WHERE bot_id = $1", [rotated.botId]);
	assert.equal(await outcome(rotated, 'Rotate-secret_2'), 'stored', 'the new secret is accepted at once');
	assert.ok((await msUntil(() => outcome(rotated, rotated.secret), '403 wrong_secret', BOT_CACHE_TTL_MS)) < 1_000);
});

test('with the notification lost, a disabled bot and an old secret are refused within the TTL', async () => {
	await listening();
	const bot = await seeded('cache_lost', 'Lost-secret_1');
	assert.equal(await outcome(bot, bot.secret), 'stored');
	await silently("UPDATE core.bots SET webhook_secret = 'Lost-secret_2' WHERE bot_id = $1", [bot.botId]);
	assert.equal(await outcome(bot, 'Lost-secret_2'), 'stored', 'a new secret is decided on a fresh row');
	// The fresh read above cached the new row: the old secret is refused from now on.
	assert.equal(await outcome(bot, bot.secret), '403 wrong_secret');

	const other = await seeded('cache_lost_off', 'Lost-off_1');
	assert.equal(await outcome(other, other.secret), 'stored');
	const offAt = Date.now();
	await silently('UPDATE core.bots SET is_enabled = false WHERE bot_id = $1', [other.botId]);
	assert.equal(
		await outcome(other, other.secret),
		'stored',
		'no notification: the cached row still answers (this test exercises the TTL)',
	);
	await msUntil(() => outcome(other, other.secret), '403 unknown_bot', BOT_CACHE_TTL_MS + 500);
	const after = Date.now() - offAt;
	assert.ok(
		after <= BOT_CACHE_TTL_MS + 500,
		`refused ${after} ms after the change (TTL ${BOT_CACHE_TTL_MS} ms + 500 ms margin)`,
	);
});

test('the listener reconnects after its connection is terminated, and notifications work again', async () => {
	const pid = await listening();
	const connections = botCacheOf(pool).listener!.connections;
	await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
	const deadline = Date.now() + 10_000;
	while (botCacheOf(pool).listener!.connections === connections && Date.now() < deadline)
		await new Promise((r) => setTimeout(r, 20));
	assert.ok(botCacheOf(pool).listener!.connections > connections, 'reconnected');
	const newPid = await listening();
	assert.notEqual(newPid, pid);
	const bot = await seedBot(db.pool, 'cache_after', 'After-secret_1');
	assert.equal(await outcome(bot, bot.secret), 'stored');
	await db.pool.query('UPDATE core.bots SET is_enabled = false WHERE bot_id = $1', [bot.botId]);
	assert.ok((await msUntil(() => outcome(bot, bot.secret), '403 unknown_bot', BOT_CACHE_TTL_MS)) < 1_000);
});
