/**
 * The two workloads of `npm run bench:queue` (bench/queue.bench.ts), driven the same way against any n8n
 * (single process or queue-mode main) that serves the workflows of writeBenchWorkflows():
 *   WF10 — distinct Telegram updates POSTed to the shipped WF10's webhook by `clients` concurrent senders;
 *   WF90 — `jobs` queued document_chunk jobs (one extracted document each) drained by WF90 runner
 *          executions: `runners` concurrent loops each POST bench/wf90-run (the shipped WF90 with a webhook
 *          instead of its schedules, `batch` jobs per claim) until a run claims nothing.
 * Each measure* call refuses (throws Refused, bench/report.ts) when an update or a job was lost or done
 * twice, counted in PostgreSQL; it returns the rate and which n8n executions did the work.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import { queueChunkJobs } from '../test/helpers/chunkJobs';
import { mapLimit, WORKFLOWS } from '../test/helpers/n8n';
import { realisticUpdates } from '../test/helpers/updates';
import { wf90Copy } from '../test/helpers/wf90Runner';
import { refuseUnless, secondsSince } from './report';

/** Workflow id and webhook path of the WF90 bench copy. */
export const RUNNER_ID = 'WF90QueueBench';
export const RUNNER_HOOK = 'bench/wf90-run';
/** The shipped WF10's workflow id and webhook path (a dynamic path: `telegram?bot=<bot_key>`). */
export const WF10_ID = 'WF10TgIngest';
export const WF10_HOOK = 'telegram';

/**
 * WF90 as shipped, started by POST bench/wf90-run instead of its schedules (the bench decides when and
 * how many runs overlap): Runner Settings (document_chunk jobs only, `batch` per claim) → Claim Jobs →
 * Run Worker (WF40 per job) → Finish Job → Run Summary, answering every Run Summary item ([] when nothing
 * was claimed). The Release Stale branch and both schedules are left out.
 */
export function runnerCopy(batch: number) {
	return wf90Copy({
		id: RUNNER_ID,
		name: 'WF90 — Job Runner (queue bench copy)',
		jobTypes: 'document_chunk',
		limit: batch,
		webhooks: { run: RUNNER_HOOK },
	});
}

/**
 * Writes the runner copy into a temp folder; returns every workflow file to import (WF99, WF10 and WF40 as
 * shipped, the runner copy) and `remove()` for the folder.
 */
export function writeBenchWorkflows(batch: number): { files: string[]; remove(): void } {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-queue-bench-'));
	const runner = path.join(dir, `${RUNNER_ID}.json`);
	fs.writeFileSync(runner, JSON.stringify(runnerCopy(batch)));
	return {
		files: [
			...['WF99_global_err_handler.json', 'WF10_telegram_ingest.json', 'WF40_chunker.json'].map((f) =>
				path.join(WORKFLOWS, f),
			),
			runner,
		],
		remove: () => fs.rmSync(dir, { recursive: true, force: true }),
	};
}

export interface Bot {
	botKey: string;
	secret: string;
	tenantId: string;
}

/**
 * POSTs `n` distinct realistic updates to WF10 at `baseUrl` from `clients` concurrent senders.
 * Returns updates/s (wall clock of the sends).
 * @throws Refused when an answer is not 200 or not a first delivery, or when raw rows, keys, jobs and
 *   distinct jobs did not each grow by exactly `n` (nothing else may write them meanwhile).
 */
