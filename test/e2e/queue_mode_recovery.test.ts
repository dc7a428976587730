/**
 * Issue 15, part 3: recovery in queue mode with n8n's full process layout — 1 main (triggers, schedules,
 * N8N_DISABLE_PRODUCTION_MAIN_PROCESS), 1 `n8n webhook` process (production webhooks), 2 `n8n worker`
 * processes (scripts/lib/n8nQueue.js, createQueueCluster({ webhooks: 1 })):
 *  - WF10 deliveries with duplicates sent to the webhook process → exactly the distinct count in raw, keys
 *    and jobs; every execution ran on a worker (neither main nor the webhook process ran one); main itself
 *    no longer answers the production webhook;
 *  - a worker killed with SIGKILL while MaaS pipeline steps (M11–M14, stand-in model answering after 2 s) run
 *    on it, two waves of runs so that analysis and assembly steps are both under way → the runs it had
 *    captured stay in progress (and runs whose notification it had taken stay waiting); the executions it held
 *    that n8n then ends (crashed by the restarted worker's recovery from its event log, or failed by main as
 *    stalled) get one catch-all row each (WF99e) and no other row is written; after the Sweep (a
 *    webhook copy of M15, stuck/lost after 1 s) every run ends COMPLETED exactly once, no result column is
 *    written twice (a test trigger logs every write of maas.pipeline_runs), the Sweep released exactly the
 *    dead worker's runs, each step called the model once per run (+ at most once per run killed in it), no
 *    other ops.errors row, and the restarted worker picks up work again;
 *  - the shipped WF90's schedule (Every 10 Seconds, as shipped; its copy claims only document_chunk jobs)
 *    fires on main only — one execution per tick — and every scheduled execution ran on a worker.
 * Which worker ran an execution comes from the worker transcripts ("Worker started execution <id>").
 * Skipped (with the reason) when Redis does not answer at 127.0.0.1:6379 (REDIS_HOST / REDIS_PORT).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll } from '@jest/globals';
import { testSkipIf } from '../helpers/skip';
import { Client } from 'pg';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { bearer, mint, testSecret } from '../helpers/jwt';
import { llmCredential, normalModel, stepOf } from '../helpers/maasModel';
import { ModelStandIn } from '../helpers/modelStandIn';
import { jwtCredential, mapLimit, WORKFLOWS } from '../helpers/n8n';
import { startQueueN8n, writeWorkflow, type RunningQueueN8n } from '../helpers/n8nQueue';
import { countBy, executionsOf, rolesOf, waitFor as waitUntil } from '../helpers/queueRecords';
import { realisticUpdates } from '../helpers/updates';
import { assertStoredOnce, deliveriesWithDuplicates } from '../helpers/wf10Deliveries';
import { wf10Saving } from '../helpers/wf10Saving';
import { RELEASE_SCHEDULE, wf90Copy } from '../helpers/wf90Runner';

/** The stand-in model with an adjustable delay before each answer (so a SIGKILL lands mid-step); `pending` counts requests not yet answered. */
class SlowModel extends ModelStandIn {
	delayMs = 0;
	pending = 0;

	protected override handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
		if (this.delayMs <= 0) {
			super.handle(req, res, raw);
			return;
		}
		this.pending++;
		setTimeout(() => {
			this.pending--;
			super.handle(req, res, raw);
		}, this.delayMs);
	}
}

/** Why these tests skip: Redis does not answer PING (probed before the files load, test/jest/globalSetup.ts). */
const skipReason = process.env.CONTRACTS_TEST_REDIS_SKIP || null;
let db: TestDatabase;
let n8n: RunningQueueN8n;
let bot: Awaited<ReturnType<typeof seedBot>>;
const files: string[] = [];
const model = new SlowModel();
const SECRET = testSecret();
const MAAS = path.join(WORKFLOWS, 'maas');
const SCHEDULED_WF90 = 'WF90QueueSched';

