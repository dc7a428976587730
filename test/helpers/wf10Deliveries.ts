/**
 * WF10 delivery batches with duplicates (Telegram redelivering updates) and the checks that each distinct
 * update was stored and enqueued exactly once, for the queue-mode e2e tests.
 */
import assert from 'node:assert/strict';
import type { Pool } from 'pg';
import { realisticUpdates } from './updates';

/** One realistic update (test/helpers/updates.ts realisticUpdates). */
export type Delivery = ReturnType<(typeof realisticUpdates)[number]>;

/**
 * `distinctCount` fresh realistic updates (the kinds in turn) and the deliveries to send: each of them once
 * plus `repeatCount` repeats (distinct[(i * 7) % distinctCount]), shuffled.
 */
export function deliveriesWithDuplicates(
	distinctCount: number,
	repeatCount: number,
): { distinct: Delivery[]; deliveries: Delivery[] } {
	const distinct = Array.from({ length: distinctCount }, (_, i) => realisticUpdates[i % realisticUpdates.length]());
	const deliveries = [
		...distinct,
		...Array.from({ length: repeatCount }, (_, i) => distinct[(i * 7) % distinct.length]),
	];
	deliveries.sort(() => Math.random() - 0.5);
	return { distinct, deliveries };
}

/**
 * Asserts that every delivery of one update was answered with the same job_id (`answers[i]` is WF10's
 * answer to `deliveries[i]`) and that PostgreSQL holds exactly one raw.telegram_updates row, one
 * raw.telegram_update_keys row and one ops.jobs row (dedup_key tg:<bot>:<update>) per distinct update of
 * `bot`, and no other job.
 */
export async function assertStoredOnce(
	pool: Pool,
	bot: { botId: string },
	distinct: Delivery[],
	deliveries: Delivery[],
	answers: { body: { job_id?: number } }[],
): Promise<void> {
	const jobOf = new Map<number, Set<number | undefined>>();
	deliveries.forEach((u, i) =>
		jobOf.set(u.update_id, (jobOf.get(u.update_id) ?? new Set()).add(answers[i].body.job_id)),
	);
	assert.ok(
		[...jobOf.values()].every((jobs) => jobs.size === 1),
		'every delivery of an update names the same job',
	);
	const ids = distinct.map((u) => u.update_id);
	const { rows } = await pool.query(
		`SELECT (SELECT count(*) FROM raw.telegram_updates WHERE bot_id = $1 AND update_id = ANY($2))::int AS raw,
		        (SELECT count(*) FROM raw.telegram_update_keys WHERE bot_id = $1 AND update_id = ANY($2))::int AS keys,
		        (SELECT count(*) FROM ops.jobs WHERE dedup_key = ANY($3))::int AS jobs,
		        (SELECT count(*) FROM ops.jobs)::int AS all_jobs`,
		[bot.botId, ids, ids.map((id) => `tg:${bot.botId}:${id}`)],
	);
	const n = distinct.length;
	assert.deepEqual(rows[0], { raw: n, keys: n, jobs: n, all_jobs: n });
}
