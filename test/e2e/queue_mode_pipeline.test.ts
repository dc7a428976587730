/**
 * Issue 15, part 2: the MaaS pipeline and the Error Pipe on n8n 2.4.8 in queue mode, 1 main + 2 workers
 * (scripts/lib/n8nQueue.js). The Pipeline Trigger (M10) runs on main and only enqueues; every M10 step,
 * M00 request and WF90 run executes on a worker. Checked in PostgreSQL and in n8n's own records:
 *  - 30 runs of 6 users through M00 → each COMPLETED once, each step's model call made once (a CAPTURE_*
 *    won twice would call the model twice), one user_query, one assistant_response and one lsm_storage
 *    summary per run; the M10 executions spread over both workers; one LISTEN connection (main's);
 *  - a WF90 run on a worker whose WF40 sub-workflow fails → one ops.errors row per failing job and the job
 *    outcome of single-process mode (test/e2e/knowledge_chain.test.ts, test/integration/errorPipe*):
 *    retryable → queued again after the 10 s (±20 %) backoff, its run `retry`; retryable without attempts
 *    left → dead; not retryable → failed; the healthy jobs of the same batch succeed;
 *  - a model that always fails → the run FAILED after the retries, one ops.errors row, nothing stuck.
 * Which worker ran an execution comes from the worker transcripts ("Worker started execution <id>").
 * Skipped (with the reason) when Redis does not answer at 127.0.0.1:6379 (REDIS_HOST / REDIS_PORT).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from '@jest/globals';
import { testSkipIf } from '../helpers/skip';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { bearer, mint, testSecret } from '../helpers/jwt';
import { failingModel, llmCredential, normalModel, stepOf } from '../helpers/maasModel';
import { ModelStandIn } from '../helpers/modelStandIn';
import { jwtCredential, mapLimit, WORKFLOWS } from '../helpers/n8n';
import { startQueueN8n, writeWorkflow, type RunningQueueN8n } from '../helpers/n8nQueue';
import { countBy, executionsOf, rolesOf, waitFor as waitUntil } from '../helpers/queueRecords';
import { wf90Copy } from '../helpers/wf90Runner';

/** Why these tests skip: Redis does not answer PING (probed before the files load, test/jest/globalSetup.ts). */
const skipReason = process.env.CONTRACTS_TEST_REDIS_SKIP || null;
let db: TestDatabase;
let n8n: RunningQueueN8n;
let bot: Awaited<ReturnType<typeof seedBot>>;
let runnerFile: string;
const model = new ModelStandIn();
const SECRET = testSecret();
const MAAS = path.join(WORKFLOWS, 'maas');

/** WF90 as shipped, started by POST test/wf90-run instead of its schedules, claiming at most 2 document_chunk jobs (WF40) per run. */
function runnerCopy() {
	return wf90Copy({
		id: 'WF90QueuePipe',
		name: 'WF90 — Job Runner (queue-mode ErrorPipe copy)',
		jobTypes: 'document_chunk',
		limit: 2,
		webhooks: { run: 'test/wf90-run' },
	});
}

beforeAll(async () => {
	if (skipReason) return;
	db = await setupDatabase();
	bot = await seedBot(db.pool, 'queue_pipe_bot', 'queuePipe-Secret_123');
	await model.up();
	model.respond = normalModel;
	runnerFile = writeWorkflow(runnerCopy());
	const maas = fs
		.readdirSync(MAAS)
		// M17 (Pipeline Push: its own port and credential) has its own test, test/e2e/pipeline_push.test.ts
		.filter((f) => f.endsWith('.json') && f !== 'M17_push.json')
		.map((f) => path.join(MAAS, f));
	n8n = await startQueueN8n(
		db.url,
		[
			...['WF99e_catch_all.json', 'WF99_global_err_handler.json', 'WF40_chunker.json'].map((f) =>
				path.join(WORKFLOWS, f),
			),
			...maas,
			runnerFile,
		],
		['api/query', 'test/wf90-run'],
		{
			workers: 2,
			concurrency: 10,
			extraCredentials: [llmCredential(model.url), jwtCredential(SECRET)],
		},
	);
}, 20 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await model.down();
	await db?.drop();
	if (runnerFile) fs.rmSync(path.dirname(runnerFile), { recursive: true, force: true });
});

/** n8n's own records: the execution ids of `workflowId`. */
async function executionIds(workflowId: string): Promise<string[]> {
	return (await executionsOf(n8n, workflowId)).map((e) => e.id);
}