/** The shipped M15 Sweep started by POST test/m15-sweep instead of every minute, with stuck/lost after (seconds) from the body. */
function sweepCopy() {
	const m15 = JSON.parse(fs.readFileSync(path.join(MAAS, 'M15_sweep.json'), 'utf8'));
	const nodes = m15.nodes.map((n: { name: string; position: number[]; parameters: Record<string, unknown> }) => {
		if (n.name === 'Every Minute') {
			return {
				id: '15e00000-0000-4000-8000-0000000000d1',
				name: 'Every Minute',
				type: 'n8n-nodes-base.webhook',
				typeVersion: 2.1,
				position: n.position,
				webhookId: '15e00000-0000-4000-8000-0000000000e1',
				parameters: {
					httpMethod: 'POST',
					path: 'test/m15-sweep',
					responseMode: 'lastNode',
					responseData: 'allEntries',
					options: {},
				},
			};
		}
		if (n.name === 'Sweep') {
			return {
				...n,
				parameters: {
					...n.parameters,
					stuckAfterSeconds: '={{ $json.body.stuck_after_seconds }}',
					lostAfterSeconds: '={{ $json.body.lost_after_seconds }}',
				},
			};
		}
		return n;
	});
	return { ...m15, id: 'M15QueueSweep', name: 'M15 — MaaS Sweep (queue-mode test copy)', nodes };
}

/** The shipped WF90, schedules and all, claiming only document_chunk jobs (WF10's telegram_update jobs have no WF20 here). */
function scheduledRunner() {
	return wf90Copy({
		id: SCHEDULED_WF90,
		name: 'WF90 — Job Runner (queue-mode schedule copy)',
		jobTypes: 'document_chunk',
	});
}

beforeAll(async () => {
	if (skipReason) return;
	db = await setupDatabase();
	bot = await seedBot(db.pool, 'queue_rec_bot', 'queueRec-Secret_123');
	await model.up();
	model.respond = normalModel;
	files.push(writeWorkflow(wf10Saving()), writeWorkflow(sweepCopy()), writeWorkflow(scheduledRunner()));
	const maas = fs
		.readdirSync(MAAS)
		.filter((f) => f.endsWith('.json') && !['M15_sweep.json', 'M01_query_status.json', 'M17_push.json'].includes(f))
		.map((f) => path.join(MAAS, f));
	n8n = await startQueueN8n(
		db.url,
		[
			...['WF99e_catch_all.json', 'WF99_global_err_handler.json', 'WF40_chunker.json'].map((f) =>
				path.join(WORKFLOWS, f),
			),
			...maas,
			...files,
		],
		['telegram', 'api/query', 'test/m15-sweep'],
		{
			workers: 2,
			webhooks: 1,
			concurrency: 10,
			extraCredentials: [llmCredential(model.url), jwtCredential(SECRET)],
		},
	);
}, 20 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await model.down();
	await db?.drop();
	for (const file of files) fs.rmSync(path.dirname(file), { recursive: true, force: true });
});

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
	const res = await fetch(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...headers },
		body: JSON.stringify(body),
	});
	const text = await res.text();
	try {
		return { status: res.status, body: JSON.parse(text) };
	} catch {
		return { status: res.status, body: text as any };
	}
}

/** Of `ids`, the executions whose run data has the Release Stale schedule's trigger ("Every 20 Seconds") (n8n's execution_data keeps the run data as text). */
async function releaseScheduleExecutions(ids: string[]): Promise<Set<string>> {
	const client = new Client({ connectionString: n8n.n8nDatabaseUrl });
	await client.connect();
	try {
		const { rows } = await client.query(
			`SELECT "executionId"::text AS id FROM execution_data WHERE "executionId" = ANY($1::int[]) AND data LIKE $2`,
			[ids, `%"${RELEASE_SCHEDULE}"%`],
		);
		return new Set(rows.map((r) => r.id));
	} finally {
		await client.end();
	}
}