export async function measureWf10(pool: Pool, baseUrl: string, bot: Bot, n: number, clients: number): Promise<number> {
	const updates = Array.from({ length: n }, (_, i) => realisticUpdates[i % realisticUpdates.length]());
	const before = await ingestCounts(pool);
	const start = performance.now();
	const answers = await mapLimit(updates, clients, async (update) => {
		const res = await fetch(`${baseUrl}/webhook/${WF10_HOOK}?bot=${bot.botKey}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'X-Telegram-Bot-Api-Secret-Token': bot.secret },
			body: JSON.stringify(update),
		});
		const text = await res.text();
		let duplicate: unknown;
		try {
			duplicate = (JSON.parse(text) as { duplicate?: unknown }).duplicate;
		} catch {
			duplicate = undefined;
		}
		return { status: res.status, duplicate, text };
	});
	const seconds = secondsSince(start);
	const bad = answers.filter((a) => a.status !== 200 || a.duplicate !== false);
	refuseUnless(
		bad.length === 0,
		`WF10: ${bad.length} of ${n} answers were not a 200 first delivery (first: HTTP ${bad[0]?.status} ${bad[0]?.text.slice(0, 200)})`,
	);
	const after = await ingestCounts(pool);
	for (const k of Object.keys(after) as Array<keyof typeof after>) {
		refuseUnless(
			after[k] - before[k] === n,
			`WF10: ${n} updates answered 200 but ${k} grew by ${after[k] - before[k]}`,
		);
	}
	return n / seconds;
}

async function ingestCounts(pool: Pool): Promise<{ raw: number; keys: number; jobs: number; distinct_jobs: number }> {
	const { rows } =
		await pool.query(`SELECT (SELECT count(*) FROM raw.telegram_updates)::int AS raw, (SELECT count(*) FROM raw.telegram_update_keys)::int AS keys,
		(SELECT count(*) FROM ops.jobs WHERE job_type <> 'document_chunk')::int AS jobs,
		(SELECT count(DISTINCT dedup_key) FROM ops.jobs WHERE job_type <> 'document_chunk')::int AS distinct_jobs`);
	return rows[0];
}

export interface Wf90Result {
	/** jobs/s: jobs / wall clock from the first runner POST to the last runner's empty claim */
	rate: number;
	/** n8n execution ids of the WF90 runs that finished jobs, with how many jobs each finished */
	jobsPerExecution: Map<string, number>;
}

/**
 * Queues `jobs` document_chunk jobs (documents of `chars` characters) tagged `tag`, then drains them with
 * `runners` concurrent loops POSTing the runner copy at `baseUrl` until a run answers [] (nothing claimed).
 * @throws Refused when a runner answer is not 200 with an array, or when a job is not succeeded with exactly
 *   one run (succeeded, attempt 1) or its document is not chunked completely (the same chunk count as every
 *   other document of the batch: the texts are identical, the last chunk ends at the text's end).
 */
export async function measureWf90(
	pool: Pool,
	baseUrl: string,
	tenantId: string,
	{ jobs, runners, chars, tag }: { jobs: number; runners: number; chars: number; tag: string },
): Promise<Wf90Result> {
	const jobIds = await queueChunkJobs(pool, tenantId, jobs, chars, tag);
	const start = performance.now();
	await Promise.all(
		Array.from({ length: runners }, async () => {
			// every run that claims something finishes ≥ 1 job: `jobs` + 1 POSTs per loop is a hard upper bound
			for (let posts = 0; posts <= jobs; posts++) {
				const res = await fetch(`${baseUrl}/webhook/${RUNNER_HOOK}`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: '{}',
				});
				const text = await res.text();
				let body: unknown;
				try {
					body = JSON.parse(text);
				} catch {
					body = text;
				}
				refuseUnless(
					res.status === 200 && Array.isArray(body),
					`WF90: a runner answered HTTP ${res.status} ${text.slice(0, 200)}`,
				);
				if ((body as unknown[]).length === 0) return;
			}
		}),
	);
	const seconds = secondsSince(start);
	const { rows: status } = await pool.query<{ status: string; attempts: number; n: number }>(
		'SELECT status, attempts, count(*)::int AS n FROM ops.jobs WHERE id = ANY($1) GROUP BY 1, 2 ORDER BY 1, 2',
		[jobIds],
	);
	const done = status.find((s) => s.status === 'succeeded' && s.attempts === 1)?.n ?? 0;
	refuseUnless(
		done === jobs,
		`WF90: ${done} of ${jobs} jobs succeeded on the first attempt (${JSON.stringify(status)})`,
	);
	const { rows: runs } = await pool.query<{ job_id: string; status: string; attempt: number; worker: string }>(
		'SELECT job_id::text, status, attempt, worker FROM ops.job_runs WHERE job_id = ANY($1)',
		[jobIds],
	);
	const good = runs.filter((r) => r.status === 'succeeded' && r.attempt === 1);
	refuseUnless(
		runs.length === jobs && good.length === jobs && new Set(good.map((r) => r.job_id)).size === jobs,
		`WF90: ${runs.length} job_runs rows, ${good.length} succeeded first attempts for ${jobs} jobs`,
	);
	const { rows: chunked } = await pool.query<{ docs: number; shapes: number; complete: boolean }>(
		`SELECT count(*)::int AS docs, count(DISTINCT per.n)::int AS shapes, bool_and(per.last_end = length(d.text)) AS complete
		 FROM ops.jobs j JOIN content.documents d ON d.id = (j.payload->>'document_id')::bigint
		 JOIN LATERAL (SELECT count(*)::int AS n, max(char_end) AS last_end FROM kg.chunks c WHERE c.document_id = d.id) per ON per.n > 0
		 WHERE j.id = ANY($1)`,
		[jobIds],
	);
	refuseUnless(
		chunked[0].docs === jobs && chunked[0].shapes === 1 && chunked[0].complete === true,
		`WF90: documents not chunked once and completely (${JSON.stringify(chunked[0])})`,
	);
	const jobsPerExecution = new Map<string, number>();
	for (const r of good) {
		const id = r.worker.replace(/^wf90-/, '');
		jobsPerExecution.set(id, (jobsPerExecution.get(id) ?? 0) + 1);
	}
	return { rate: jobs / seconds, jobsPerExecution };
}