function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000, everyMs = 500): Promise<T> {
	return waitUntil(what, probe, timeoutMs, everyMs, async () => {
		const runs = (await db.pool.query('SELECT status, count(*)::int AS n FROM maas.pipeline_runs GROUP BY 1')).rows;
		return `runs: ${JSON.stringify(runs)}\n${n8n.logs()}`;
	});
}

testSkipIf(skipReason)(
	'30 MaaS runs of 6 users through M00 → each COMPLETED once, each step once, archived once; the steps ran on both workers, the trigger on main only',
	async () => {
		const users = Array.from({ length: 6 }, (_, i) => `queue-user-${i + 1}`);
		const asks = Array.from({ length: 30 }, (_, i) => ({
			user: users[i % users.length],
			query: `question ${i} about queues`,
		}));
		const started = Date.now();
		const answers = await mapLimit(asks, 6, async ({ user, query }) => {
			const res = await fetch(`${n8n.url}/webhook/api/query`, {
				method: 'POST',
				headers: { 'content-type': 'application/json', ...bearer(mint(user, { secret: SECRET })) },
				body: JSON.stringify({ query }),
			});
			return { status: res.status, body: (await res.json()) as { request_id?: string; status?: string } };
		});
		assert.deepEqual(
			countBy(answers.map((a) => `${a.status} ${a.body.status}`)),
			{ '201 processing': 30 },
			JSON.stringify(answers.find((a) => a.status !== 201)),
		);
		const ids = answers.map((a) => a.body.request_id as string);
		assert.equal(new Set(ids).size, 30);
		await waitFor(
			'every run finished and archived',
			async () => {
				const { rows } = await db.pool.query(
					`SELECT count(*) FILTER (WHERE status IN ('COMPLETED', 'FAILED'))::int AS finished, count(archived_at)::int AS archived FROM maas.pipeline_runs WHERE id = ANY($1)`,
					[ids],
				);
				return rows[0].finished === 30 && rows[0].archived === 30 ? true : undefined;
			},
			240_000,
		);
		console.log(`30 runs completed and archived in ${Date.now() - started} ms`);
		const runs = (
			await db.pool.query(
				'SELECT id, user_id, user_query, status, final_answer FROM maas.pipeline_runs WHERE id = ANY($1)',
				[ids],
			)
		).rows;
		assert.deepEqual(countBy(runs.map((r) => r.status)), { COMPLETED: 30 });
		for (const r of runs)
			assert.ok(
				String(r.final_answer).startsWith('Answer to: <context>## Element 1: query\n' + r.user_query),
				`${r.id}: ${r.final_answer}`,
			);
		// one log row of each kind and one summary per run: no step completed twice
		const logs = await db.pool.query(
			`SELECT r.id,
		        (SELECT count(*) FROM maas.raw_logs l WHERE l.run_id = r.id AND l.message_type = 'user_query')::int AS asked,
		        (SELECT count(*) FROM maas.raw_logs l WHERE l.run_id = r.id AND l.message_type = 'assistant_response')::int AS answered,
		        (SELECT count(*) FROM maas.lsm_storage s WHERE s.run_id = r.id)::int AS summaries
		 FROM maas.pipeline_runs r WHERE r.id = ANY($1)`,
			[ids],
		);
		assert.deepEqual(
			countBy(logs.rows.map((r) => `${r.asked}/${r.answered}/${r.summaries}`)),
			{ '1/1/1': 30 },
			'user_query/assistant_response/lsm_storage per run',
		);
		// each CAPTURE_* won once per run: the step behind it called the model once
		const calls = countBy(model.requests.map((r) => stepOf(r.body)));
		console.log(`model calls per step: ${JSON.stringify(calls)}`);
		assert.deepEqual([calls.analyzer, calls.assembler, calls.responder], [30, 30, 30]);
		assert.ok(calls.archivist >= 30, 'every run summarised');
		const errors = await db.pool.query('SELECT count(*)::int AS n FROM ops.errors');
		assert.equal(errors.rows[0].n, 0, 'no step failed');
		// where it ran: M00 and M10 executions each started by exactly one worker, both workers busy, main none
		const m10 = rolesOf(n8n, await executionIds('M10Orchestrator'));
		const m00 = rolesOf(n8n, await executionIds('M00RequestHndlr'));
		assert.equal(m00.size, 30, 'one M00 execution per request');
		assert.ok(m10.size >= 90, `at least 3 M10 executions (one per step notification) per run: ${m10.size}`);
		const perWorker = countBy([...m10.values()]);
		console.log(
			`M10 executions per worker: ${JSON.stringify(perWorker)}; M00: ${JSON.stringify(countBy([...m00.values()]))}`,
		);
		assert.deepEqual(Object.keys(perWorker).sort(), ['worker-1', 'worker-2']);
		assert.equal(n8n.main.transcript().match(/Worker started execution/g), null, 'main ran no execution itself');
		const listeners = await db.pool.query(
			"SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'n8n-nodes-contracts pipeline trigger' AND datname = current_database()",
		);
		assert.equal(listeners.rows[0].n, 1, 'one Pipeline Trigger LISTEN connection: the trigger is active on main only');
	},
	300_000,
);

