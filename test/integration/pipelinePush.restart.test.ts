/**
 * Pipeline Push across a real PostgreSQL restart (issue 17: "server restart of PostgreSQL during a wait →
 * the answer still arrives"): an embedded PostgreSQL (real server binaries, scripts/lib/postgres.js) is
 * stopped — the push listener's LISTEN connection and the store's pooled connections are cut — and started
 * again on the same port and data while a WebSocket client waits for its run. The run completes right
 * after the restart, possibly before the listener has reconnected: the answer arrives exactly once, either
 * by the notification or by the re-check of waiting subscriptions after the reconnect.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from '@jest/globals';
import { embeddedPostgresUnreachable, startMigratedEmbedded, type EmbeddedServer } from '../helpers/embeddedPostgres';
import { testSkipIf } from '../helpers/skip';
import type { Pool } from 'pg';
import { pgRunStore } from '../../nodes/PipelinePush/transport/runs';
import { startPushService, type PushService } from '../../nodes/PipelinePush/transport/service';
import { mintPushToken } from '../../nodes/PipelinePush/transport/token';
import { PushClient } from '../helpers/pushClient';

const SECRET = randomBytes(32).toString('base64url');
let server: EmbeddedServer;
let pool: Pool;
let service: PushService;
const clients: PushClient[] = [];

/** Why this file cannot start its embedded PostgreSQL here, or null. */
const SKIP = embeddedPostgresUnreachable();

beforeAll(async () => {
	if (SKIP) return;
	const started = await startMigratedEmbedded(4);
	({ server, pool } = started);
	const { connection } = started;
	service = await startPushService({
		port: 0,
		host: '127.0.0.1',
		secret: SECRET,
		maxMessageBytes: 16 * 1024,
		maxIdsPerMessage: 5,
		maxSubscriptions: 5,
		maxConnections: 100,
		authTimeoutMs: 5_000,
		heartbeatMs: 30_000,
		recheckMs: 60 * 60_000, // no periodic re-check: only the notification or the reconnect may deliver
		maxBackoffMs: 500,
		listen: connection,
		store: pgRunStore(() => pool),
		logger: { info: () => undefined, warn: () => undefined },
	});
}, 180_000);

afterAll(async () => {
	for (const c of clients) c.close();
	await service?.stop();
	await pool?.end();
	await server?.stop();
});

/** Runs `sql` until the restarted server answers (the pool's old connections died with it). */
async function retrying<T>(sql: () => Promise<T>): Promise<T> {
	for (let attempt = 0; ; attempt++) {
		try {
			return await sql();
		} catch (error) {
			if (attempt > 100) throw error;
			await new Promise((r) => setTimeout(r, 100));
		}
	}
}

testSkipIf(SKIP)(
	'PostgreSQL restarted while a client waits: the run completed right after arrives once',
	async () => {
		const { rows } = await pool.query<{ id: string }>(
			"INSERT INTO maas.pipeline_runs (user_id, user_query, status) VALUES ('carol', 'q', 'RESPONDING') RETURNING id::text AS id",
		);
		const id = rows[0].id;
		const c = await PushClient.connect(`ws://127.0.0.1:${service.server.port}/api/ws`);
		clients.push(c);
		c.auth('carol', mintPushToken('carol', SECRET));
		await c.next((m) => m.type === 'authenticated', 5000, 'authenticated');
		c.subscribe(id);
		assert.deepEqual((await c.next((m) => m.type === 'subscribed', 5000, 'subscribed')).request_ids, [id]);

		await server.restart();
		const completed = await retrying(() =>
			pool.query(
				"UPDATE maas.pipeline_runs SET status = 'COMPLETED', final_answer = 'after the restart', updated_at = now() WHERE id = $1 AND status = 'RESPONDING'",
				[id],
			),
		);
		assert.equal(completed.rowCount, 1);

		assert.deepEqual(await c.answerFor(id, 60_000), {
			request_id: id,
			status: 'completed',
			answer: 'after the restart',
		});
		await service.server.recheckAll();
		await new Promise((r) => setTimeout(r, 300));
		assert.equal(c.messages.filter((m) => m.request_id === id).length, 1, 'pushed once');
	},
	180_000,
);
