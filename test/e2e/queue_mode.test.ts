/**
 * The contracts on n8n 2.4.8 in queue mode (issue 15): 1 main (webhooks) + 2 `n8n worker` processes on the
 * machine's Redis, n8n's own database on PostgreSQL (scripts/lib/n8nQueue.js). WF10 deliveries with
 * duplicates store and enqueue each distinct update once; WF90 runs on both workers at once run each job
 * once; a worker killed with SIGKILL mid-jobs loses nothing once Release Stale has run, and a restarted
 * worker picks up again. Which worker ran an execution comes from the worker transcripts ("Worker started
 * execution <id>"): n8n 2.4.8's execution_entity has no worker column. Skipped (with the reason) when Redis
 * does not answer at 127.0.0.1:6379 (REDIS_HOST / REDIS_PORT).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from '@jest/globals';
import { testSkipIf } from '../helpers/skip';
import { queueChunkJobs } from '../helpers/chunkJobs';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { mapLimit, WORKFLOWS } from '../helpers/n8n';
import { startQueueN8n, writeWorkflow, type RunningQueueN8n } from '../helpers/n8nQueue';
import { countBy, executionsOf, rolesOf, waitFor as waitUntil } from '../helpers/queueRecords';
import { assertStoredOnce, deliveriesWithDuplicates } from '../helpers/wf10Deliveries';
import { wf10Saving } from '../helpers/wf10Saving';
import { wf90Copy } from '../helpers/wf90Runner';

/** Why these tests skip: Redis does not answer PING (probed before the files load, test/jest/globalSetup.ts). */
const skipReason = process.env.CONTRACTS_TEST_REDIS_SKIP || null;
let db: TestDatabase;
let n8n: RunningQueueN8n;
let bot: Awaited<ReturnType<typeof seedBot>>;
let runnerFile: string;
let wf10File: string;

/**
 * WF90 as shipped, but started by webhooks instead of its schedules (so the test decides when and how many
 * runs overlap): POST test/wf90-run runs Runner Settings → Claim Jobs → Run Worker → Finish Job, answering
 * every Run Summary item ([] when nothing was claimed); POST test/wf90-release runs Release Stale with `older_than_seconds` from the body.
 * Claims only document_chunk jobs (WF40).
 */
function runnerCopy() {
	return wf90Copy({
		id: 'WF90QueueTest',
		name: 'WF90 — Job Runner (queue-mode test copy)',
		jobTypes: 'document_chunk',
		webhooks: { run: 'test/wf90-run', release: 'test/wf90-release' },
	});
}

beforeAll(async () => {
	if (skipReason) return;
	db = await setupDatabase();
	bot = await seedBot(db.pool, 'queue_bot', 'queue-Secret_123');
	runnerFile = writeWorkflow(runnerCopy());
	wf10File = writeWorkflow(wf10Saving());
	n8n = await startQueueN8n(
		db.url,
		[
			...['WF99e_catch_all.json', 'WF99_global_err_handler.json', 'WF40_chunker.json'].map((f) =>
				path.join(WORKFLOWS, f),
			),
			wf10File,
			runnerFile,
		],
		['telegram', 'test/wf90-run', 'test/wf90-release'],
		{ workers: 2, concurrency: 10 },
	);
}, 20 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await db?.drop();
	for (const file of [runnerFile, wf10File]) if (file) fs.rmSync(path.dirname(file), { recursive: true, force: true });
});

async function post(pathname: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) {
	const res = await fetch(`${n8n.url}/webhook/${pathname}`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...headers },
		body: JSON.stringify(body),
		signal,
	});
	const text = await res.text();
	try {
		return { status: res.status, body: JSON.parse(text) };
	} catch {
		return { status: res.status, body: text as any };
	}
}

/** n8n's own records: the execution ids of `workflowId`. */
async function executionIds(workflowId: string): Promise<string[]> {
	return (await executionsOf(n8n, workflowId)).map((e) => e.id);
}

function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000, everyMs = 500): Promise<T> {
	return waitUntil(what, probe, timeoutMs, everyMs, async () => n8n.logs());
}