testSkipIf(skipReason)(
	'WF90 on a worker, WF40 failing for some jobs → one ops.errors row each, outcomes as in single-process mode (queued with backoff / dead / failed); the healthy jobs succeed',
	async () => {
		const kinds = { ok: 4, flaky: 3, 'flaky-last': 2, broken: 3 } as const;
		const jobs = new Map<number, keyof typeof kinds>();
		for (const [kind, count] of Object.entries(kinds) as [keyof typeof kinds, number][]) {
			const { rows } = await db.pool.query(
				`WITH d AS (
			   INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status)
			   SELECT $1, 'url', $2 || g, -100, 'group', 'a short text about queues and workers.', 'done' FROM generate_series(1, $3::int) g RETURNING id, source_key)
			 INSERT INTO ops.jobs (tenant_id, job_type, payload, dedup_key, max_attempts)
			 SELECT $1, 'document_chunk', jsonb_build_object('tenant_id', $1::text, 'document_id', d.id), 'chunk:' || d.source_key, $4 FROM d
			 RETURNING id`,
				[bot.tenantId, `url:errpipe-${kind}-`, count, kind === 'flaky-last' ? 1 : 5],
			);
			for (const r of rows) jobs.set(Number(r.id), kind);
		}
		const ids = [...jobs.keys()];
		// flaky documents fail with a serialization failure (503, retryable), broken ones with a plain exception (500)
		await db.pool.query(`CREATE FUNCTION public.e2e_queue_fail() RETURNS trigger LANGUAGE plpgsql AS $$
		DECLARE key text := (SELECT source_key FROM content.documents WHERE id = NEW.document_id);
		BEGIN
		  IF key LIKE 'url:errpipe-flaky%' THEN RAISE EXCEPTION 'injected transient failure' USING ERRCODE = 'serialization_failure'; END IF;
		  IF key LIKE 'url:errpipe-broken%' THEN RAISE EXCEPTION 'injected failure'; END IF;
		  RETURN NEW;
		END $$`);
		await db.pool.query(
			'CREATE TRIGGER e2e_queue_fail BEFORE INSERT ON kg.chunks FOR EACH ROW EXECUTE FUNCTION public.e2e_queue_fail()',
		);
		try {
			// 6 runs at once, 2 jobs each: every job claimed once (a retried job is not due for 8 s)
			const answers = await Promise.all(
				Array.from({ length: 6 }, () =>
					fetch(`${n8n.url}/webhook/test/wf90-run`, {
						method: 'POST',
						headers: { 'content-type': 'application/json' },
						body: '{}',
					}),
				),
			);
			for (const a of answers) assert.equal(a.status, 200, await a.text());
		} finally {
			await db.pool.query('DROP TRIGGER e2e_queue_fail ON kg.chunks; DROP FUNCTION public.e2e_queue_fail()');
		}
		const state = (
			await db.pool.query(
				'SELECT id, status, attempts, locked_by, claim_token, next_run_at FROM ops.jobs WHERE id = ANY($1)',
				[ids],
			)
		).rows;
		const expected = { ok: 'succeeded', flaky: 'queued', 'flaky-last': 'dead', broken: 'failed' };
		for (const j of state) {
			const kind = jobs.get(Number(j.id))!;
			assert.equal(j.status, expected[kind], `${kind} job ${j.id}`);
			assert.deepEqual(
				[j.attempts, j.locked_by, j.claim_token],
				[1, null, null],
				`${kind} job ${j.id}: one attempt, lock cleared`,
			);
		}
		const errors = (
			await db.pool.query(
				'SELECT job_id, node, workflow, status_code, retryable, created_at, details FROM ops.errors WHERE job_id = ANY($1)',
				[ids],
			)
		).rows;
		const failing = ids.filter((id) => jobs.get(id) !== 'ok');
		assert.deepEqual(
			errors.map((e) => Number(e.job_id)).sort((a, b) => a - b),
			failing.sort((a, b) => a - b),
			'exactly one ops.errors row per failing job, none for the healthy ones',
		);
		for (const e of errors) {
			const kind = jobs.get(Number(e.job_id))!;
			assert.deepEqual(
				[e.node, e.status_code, e.retryable, e.details.error_context.table],
				['Chunk Document', kind === 'broken' ? 500 : 503, kind !== 'broken', 'kg.chunks'],
				`${kind} job ${e.job_id}`,
			);
			assert.equal(e.details.job_outcome, expected[kind]);
			assert.match(
				String(e.details.ctx.job_claim_token),
				/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
				'WF90 → WF40 → WF99 carried the claim token',
			);
			if (kind === 'flaky') {
				const next = state.find((j) => Number(j.id) === Number(e.job_id))!.next_run_at as Date;
				const delay = (next.getTime() - new Date(e.created_at).getTime()) / 1000;
				assert.ok(delay >= 7.9 && delay <= 12.1, `backoff after the first attempt is 10 s ± 20 %: ${delay}`);
			}
		}
		const runs = (
			await db.pool.query('SELECT job_id, status, worker FROM ops.job_runs WHERE job_id = ANY($1) ORDER BY id', [ids])
		).rows;
		const runStatus = { ok: 'succeeded', flaky: 'retry', 'flaky-last': 'dead', broken: 'failed' };
		assert.deepEqual(
			countBy(runs.map((r) => `${jobs.get(Number(r.job_id))}:${r.status}`)),
			Object.fromEntries(
				Object.entries(kinds).map(([kind, n]) => [`${kind}:${runStatus[kind as keyof typeof kinds]}`, n]),
			),
			'one closed run per job',
		);
		// each WF90 execution that claimed them ran on one worker (its sub-workflows and WF99 with it)
		const executions = [...new Set(runs.map((r) => String(r.worker).replace(/^wf90-/, '')))];
		assert.equal(executions.length, 6, 'every run claimed its 2 jobs');
		const roles = rolesOf(n8n, executions);
		console.log(`WF90 executions per worker: ${JSON.stringify(countBy([...roles.values()]))}`);
		assert.equal(n8n.main.transcript().match(/Worker started execution/g), null, 'main ran no execution itself');
	},
	180_000,
);

