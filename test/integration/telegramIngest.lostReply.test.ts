/**
 * Issue 26 item 1: Telegram Ingest (WF10) is safe to retry after a lost reply. A TCP proxy between the node
 * and the real PostgreSQL forwards the write and cuts the connection as soon as the server starts to answer
 * (the update committed, the reply never came). The node sends the idempotent write again on a new
 * connection and answers 200 (the update found stored: `duplicate: true`, the same job), not a 503 that
 * would make WF10 answer Telegram 5xx for a committed update; Telegram's own re-delivery is answered the
 * same. One raw row, one keys row, one job — the worker (Claim Jobs) gets the update once.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { Pool } from 'pg';
import { ingestUpdate, type IngestInput } from '../../nodes/TelegramIngest/actions/ingest.operation';
import { SuccessEnvelope } from '../../nodes/shared/contracts/envelope';
import { ContractError } from '../../nodes/shared/errors';
import { claimJobs } from '../../nodes/shared/jobs/queue';
import { seedBot, type TestDatabase } from '../helpers/db';
import { closeProxiedDatabase, setupProxiedDatabase } from '../helpers/proxiedDatabase';
import type { TcpProxy } from '../helpers/tcpProxy';
import { newUpdateId, textWithUrls } from '../helpers/updates';

let db: TestDatabase;
let proxy: TcpProxy;
let proxied: Pool;
let bot: Awaited<ReturnType<typeof seedBot>>;
beforeAll(async () => {
	({ db, proxy, proxied } = await setupProxiedDatabase());
	bot = await seedBot(db.pool, 'lost_reply_bot', 'Lost-reply_secret1');
});
afterAll(() => closeProxiedDatabase({ db, proxy, proxied }));

/** A marker only the stored path's statement holds (raw.ingest_update, one round trip). */
const INGEST_MARKER = 'raw.ingest_update(';

function input(overrides: Partial<IngestInput>): IngestInput {
	return {
		botKey: bot.botKey,
		secretToken: bot.secret,
		update: {},
		jobType: 'telegram_update',
		maxAttempts: 5,
		workflow: 'WF10',
		nodeName: 'Telegram Ingest',
		...overrides,
	};
}

async function stored(updateId: number | string) {
	const { rows } = await db.pool.query(
		`SELECT (SELECT count(*)::int FROM raw.telegram_updates WHERE bot_id = $1 AND update_id = $2::bigint) AS raw,
		        (SELECT count(*)::int FROM raw.telegram_update_keys WHERE bot_id = $1 AND update_id = $2::bigint) AS keys,
		        (SELECT count(*)::int FROM ops.jobs WHERE dedup_key = $3) AS jobs,
		        (SELECT min(id)::int FROM ops.jobs WHERE dedup_key = $3) AS job_id,
		        (SELECT count(*)::int FROM raw.telegram_quarantine WHERE bot_id = $1 AND update_id = $2::bigint) AS quarantined`,
		[bot.botId, String(updateId), `tg:${bot.botId}:${updateId}`],
	);
	return rows[0] as { raw: number; keys: number; jobs: number; job_id: number; quarantined: number };
}

test('a stored update whose reply is lost after COMMIT: the node answers 200 (the same job, duplicate), Telegram’s re-delivery too; one raw row, one job, worked once', async () => {
	const update = textWithUrls();
	const call = input({ rawBody: Buffer.from(JSON.stringify(update)) });
	const before = proxy.dropped;
	proxy.dropReplyTo(INGEST_MARKER);
	const first = SuccessEnvelope.parse(await ingestUpdate(proxied, call, {}));
	assert.equal(proxy.dropped, before + 1, 'the reply of the committed write was dropped');
	const rows = await stored(update.update_id);
	assert.deepEqual({ ...rows, job_id: undefined }, { raw: 1, keys: 1, jobs: 1, job_id: undefined, quarantined: 0 });
	assert.equal(first.status_code, 200);
	assert.deepEqual([first.data.job_id, first.data.duplicate, first.data.quarantined], [rows.job_id, true, false]);
	// Telegram delivers again (it never saw an answer, or WF10 was retried): the same answer, nothing written
	const again = SuccessEnvelope.parse(await ingestUpdate(proxied, call, {}));
	assert.deepEqual([again.status_code, again.data.job_id, again.data.duplicate], [200, rows.job_id, true]);
	assert.deepEqual(await stored(update.update_id), rows);
	// the worker gets the update once
	const claimed = await claimJobs(db.pool, { job_type: 'telegram_update', batch_size: 100, worker: 'w' });
	assert.deepEqual(
		claimed.filter((j) => (j.payload as { update_id: number }).update_id === update.update_id).map((j) => Number(j.id)),
		[rows.job_id],
	);
});

test('the write never reaches the database (every attempt lost): 503 retryable, nothing stored; the re-delivery stores it once', async () => {
	const update = textWithUrls();
	const call = input({ rawBody: Buffer.from(JSON.stringify(update)) });
	const before = proxy.dropped;
	proxy.dropRequestTo(INGEST_MARKER, 3);
	await assert.rejects(ingestUpdate(proxied, call, {}), (e: ContractError) => e.statusCode === 503 && e.retryable);
	assert.equal(proxy.dropped, before + 3, 'the node tried three times');
	assert.deepEqual(await stored(update.update_id), { raw: 0, keys: 0, jobs: 0, job_id: null, quarantined: 0 });
	const again = SuccessEnvelope.parse(await ingestUpdate(proxied, call, {}));
	assert.deepEqual([again.status_code, again.data.duplicate], [200, false]);
	const rows = await stored(update.update_id);
	assert.deepEqual([rows.raw, rows.jobs, again.data.job_id], [1, 1, rows.job_id]);
});

test('a quarantined update whose COMMIT reply is lost: 200, one quarantine row and one ops.errors row', async () => {
	const updateId = newUpdateId();
	// a NUL in the text: PostgreSQL's jsonb cannot hold it, the update is quarantined (200)
	const text = `{"update_id":${updateId},"message":{"message_id":1,"date":1,"chat":{"id":5,"type":"private"},"text":"a\\u0000b"}}`;
	const bytes = Buffer.from(text);
	const call = input({ rawBody: bytes });
	const before = proxy.dropped;
	proxy.dropReplyTo('COMMIT');
	const first = SuccessEnvelope.parse(await ingestUpdate(proxied, call, {}));
	assert.equal(proxy.dropped, before + 1);
	assert.equal(first.status_code, 200);
	assert.deepEqual([first.data.quarantined, first.data.duplicate], [true, true]);
	const sha = createHash('sha256').update(bytes).digest();
	const { rows } = await db.pool.query(
		`SELECT q.id, (SELECT count(*)::int FROM ops.errors e WHERE (e.details->>'quarantine_id')::bigint = q.id) AS errors
		 FROM raw.telegram_quarantine q WHERE q.bot_id = $1 AND q.body_sha256 = $2`,
		[bot.botId, sha],
	);
	assert.deepEqual(rows, [{ id: rows[0].id, errors: 1 }]);
	assert.equal(first.data.quarantine_id, Number(rows[0].id));
});
