/**
 * The killed-worker recovery scenario of issue 26 item 3 in queue mode, shared by
 * test/e2e/queue_mode_job_leases.test.ts and bench/recovery.bench.ts. The cluster (test/helpers/n8nQueue.ts)
 * runs the shipped WF10, WF20 and a copy of the shipped WF90 with its schedules as shipped (Claim Jobs every
 * 10 s, Release Stale every 20 s with Lease Grace 15 s), claiming only telegram_update jobs:
 *  1. `deliveries` distinct Telegram updates are posted to WF10 (12 at a time; one answered 5xx is sent again,
 *     as Telegram redelivers) → one telegram_update job each;
 *  2. once a worker (`victim`, or with 'first' whichever is seen first) holds claimed jobs that are still
 *     running (mid-batch: jobs of its batches done and not done), it is killed with SIGKILL (which one gets
 *     a Claim Jobs execution is up to n8n's queue: one batch of 50 can go to either worker);
 *  3. the scenario waits until every job succeeded and reads, from ops.jobs / ops.job_runs, when the dead
 *     worker's jobs were released (their runs closed "lease lost") and when the last job finished, in
 *     seconds after the kill (database clock on both ends).
 */
import type { Pool } from 'pg';
import { mapLimit, WORKFLOWS } from './n8n';
import type { RunningQueueN8n } from './n8nQueue';
import { countBy, waitFor } from './queueRecords';
import { realisticUpdates } from './updates';
import { wf90Copy } from './wf90Runner';
import path from 'node:path';

/** The WF90 copy's workflow id. */
export const LEASE_RUNNER_ID = 'WF90LeaseRecovery';

/** The workflow files the scenario needs in the cluster (the WF90 copy written by the caller with writeWorkflow). */
export const LEASE_RECOVERY_WORKFLOWS = [
	'WF99e_catch_all.json',
	'WF99_global_err_handler.json',
	'WF10_telegram_ingest.json',
	'WF20_update_processor.json',
].map((f) => path.join(WORKFLOWS, f));

/** The shipped WF90 with its schedules, claiming only telegram_update jobs (WF10's). */
export function leaseRunnerCopy() {
	return wf90Copy({
		id: LEASE_RUNNER_ID,
		name: 'WF90 — Job Runner (lease recovery copy)',
		jobTypes: 'telegram_update',
	});
}

export interface RecoveryResult {
	jobs: number;
	/** Index in n8n.workers of the worker that was killed. */
	victim: number;
	/** Running jobs the victim held when it was killed. */
	heldAtKill: number;
	/** Seconds from the kill to the release of the last of the victim's jobs (its runs closed "lease lost"). */
	releasedAfterS: number;
	/** Seconds from the kill to the last job's finish. */
	lastFinishedAfterS: number;
	/** Per job, "succeeded runs/lease-lost runs/other runs" → count. */
	runsPerJob: Record<string, number>;
	/** Job statuses → count. */
	statuses: Record<string, number>;
}

async function post(url: string, body: unknown, headers: Record<string, string>) {
	const res = await fetch(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...headers },
		body: JSON.stringify(body),
	});
	const text = await res.text();
	try {
		return { status: res.status, body: JSON.parse(text) };
	} catch {
		return { status: res.status, body: text as unknown as Record<string, unknown> };
	}
}

/**
 * Runs the scenario once (see the file header); the victim stays dead (the caller restarts it if it wants).
 * @throws when a delivery fails, the victim never holds running jobs, or the jobs do not all succeed in `timeoutMs`
 */