testSkipIf(skipReason)(
	'500 WF10 deliveries (350 distinct, shuffled) at 16 clients → 350 raw, key and job rows; both workers ran executions',
	async () => {
		const { distinct, deliveries } = deliveriesWithDuplicates(350, 150);
		const started = Date.now();
		const answers = await mapLimit(deliveries, 16, (update) => postUpdate(update));
		console.log(`500 deliveries in ${Date.now() - started} ms`);
		const failed = answers.filter((a) => a.status !== 200);
		assert.equal(failed.length, 0, `${failed.length} failed, e.g. ${JSON.stringify(failed[0])}\n${n8n.logs()}`);
		assert.equal(answers.filter((a) => a.body.duplicate === false).length, 350, 'one first delivery per update');
		await assertStoredOnce(db.pool, bot, distinct, deliveries, answers);
		// n8n's records: one WF10 execution per delivery, each started by exactly one worker, both workers busy
		const executions = await executionIds('WF10TgIngest');
		assert.equal(executions.length, 500, 'one n8n execution per delivery');
		const perWorker = countBy([...rolesOf(n8n, executions).values()]);
		console.log(`WF10 executions per worker: ${JSON.stringify(perWorker)}`);
		assert.deepEqual(Object.keys(perWorker).sort(), ['worker-1', 'worker-2']);
		assert.equal(n8n.main.transcript().match(/Worker started execution/g), null, 'main ran no execution itself');
	},
	600_000,
);

function postUpdate(update: unknown) {
	return post(`telegram?bot=${bot.botKey}`, update, { 'X-Telegram-Bot-Api-Secret-Token': bot.secret });
}

/** `count` extracted documents (`chars` characters each) and one document_chunk job per document; returns the job ids. */
function chunkJobs(count: number, chars: number, tag: string): Promise<number[]> {
	return queueChunkJobs(db.pool, bot.tenantId, count, chars, tag);
}

interface RunRow {
	job_id: string;
	status: string;
	worker: string;
}

async function runsOf(jobIds: number[]): Promise<RunRow[]> {
	return (
		await db.pool.query('SELECT job_id::text, status, worker FROM ops.job_runs WHERE job_id = ANY($1) ORDER BY id', [
			jobIds,
		])
	).rows;
}

async function statusesOf(jobIds: number[]): Promise<Record<string, number>> {
	const { rows } = await db.pool.query(
		'SELECT status, count(*)::int AS n FROM ops.jobs WHERE id = ANY($1) GROUP BY 1 ORDER BY 1',
		[jobIds],
	);
	return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Every job succeeded with exactly one succeeded run and `extraRuns` other runs (all `retry`); each document has the same, complete chunks. */
async function assertExactlyOnce(jobIds: number[], extraRuns: number) {
	assert.deepEqual(await statusesOf(jobIds), { succeeded: jobIds.length });
	const runs = await runsOf(jobIds);
	const succeeded = runs.filter((r) => r.status === 'succeeded');
	assert.equal(succeeded.length, jobIds.length, 'one succeeded run per job');
	assert.equal(new Set(succeeded.map((r) => r.job_id)).size, jobIds.length, 'no job succeeded twice');
	assert.deepEqual(
		countBy(runs.filter((r) => r.status !== 'succeeded').map((r) => r.status)),
		extraRuns ? { retry: extraRuns } : {},
	);
	// identical texts: every document has the same chunks, ending at the text's end (none partial, none missing)
	const chunks = await db.pool.query(
		`SELECT count(*)::int AS docs, count(DISTINCT per.n)::int AS shapes, bool_and(per.last_end = length(d.text)) AS complete
		 FROM ops.jobs j JOIN content.documents d ON d.id = (j.payload->>'document_id')::bigint
		 JOIN LATERAL (SELECT count(*)::int AS n, max(char_end) AS last_end FROM kg.chunks c WHERE c.document_id = d.id) per ON per.n > 0
		 WHERE j.id = ANY($1)`,
		[jobIds],
	);
	assert.deepEqual(
		chunks.rows[0],
		{ docs: jobIds.length, shapes: 1, complete: true },
		'every document chunked once, completely',
	);
}

/** Worker role of the n8n execution behind each job run (ops.job_runs.worker is WF90's "wf90-<execution id>"). */
function runWorkers(runs: RunRow[]): Map<string, string> {
	const executions = [...new Set(runs.map((r) => r.worker.replace(/^wf90-/, '')))];
	return rolesOf(n8n, executions);
}

testSkipIf(skipReason)(
	'6 WF90 runs at once over 300 queued jobs → on both workers, every job run exactly once, none lost',
	async () => {
		const jobIds = await chunkJobs(300, 3000, 'q2');
		const started = Date.now();
		let rounds = 0;
		while ((await statusesOf(jobIds)).queued && rounds++ < 10) {
			const answers = await Promise.all(Array.from({ length: 6 }, () => post('test/wf90-run', {})));
			for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.body));
		}
		console.log(`300 jobs in ${rounds} round(s) of 6 runs, ${Date.now() - started} ms`);
		await assertExactlyOnce(jobIds, 0);
		const runs = await runsOf(jobIds);
		const workers = runWorkers(runs);
		const perWorker = countBy(runs.map((r) => workers.get(r.worker.replace(/^wf90-/, ''))));
		console.log(`job runs per worker: ${JSON.stringify(perWorker)} over ${workers.size} WF90 executions`);
		assert.deepEqual(Object.keys(perWorker).sort(), ['worker-1', 'worker-2']);
		assert.ok(workers.size >= 6, `at least 6 WF90 executions claimed jobs (${workers.size})`);
	},
	300_000,
);