/** The execution ids `p` logged as put on the queue ("Enqueued execution <id> (job <n>)"). */
function enqueuedBy(p: { transcript(): string }): Set<string> {
	return new Set([...p.transcript().matchAll(/Enqueued execution (\d+) \(job/g)].map((m) => m[1]));
}

/** Neither main nor the webhook process ran an execution itself. */
function assertOnlyWorkersExecuted() {
	for (const p of [n8n.main, ...n8n.webhooks])
		assert.equal(p.transcript().match(/Worker started execution/g), null, `${p.role} ran no execution itself`);
}

function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000, everyMs = 500): Promise<T> {
	return waitUntil(what, probe, timeoutMs, everyMs, async () => {
		const runs = (
			await db.pool.query(
				'SELECT status, archived_at IS NOT NULL AS archived, count(*)::int AS n FROM maas.pipeline_runs GROUP BY 1, 2',
			)
		).rows;
		return `runs: ${JSON.stringify(runs)}\n${n8n.logs()}`;
	});
}

testSkipIf(skipReason)(
	'200 WF10 deliveries (140 distinct) at 12 clients to the webhook process → 140 raw, key and job rows; every execution ran on a worker; main no longer answers the production webhook',
	async () => {
		assert.notEqual(n8n.webhookUrl, n8n.url, 'webhooks are served by the webhook process');
		const { distinct, deliveries } = deliveriesWithDuplicates(140, 60);
		const headers = { 'X-Telegram-Bot-Api-Secret-Token': bot.secret };
		const started = Date.now();
		const answers = await mapLimit(deliveries, 12, (update) =>
			post(`${n8n.webhookUrl}/webhook/telegram?bot=${bot.botKey}`, update, headers),
		);
		console.log(`200 deliveries through the webhook process in ${Date.now() - started} ms`);
		const failed = answers.filter((a) => a.status !== 200);
		assert.equal(failed.length, 0, `${failed.length} failed, e.g. ${JSON.stringify(failed[0])}\n${n8n.logs()}`);
		assert.equal(answers.filter((a) => a.body.duplicate === false).length, 140, 'one first delivery per update');
		await assertStoredOnce(db.pool, bot, distinct, deliveries, answers);
		const executions = (await executionsOf(n8n, 'WF10TgIngest')).map((e) => e.id);
		assert.equal(executions.length, 200, 'one n8n execution per delivery');
		const perWorker = countBy([...rolesOf(n8n, executions).values()]);
		console.log(`WF10 executions per worker: ${JSON.stringify(perWorker)}`);
		assert.deepEqual(Object.keys(perWorker).sort(), ['worker-1', 'worker-2']);
		assertOnlyWorkersExecuted();
		const [byWebhook, byMain] = [enqueuedBy(n8n.webhooks[0]), enqueuedBy(n8n.main)];
		assert.deepEqual(
			executions.filter((id) => !byWebhook.has(id) || byMain.has(id)),
			[],
			'the webhook process enqueued every delivery, main none',
		);
		// N8N_DISABLE_PRODUCTION_MAIN_PROCESS: main has no /webhook/… route; nothing is written
		const refused = await post(`${n8n.url}/webhook/telegram?bot=${bot.botKey}`, realisticUpdates[0](), headers);
		assert.equal(refused.status, 404, `main answered ${refused.status}: ${JSON.stringify(refused.body).slice(0, 200)}`);
		assert.equal((await db.pool.query('SELECT count(*)::int AS n FROM raw.telegram_updates')).rows[0].n, 140);
	},
	300_000,
);

