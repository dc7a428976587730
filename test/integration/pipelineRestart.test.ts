/**
 * A real PostgreSQL restart under the Pipeline Trigger's LISTEN: an embedded PostgreSQL (real server
 * binaries) is stopped (fast shutdown: the listener's connection is cut) and started again on the same
 * port and data. The listener reconnects with backoff, catches up, and a consumer capturing what it
 * receives runs every run exactly once: none left behind, none twice.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll } from '@jest/globals';
import { embeddedPostgresUnreachable, startMigratedEmbedded, type EmbeddedServer } from '../helpers/embeddedPostgres';
import { testSkipIf } from '../helpers/skip';
import type { Pool } from 'pg';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { PipelineListener, type PipelineEvent } from '../../nodes/shared/postgres/listener';

let server: EmbeddedServer;
let pool: Pool;
let listener: PipelineListener;
const def = shippedDefinition();
const events: PipelineEvent[] = [];
const captures = new Map<string, number>();
const pending: Promise<unknown>[] = [];

/** Why this file cannot start its embedded PostgreSQL here, or null. */
const SKIP = embeddedPostgresUnreachable();

beforeAll(async () => {
	if (SKIP) return;
	const started = await startMigratedEmbedded(5);
	({ server, pool } = started);
	const { connection } = started;
	listener = new PipelineListener(connection, {
		initialBackoffMs: 100,
		maxBackoffMs: 1000,
		statuses: ['NEW'],
		onEvents: (batch) => {
			events.push(...batch);
			for (const e of batch) {
				pending.push(
					capture(pool, def, { run_id: e.id, transition: 'CAPTURE_ANALYSIS', worker: 'consumer' })
						.then((c) => {
							if (c.captured) captures.set(e.id, (captures.get(e.id) ?? 0) + 1);
						})
						.catch(() => undefined),
				);
			}
		},
		onError: () => undefined,
	});
	await listener.start();
});

afterAll(async () => {
	await listener?.stop();
	await pool?.end();
	await server?.stop();
});

async function newRuns(n: number): Promise<string[]> {
	for (let attempt = 0; ; attempt++) {
		try {
			const { rows } = await pool.query<{ id: string }>(
				"INSERT INTO maas.pipeline_runs (user_id, user_query) SELECT 'restart-' || gen_random_uuid(), 'q' FROM generate_series(1, $1) RETURNING id",
				[n],
			);
			return rows.map((r) => r.id);
		} catch (error) {
			if (attempt > 50) throw error;
			await new Promise((r) => setTimeout(r, 100)); // the pool's old connections died with the server
		}
	}
}

testSkipIf(SKIP)(
	'PostgreSQL restarted once: the listener reconnects, catches up, and every run is captured exactly once',
	async () => {
		const before = await newRuns(3);
		const connections = listener.connections;
		await server.restart();
		const afterRestart = await newRuns(3);
		const deadline = Date.now() + 30_000;
		while (!(listener.connections > connections && [...before, ...afterRestart].every((id) => captures.has(id)))) {
			if (Date.now() > deadline)
				assert.fail(`not all runs captured: ${captures.size}/6, connections ${listener.connections}`);
			await new Promise((r) => setTimeout(r, 100));
		}
		await Promise.all(pending);
		const { rows } = await pool.query('SELECT status, count(*)::int AS n FROM maas.pipeline_runs GROUP BY status');
		assert.deepEqual(rows, [{ status: 'ANALYZING', n: 6 }]);
		assert.ok(
			[...captures.values()].every((n) => n === 1),
			'none captured twice',
		);
	},
	120_000,
);
