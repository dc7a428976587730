/**
 * Issue 26 item 3 in queue mode (1 main, 1 `n8n webhook` process, 2 workers; scripts/lib/n8nQueue.js): the
 * shipped WF10 and WF20 and a copy of the shipped WF90 with its schedules as shipped (Claim Jobs every 10 s,
 * Release Stale every 20 s with Lease Grace 15 s; it claims only telegram_update jobs). Each worker process
 * claims under its own job lease (nodes/shared/jobs/lease.ts). Distinct WF10 deliveries → one
 * telegram_update job each; the first worker seen holding claimed jobs mid-batch is killed with SIGKILL
 * (test/helpers/leaseRecovery.ts) → its jobs are released by the scheduled Release Stale within 60 s of the
 * kill (their runs closed "lease lost"), every job succeeds exactly once (one succeeded run each, no other
 * outcome), and the last one finished within 90 s of the kill. The live worker keeps the jobs it holds
 * (none of its runs is closed "lease lost").
 * Deliveries: E2E_LEASE_DELIVERIES, default 200 in CI to keep the suite's time; `npm run bench:recovery`
 * runs the same scenario with 500 (the count), three times.
 * Skipped (with the reason) when Redis does not answer at 127.0.0.1:6379 (REDIS_HOST / REDIS_PORT).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from '@jest/globals';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { killedWorkerRecovery, LEASE_RECOVERY_WORKFLOWS, leaseRunnerCopy } from '../helpers/leaseRecovery';
import { startQueueN8n, writeWorkflow, type RunningQueueN8n } from '../helpers/n8nQueue';
import { testSkipIf } from '../helpers/skip';

const skipReason = process.env.CONTRACTS_TEST_REDIS_SKIP || null;
const DELIVERIES = Number(process.env.E2E_LEASE_DELIVERIES || 200);
let db: TestDatabase;
let n8n: RunningQueueN8n;
let bot: Awaited<ReturnType<typeof seedBot>>;
let runnerFile: string;

beforeAll(async () => {
	if (skipReason) return;
	db = await setupDatabase();
	bot = await seedBot(db.pool, 'lease_bot', 'lease-Secret_123');
	runnerFile = writeWorkflow(leaseRunnerCopy());
	n8n = await startQueueN8n(db.url, [...LEASE_RECOVERY_WORKFLOWS, runnerFile], ['telegram'], {
		workers: 2,
		webhooks: 1,
		concurrency: 10,
	});
}, 20 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await db?.drop();
	if (runnerFile) fs.rmSync(path.dirname(runnerFile), { recursive: true, force: true });
});

testSkipIf(skipReason)(
	`SIGKILL of a worker mid-batch (${DELIVERIES} WF10 deliveries, WF90 on its schedules): its jobs released within 60 s, every job done exactly once, the last one within 90 s of the kill`,
	async () => {
		const r = await killedWorkerRecovery({ pool: db.pool, n8n, bot, deliveries: DELIVERIES, victim: 'first' });
		const victim = n8n.workers[r.victim];
		console.log(
			`${r.jobs} jobs; ${victim.role} held ${r.heldAtKill} running at the kill; released ${r.releasedAfterS.toFixed(1)} s after it, last job finished after ${r.lastFinishedAfterS.toFixed(1)} s; runs per job (succeeded/lease lost/other): ${JSON.stringify(r.runsPerJob)}`,
		);
		assert.deepEqual(r.statuses, { succeeded: r.jobs }, 'every job succeeded');
		const keys = Object.keys(r.runsPerJob);
		assert.ok(
			keys.every((k) => k === '1/0/0' || k === '1/1/0'),
			`one succeeded run per job, at most one released attempt, nothing else: ${JSON.stringify(r.runsPerJob)}`,
		);
		assert.equal(r.runsPerJob['1/1/0'], r.heldAtKill, 'exactly the jobs the dead worker held were released');
		assert.ok(r.releasedAfterS <= 60, `released ${r.releasedAfterS} s after the kill`);
		assert.ok(r.lastFinishedAfterS <= 90, `last job finished ${r.lastFinishedAfterS} s after the kill`);
		// only the dead worker's jobs lost their lease: runs of the live worker were never closed "lease lost"
		const { rows } = await db.pool.query(
			"SELECT DISTINCT worker FROM ops.job_runs WHERE error->>'message' = 'lease lost'",
		);
		const victimExecutions = new Set(victim.startedExecutions().map((id) => `wf90-${id}`));
		assert.ok(
			rows.every((r) => victimExecutions.has(r.worker)),
			`lease lost only for ${victim.role}'s executions: ${JSON.stringify(rows)}`,
		);
	},
	15 * 60_000,
);