/** MaaS runs for `users` (one each, so no run waits for another user's archive) through M00 on the webhook process; returns the run ids. */
async function askAll(users: string[], tag: string): Promise<string[]> {
	const answers = await mapLimit(users, 8, async (user, i) =>
		post(
			`${n8n.webhookUrl}/webhook/api/query`,
			{ query: `${tag} question ${i} about recovery` },
			bearer(mint(user, { secret: SECRET })),
		),
	);
	assert.deepEqual(
		countBy(answers.map((a) => `${a.status} ${a.body.status}`)),
		{ [`201 processing`]: users.length },
		JSON.stringify(answers.find((a) => a.status !== 201)),
	);
	return answers.map((a) => a.body.request_id as string);
}

/** (status, archived) of each run, as "STATUS/archived|open" → count. */
async function runStates(ids: string[]): Promise<Record<string, number>> {
	const { rows } = await db.pool.query(
		'SELECT status, archived_at IS NOT NULL AS archived FROM maas.pipeline_runs WHERE id = ANY($1)',
		[ids],
	);
	return countBy(rows.map((r) => `${r.status}/${r.archived ? 'archived' : 'open'}`));
}

const IN_PROGRESS = ['ANALYZING', 'ASSEMBLING', 'RESPONDING'];

testSkipIf(skipReason)(
	'a worker killed with SIGKILL mid-step (MaaS pipeline, slow model) → its runs stay in progress; after the Sweep every run COMPLETED exactly once, no result written twice; the restarted worker picks up again',
	async () => {
		// every write of a run, with which result columns it changed (the pipeline's own statements, unchanged)
		await db.pool
			.query(`CREATE TABLE public.e2e_run_writes (id bigserial PRIMARY KEY, run_id uuid, old_status text, new_status text, transition text,
		analysis boolean, draft boolean, payload boolean, answer boolean)`);
		await db.pool.query(`CREATE FUNCTION public.e2e_log_run_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
		INSERT INTO public.e2e_run_writes (run_id, old_status, new_status, transition, analysis, draft, payload, answer)
		VALUES (NEW.id, OLD.status, NEW.status, NEW.previous_transition, OLD.analysis_result IS DISTINCT FROM NEW.analysis_result,
		        OLD.draft_context IS DISTINCT FROM NEW.draft_context, OLD.final_context_payload IS DISTINCT FROM NEW.final_context_payload,
		        OLD.final_answer IS DISTINCT FROM NEW.final_answer);
		RETURN NULL; END $$`);
		await db.pool.query(
			'CREATE TRIGGER e2e_log_run_write AFTER UPDATE ON maas.pipeline_runs FOR EACH ROW EXECUTE FUNCTION public.e2e_log_run_write()',
		);
		const victim = n8n.workers[0];
		model.delayMs = 2000;
		const startedBefore = victim.startedExecutions().length;
		const started = Date.now();
		// two waves, so that at the kill runs are in different steps: the first wave assembling or later, the second analysing
		const inStates = async (ids: string[], states: string[]) =>
			(
				await db.pool.query(
					'SELECT count(*)::int AS n FROM maas.pipeline_runs WHERE id = ANY($1) AND status = ANY($2)',
					[ids, states],
				)
			).rows[0].n as number;
		const wave1 = await askAll(
			Array.from({ length: 8 }, (_, i) => `rec-user-${i + 1}`),
			'first',
		);
		await waitFor(
			'the first wave past analysis',
			async () => ((await inStates(wave1, ['ANALYZED', 'ASSEMBLING', 'READY', 'RESPONDING'])) >= 4 ? true : undefined),
			60_000,
			100,
		);
		const wave2 = await askAll(
			Array.from({ length: 8 }, (_, i) => `rec-user-${i + 9}`),
			'first',
		);
		const first = [...wave1, ...wave2];
		// kill worker-1 once steps of both waves are under way and it has started executions of them
		const atKill = await waitFor(
			'steps in progress on worker-1',
			async () => {
				const [analysing, later] = [
					await inStates(first, ['ANALYZING']),
					await inStates(first, ['ASSEMBLING', 'RESPONDING']),
				];
				return analysing >= 2 && later >= 2 && victim.startedExecutions().length > startedBefore
					? { analysing, later }
					: undefined;
			},
			60_000,
			100,
		);
		const executionsBeforeKill = new Set(victim.startedExecutions());
		await n8n.killWorker(0);
		const killedAt = Date.now();
		// restart it at once; meanwhile worker-2 (and then worker-1) finish what they hold and the model answers the dead connections
		const restarted = n8n.startWorker(0);
		let last = '';
		let stableSince = Date.now();
		const stuck = await waitFor(
			'the surviving work settled',
			async () => {
				const { rows } = await db.pool.query(
					'SELECT id, status, updated_at FROM maas.pipeline_runs WHERE id = ANY($1) ORDER BY id',
					[first],
				);
				const now = JSON.stringify(rows);
				if (now !== last || model.pending > 0) {
					last = now;
					stableSince = Date.now();
					return undefined;
				}
				return Date.now() - stableSince >= 4000 ? rows.filter((r) => IN_PROGRESS.includes(r.status)) : undefined;
			},
			120_000,
			250,
		);
		await restarted;
		const notDone = await runStates(first);
		console.log(
			`at the kill: ${JSON.stringify(atKill)}; settled ${Date.now() - killedAt} ms later: ${JSON.stringify(notDone)}; ${stuck.length} run(s) stuck in progress`,
		);
		assert.ok(stuck.length > 0, 'the kill left runs captured by the dead worker in progress');
		// the Sweep (on a worker, started through the webhook process): stuck → released, waiting/unarchived → re-emitted
		model.delayMs = 100;
		const restartedBefore = new Set(victim.startedExecutions());
		const swept = await post(`${n8n.webhookUrl}/webhook/test/m15-sweep`, {
			stuck_after_seconds: 1,
			lost_after_seconds: 1,
		});
		assert.equal(swept.status, 200, JSON.stringify(swept.body));
		await waitFor(
			'every first-batch run completed and archived after the Sweep',
			async () => {
				const states = await runStates(first);
				return states['COMPLETED/archived'] === first.length ? states : undefined;
			},
			120_000,
		);
		// the cluster keeps working: a second batch, both workers taking part
		const second = await askAll(
			Array.from({ length: 6 }, (_, i) => `rec-user-b${i + 1}`),
			'second',
		);
		await waitFor(
			'every second-batch run completed and archived',
			async () => {
				const states = await runStates(second);
				return states['COMPLETED/archived'] === second.length ? states : undefined;
			},
			120_000,
		);
		console.log(`22 runs completed and archived in ${Date.now() - started} ms`);
		const ids = [...first, ...second];
		const writes = await db.pool.query(
			`SELECT r.id,
		        count(w.id) FILTER (WHERE w.analysis)::int AS analysis, count(w.id) FILTER (WHERE w.draft)::int AS draft,
		        count(w.id) FILTER (WHERE w.payload)::int AS payload, count(w.id) FILTER (WHERE w.answer)::int AS answer,
		        count(w.id) FILTER (WHERE w.new_status = 'COMPLETED' AND w.old_status <> 'COMPLETED')::int AS completed,
		        count(w.id) FILTER (WHERE w.transition = 'RELEASE' AND w.old_status IS DISTINCT FROM w.new_status)::int AS released
		 FROM maas.pipeline_runs r LEFT JOIN public.e2e_run_writes w ON w.run_id = r.id WHERE r.id = ANY($1) GROUP BY r.id`,
			[ids],
		);
		assert.deepEqual(
			countBy(writes.rows.map((r) => `${r.analysis}/${r.draft}/${r.payload}/${r.answer}/${r.completed}`)),
			{ '1/1/1/1/1': ids.length },
			'analysis_result / draft_context / final_context_payload / final_answer written once, COMPLETED reached once, per run',
		);
		const releasedRuns = writes.rows
			.filter((r) => r.released > 0)
			.map((r) => r.id)
			.sort();
		assert.deepEqual(
			releasedRuns,
			stuck.map((r) => r.id).sort(),
			'the Sweep released exactly the runs the dead worker held',
		);
		assert.ok(
			writes.rows.every((r) => r.released <= 1),
			'each released once',
		);
		const logs = await db.pool.query(
			`SELECT (SELECT count(*) FROM maas.raw_logs l WHERE l.run_id = r.id AND l.message_type = 'user_query')::int AS asked,
		        (SELECT count(*) FROM maas.raw_logs l WHERE l.run_id = r.id AND l.message_type = 'assistant_response')::int AS answered,
		        (SELECT count(*) FROM maas.lsm_storage s WHERE s.run_id = r.id)::int AS summaries
		 FROM maas.pipeline_runs r WHERE r.id = ANY($1)`,
			[ids],
		);
		assert.deepEqual(
			countBy(logs.rows.map((r) => `${r.asked}/${r.answered}/${r.summaries}`)),
			{ '1/1/1': ids.length },
			'user_query/assistant_response/lsm_storage per run',
		);
		const runs = (
			await db.pool.query('SELECT user_query, final_answer FROM maas.pipeline_runs WHERE id = ANY($1)', [ids])
		).rows;
		for (const r of runs)
			assert.ok(
				String(r.final_answer).startsWith('Answer to: <context>## Element 1: query\n' + r.user_query),
				r.final_answer,
			);
		// no step failed; the only rows are the catch-all's (WF99e, issue 25 §2), one per execution the killed
		// worker held that n8n then ended: `crashed` by the restarted worker's recovery from its event log
		// (sub-executions included), or `error` when main failed its stalled job
		const errors = (
			await db.pool.query("SELECT source, message, details->>'execution_id' AS execution FROM ops.errors")
		).rows;
		assert.deepEqual(
			errors.filter((e) => e.source !== 'WF99e catch-all'),
			[],
			'no step failed',
		);
		assert.equal(new Set(errors.map((e) => e.execution)).size, errors.length, 'one row per execution');
		const ended = new Map<string, string>();
		const n8nDb = new Client({ connectionString: n8n.n8nDatabaseUrl });
		await n8nDb.connect();
		try {
			const { rows } = await n8nDb.query('SELECT id::text, status FROM execution_entity WHERE id = ANY($1::int[])', [
				errors.map((e) => e.execution),
			]);
			for (const r of rows) ended.set(r.id, r.status);
		} finally {
			await n8nDb.end();
		}
		for (const e of errors)
			assert.ok(
				['crashed', 'error'].includes(ended.get(e.execution) ?? ''),
				`${JSON.stringify(e)}: n8n says ${ended.get(e.execution)}`,
			);
		console.log(
			`catch-all rows for the killed worker's executions: ${errors.length} (${JSON.stringify(countBy(errors.map((e) => e.message)))})`,
		);
		// each step called the model once per run, plus at most once more for each run killed in that step
		const calls = countBy(model.requests.map((r) => stepOf(r.body)));
		const killedIn = countBy(stuck.map((r) => r.status));
		console.log(`model calls per step: ${JSON.stringify(calls)}; runs killed per step: ${JSON.stringify(killedIn)}`);
		for (const [step, state] of [
			['analyzer', 'ANALYZING'],
			['assembler', 'ASSEMBLING'],
			['responder', 'RESPONDING'],
		]) {
			assert.ok(
				calls[step] >= ids.length && calls[step] <= ids.length + (killedIn[state] ?? 0),
				`${step}: ${calls[step]} calls for ${ids.length} runs, ${killedIn[state] ?? 0} killed in ${state}`,
			);
		}
		const afterRestart = victim
			.startedExecutions()
			.filter((id) => !restartedBefore.has(id) && !executionsBeforeKill.has(id));
		console.log(`restarted worker-1 started ${afterRestart.length} execution(s) after the Sweep`);
		assert.ok(afterRestart.length > 0, 'the restarted worker picked up executions');
		assertOnlyWorkersExecuted();
	},
	300_000,
);