testSkipIf(skipReason)(
	'a model that always fails, steps on workers: the run ends FAILED after the retries, one ops.errors row (Generate, upstream), nothing stuck',
	async () => {
		model.respond = failingModel;
		try {
			const res = await fetch(`${n8n.url}/webhook/api/query`, {
				method: 'POST',
				headers: { 'content-type': 'application/json', ...bearer(mint('queue-user-doomed', { secret: SECRET })) },
				body: JSON.stringify({ query: 'doomed' }),
			});
			assert.equal(res.status, 201);
			const id = ((await res.json()) as { request_id: string }).request_id;
			const run = await waitFor(
				'the failure',
				async () => {
					const { rows } = await db.pool.query('SELECT status, error FROM maas.pipeline_runs WHERE id = $1', [id]);
					return rows[0].status === 'FAILED' || rows[0].status === 'COMPLETED' ? rows[0] : undefined;
				},
				120_000,
			);
			assert.equal(run.status, 'FAILED');
			// the run keeps the public text only (issue 25 §4); the model's message stays in ops.errors
			assert.doesNotMatch(JSON.stringify(run.error), /attempts|Generate|model/);
			const logged = await db.pool.query('SELECT message FROM ops.errors WHERE correlation_id::text = $1', [
				run.error.correlation_id,
			]);
			assert.match(String(logged.rows[0]?.message), /failed after 4 attempts/, 'ops.errors keeps the real message');
			const { rows } = await db.pool.query(
				"SELECT node, kind, retryable FROM ops.errors WHERE details->'ctx'->>'run_id' = $1",
				[id],
			);
			assert.deepEqual(rows, [{ node: 'Generate', kind: 'upstream', retryable: true }]);
			const stuck = await db.pool.query(
				"SELECT count(*)::int AS n FROM maas.pipeline_runs WHERE status IN ('ANALYZING', 'ASSEMBLING', 'RESPONDING')",
			);
			assert.equal(stuck.rows[0].n, 0);
			assert.equal(n8n.main.transcript().match(/Worker started execution/g), null, 'main ran no execution itself');
		} finally {
			model.respond = normalModel;
		}
	},
	150_000,
);