export async function killedWorkerRecovery(o: {
	pool: Pool;
	n8n: RunningQueueN8n;
	bot: { botKey: string; secret: string };
	deliveries: number;
	victim: number | 'first';
	timeoutMs?: number;
}): Promise<RecoveryResult> {
	const { pool, n8n } = o;
	const timeoutMs = o.timeoutMs ?? 300_000;
	const explain = async () =>
		`jobs: ${JSON.stringify((await pool.query("SELECT status, count(*)::int FROM ops.jobs WHERE job_type = 'telegram_update' GROUP BY 1")).rows)}\nruns per Claim Jobs execution: ${JSON.stringify((await pool.query('SELECT worker, count(*)::int FROM ops.job_runs GROUP BY 1 ORDER BY min(started_at) LIMIT 40')).rows)}\n${n8n.logs()}`;
	const updates = Array.from({ length: o.deliveries }, (_, i) => realisticUpdates[i % realisticUpdates.length]());
	const headers = { 'X-Telegram-Bot-Api-Secret-Token': o.bot.secret };
	// a delivery answered 5xx is sent again after a second, as Telegram redelivers (WF10 stores it once)
	const answers = await mapLimit(updates, 12, async (update) => {
		for (let attempt = 1; ; attempt++) {
			const answer = await post(`${n8n.webhookUrl}/webhook/telegram?bot=${o.bot.botKey}`, update, headers);
			if (answer.status < 500 || attempt === 5) return answer;
			await new Promise((resolve) => setTimeout(resolve, 1000));
		}
	});
	const failed = answers.filter((a) => a.status !== 200 || typeof a.body.job_id !== 'number');
	if (failed.length) throw new Error(`${failed.length} deliveries failed, e.g. ${JSON.stringify(failed[0])}`);
	const jobIds = [...new Set(answers.map((a) => a.body.job_id as number))];
	if (jobIds.length !== o.deliveries) throw new Error(`${jobIds.length} jobs for ${o.deliveries} distinct updates`);
	const candidates = o.victim === 'first' ? n8n.workers.map((_, i) => i) : [o.victim];
	let victimIndex = -1;
	// mid-batch: the victim holds running jobs of a batch of which some jobs are done already
	await waitFor(
		`${o.victim === 'first' ? 'a worker' : n8n.workers[o.victim].role} holding running jobs mid-batch`,
		async () => {
			for (const i of candidates) {
				const mine = n8n.workers[i].startedExecutions().map((id) => `wf90-${id}`);
				const { rows } = await pool.query(
					// a running attempt is its ops.jobs row; a run is written when it ends (migration 026)
					`SELECT (SELECT count(*) FROM ops.jobs j
					         WHERE j.id = ANY($1) AND j.status = 'running' AND j.locked_by = ANY($2))::int AS running,
					        (SELECT count(*) FROM ops.jobs j JOIN ops.job_runs r ON r.job_id = j.id
					         WHERE j.id = ANY($1) AND j.status = 'succeeded' AND r.status = 'succeeded' AND r.worker = ANY($2))::int AS done`,
					[jobIds, mine],
				);
				if (rows[0].running >= 3 && rows[0].done >= 1) {
					victimIndex = i;
					return true;
				}
			}
			return undefined;
		},
		timeoutMs,
		50,
		explain,
	);
	const victim = n8n.workers[victimIndex];
	await n8n.killWorker(victimIndex);
	const killedAt: Date = (await pool.query('SELECT clock_timestamp() AS t')).rows[0].t;
	// what the dead process holds (nothing it holds changes until Release Stale gives it back)
	const mine = victim.startedExecutions().map((id) => `wf90-${id}`);
	const held: number = (
		await pool.query(
			"SELECT count(*)::int AS n FROM ops.jobs WHERE id = ANY($1) AND status = 'running' AND locked_by = ANY($2)",
			[jobIds, mine],
		)
	).rows[0].n;
	await waitFor(
		'every job succeeded',
		async () => {
			const { rows } = await pool.query(
				"SELECT count(*)::int AS n FROM ops.jobs WHERE id = ANY($1) AND status = 'succeeded'",
				[jobIds],
			);
			return rows[0].n === jobIds.length ? true : undefined;
		},
		timeoutMs,
		250,
		explain,
	);
	const { rows: timing } = await pool.query(
		`SELECT extract(epoch FROM (SELECT max(r.finished_at) FROM ops.job_runs r
		          WHERE r.job_id = ANY($1) AND r.error->>'message' = 'lease lost') - $2::timestamptz)::float8 AS released,
		        extract(epoch FROM (SELECT max(finished_at) FROM ops.jobs WHERE id = ANY($1)) - $2::timestamptz)::float8 AS last`,
		[jobIds, killedAt],
	);
	const { rows: runs } = await pool.query(
		`SELECT j.id, count(r.id) FILTER (WHERE r.status = 'succeeded')::int AS ok,
		        count(r.id) FILTER (WHERE r.error->>'message' = 'lease lost')::int AS lost,
		        count(r.id) FILTER (WHERE r.status <> 'succeeded' AND r.error->>'message' IS DISTINCT FROM 'lease lost')::int AS other
		 FROM ops.jobs j LEFT JOIN ops.job_runs r ON r.job_id = j.id WHERE j.id = ANY($1) GROUP BY j.id`,
		[jobIds],
	);
	const { rows: statuses } = await pool.query('SELECT status FROM ops.jobs WHERE id = ANY($1)', [jobIds]);
	return {
		jobs: jobIds.length,
		victim: victimIndex,
		heldAtKill: held,
		releasedAfterS: timing[0].released ?? Number.NaN,
		lastFinishedAfterS: timing[0].last,
		runsPerJob: countBy(runs.map((r) => `${r.ok}/${r.lost}/${r.other}`)),
		statuses: countBy(statuses.map((r) => r.status)),
	};
}