/** `count` extracted documents and one document_chunk job each; returns the job ids. */
async function chunkJobs(count: number, tag: string): Promise<number[]> {
	const { rows } = await db.pool.query(
		`WITH d AS (
		   INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status)
		   SELECT $1, 'url', $2 || g, -100, 'group', 'a short text about schedules and workers. ' || g, 'done' FROM generate_series(1, $3::int) g RETURNING id, source_key)
		 INSERT INTO ops.jobs (tenant_id, job_type, payload, dedup_key)
		 SELECT $1, 'document_chunk', jsonb_build_object('tenant_id', $1::text, 'document_id', d.id), 'chunk:' || d.source_key FROM d
		 RETURNING id`,
		[bot.tenantId, `url:${tag}-`, count],
	);
	return rows.map((r) => Number(r.id));
}

testSkipIf(skipReason)(
	'the shipped WF90 schedule (Every 10 Seconds) fires on main only, one execution per tick, and its executions run on workers: 20 queued jobs run once each',
	async () => {
		const jobIds = await chunkJobs(20, 'sched');
		const started = Date.now();
		await waitFor(
			'the scheduled runner ran the 20 jobs',
			async () => {
				const { rows } = await db.pool.query(
					"SELECT count(*)::int AS n FROM ops.jobs WHERE id = ANY($1) AND status = 'succeeded'",
					[jobIds],
				);
				return rows[0].n === jobIds.length ? true : undefined;
			},
			60_000,
		);
		console.log(`20 jobs run by the schedule ${Date.now() - started} ms after they were queued`);
		const runs = (
			await db.pool.query('SELECT job_id, status, worker FROM ops.job_runs WHERE job_id = ANY($1)', [jobIds])
		).rows;
		assert.deepEqual(countBy(runs.map((r) => r.status)), { succeeded: 20 }, 'one run per job');
		const claimedBy = [...new Set(runs.map((r) => String(r.worker).replace(/^wf90-/, '')))];
		const all = await executionsOf(n8n, SCHEDULED_WF90);
		const ids = all.map((e) => e.id);
		// the shipped WF90 also has "Every 20 Seconds" (Release Stale): its executions share a tick with the 10 s schedule
		const releaseTicks = await releaseScheduleExecutions(ids);
		const executions = all
			.filter((e) => !releaseTicks.has(e.id))
			.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
		assert.ok(
			claimedBy.every((id) => ids.includes(id)),
			'the jobs were claimed by scheduled WF90 executions',
		);
		// one firing per tick over the whole file: never two executions of one tick (a second process firing too)
		const gaps = executions.slice(1).map((e, i) => (e.createdAt.getTime() - executions[i].createdAt.getTime()) / 1000);
		console.log(
			`${executions.length} WF90 executions of Every 10 Seconds (+${releaseTicks.size} of ${RELEASE_SCHEDULE}); gaps (s): min ${Math.min(...gaps)}, max ${Math.max(...gaps)}`,
		);
		assert.ok(executions.length >= 3, `the schedule fired at least 3 times (${executions.length})`);
		assert.ok(
			gaps.every((g) => g >= 5),
			`one execution per 10 s tick: ${JSON.stringify(executions)}`,
		);
		// main put them on the queue (the webhook process none), a worker ran each of those that claimed jobs
		const [byMain, byWebhook] = [enqueuedBy(n8n.main), enqueuedBy(n8n.webhooks[0])];
		assert.deepEqual(
			ids.filter((id) => !byMain.has(id) || byWebhook.has(id)),
			[],
			'main enqueued every scheduled execution',
		);
		const roles = rolesOf(n8n, claimedBy);
		console.log(`job-claiming WF90 executions per worker: ${JSON.stringify(countBy([...roles.values()]))}`);
		assertOnlyWorkersExecuted();
	},
	120_000,
);