testSkipIf(skipReason)(
	'a worker killed with SIGKILL mid-jobs → its jobs stay running; after Release Stale everything finishes exactly once; the restarted worker picks up again',
	async () => {
		const jobIds = await chunkJobs(300, 40_000, 'q3');
		const victim = n8n.workers[0];
		const inFlight = new AbortController();
		const pending = Array.from({ length: 6 }, () =>
			post('test/wf90-run', {}, {}, inFlight.signal).catch(() => undefined),
		);
		// kill worker-1 in the middle of a batch: jobs it claimed are running and some of them already chunked
		// (WF90 runs every item's worker sub-workflow before Finish Job runs for the batch)
		const atKill = await waitFor(
			'worker-1 mid-batch',
			async () => {
				const mine = victim.startedExecutions().map((id) => `wf90-${id}`);
				const { rows } = await db.pool.query(
					`SELECT count(*)::int AS running,
			        count(*) FILTER (WHERE EXISTS (SELECT 1 FROM kg.chunks c WHERE c.document_id = (j.payload->>'document_id')::bigint))::int AS worked
			 FROM ops.jobs j WHERE j.id = ANY($1) AND j.status = 'running' AND j.locked_by = ANY($2)`,
					[jobIds, mine],
				);
				return rows[0].worked > 0 ? rows[0] : undefined;
			},
			120_000,
			100,
		);
		await n8n.killWorker(0);
		const killedExecutions = new Set(victim.startedExecutions().map((id) => `wf90-${id}`));
		// the surviving worker finishes its runs; the victim's claimed jobs stay running
		const stuck = await waitFor(
			"only the dead worker's jobs still running",
			async () => {
				const running = (
					await db.pool.query("SELECT id::text, locked_by FROM ops.jobs WHERE id = ANY($1) AND status = 'running'", [
						jobIds,
					])
				).rows;
				return running.every((r) => killedExecutions.has(r.locked_by)) ? running : undefined;
			},
			180_000,
		);
		console.log(
			`at the kill worker-1 held ${atKill.running} running jobs, ${atKill.worked} of them already chunked; ${stuck.length} jobs left running`,
		);
		assert.ok(stuck.length > 0, 'the kill left jobs running');
		inFlight.abort();
		await Promise.all(pending);
		await n8n.startWorker(0);
		const released = await post('test/wf90-release', { older_than_seconds: 1 });
		assert.equal(released.status, 200, JSON.stringify(released.body));
		assert.deepEqual(
			await statusesOf(stuck.map((r) => Number(r.id))),
			{ queued: stuck.length },
			'released back to the queue',
		);
		const restartedBefore = new Set(victim.startedExecutions());
		let rounds = 0;
		while ((await statusesOf(jobIds)).queued && rounds++ < 10) {
			const answers = await Promise.all(Array.from({ length: 6 }, () => post('test/wf90-run', {})));
			for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.body));
		}
		await assertExactlyOnce(jobIds, stuck.length);
		const afterRestart = victim.startedExecutions().filter((id) => !restartedBefore.has(id));
		console.log(`restarted worker-1 ran ${afterRestart.length} WF90 execution(s) after the restart`);
		assert.ok(afterRestart.length > 0, 'the restarted worker picked up executions');
	},
	420_000,
);
