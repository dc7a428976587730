/**
 * Issue 15, part 3: recovery in queue mode with n8n's full process layout — 1 main (triggers, schedules,
 * N8N_DISABLE_PRODUCTION_MAIN_PROCESS), 1 `n8n webhook` process (production webhooks), 2 `n8n worker`
 * processes (scripts/lib/n8nQueue.js, createQueueCluster({ webhooks: 1 })):
 *  - WF10 deliveries with duplicates sent to the webhook process → exactly the distinct count in raw, keys
 *    and jobs; every execution ran on a worker (neither main nor the webhook process ran one); main itself
 *    no longer answers the production webhook;
 *  - a worker killed with SIGKILL while MaaS pipeline steps (M11–M14, slow stand-in model) run on it → its
 *    captured runs stay in progress; after the Sweep (a webhook copy of M15, stuck/lost after 1 s) every run
 *    ends COMPLETED exactly once, no step's result column is written twice (a test trigger logs every
 *    write), and the restarted worker picks up work again;
 *  - the shipped WF90's schedule (Every 10 Seconds, as shipped; its copy claims only document_chunk jobs)
 *    fires on main only — one execution per tick — and every scheduled execution ran on a worker.
 * Which worker ran an execution comes from the worker transcripts ("Worker started execution <id>").
 * Skipped (with the reason) when Redis does not answer at 127.0.0.1:6379 (REDIS_HOST / REDIS_PORT).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { Client } from 'pg';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { bearer, mint, testSecret } from '../helpers/jwt';
import { ModelStandIn } from '../helpers/modelStandIn';
import { jwtCredential, mapLimit, WORKFLOWS } from '../helpers/n8n';
import { redisUnavailable, startQueueN8n, writeWorkflow, type RunningQueueN8n } from '../helpers/n8nQueue';
import { realisticUpdates } from '../helpers/updates';

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

let skipReason: string | null = null;
let db: TestDatabase;
let n8n: RunningQueueN8n;
let bot: Awaited<ReturnType<typeof seedBot>>;
const files: string[] = [];
const model = new SlowModel();
const SECRET = testSecret();
const MAAS = path.join(WORKFLOWS, 'maas');
const SCHEDULED_WF90 = 'WF90QueueSched';

/** The stand-in model's answers (as in maas_pipeline.test.ts): JSON for the Analyzer, a summary for the Archivist, text for the others. */
function normalModel(body: Record<string, unknown>) {
	const messages = body.messages as { role: string; content: string }[];
	const system = messages[0].content;
	const user = messages[1].content;
	if (body.response_format) return { text: JSON.stringify({ needs_context: false, context_type: 'none', time_scope: 'now', search_keywords: [], context_found: {} }) };
	if (/Summarise this exchange/.test(system)) return { text: `Summary: ${user.slice(0, 60)}` };
	if (/Optimise the draft/.test(system)) return { text: `<context>${user.slice(0, 200)}</context>` };
	return { text: `Answer to: ${user.slice(0, 120)}` };
}

/** The shipped WF10 with successful executions saved (it ships with "none"): the test reads n8n's execution records. */
function wf10Saving() {
	const workflow = JSON.parse(fs.readFileSync(path.join(WORKFLOWS, 'WF10_telegram_ingest.json'), 'utf8')) as { id: string; settings?: Record<string, unknown> };
	workflow.settings = { ...workflow.settings, saveDataSuccessExecution: 'all' };
	return workflow;
}

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
				parameters: { httpMethod: 'POST', path: 'test/m15-sweep', responseMode: 'lastNode', responseData: 'allEntries', options: {} },
			};
		}
		if (n.name === 'Sweep') {
			return { ...n, parameters: { ...n.parameters, stuckAfterSeconds: '={{ $json.body.stuck_after_seconds }}', lostAfterSeconds: '={{ $json.body.lost_after_seconds }}' } };
		}
		return n;
	});
	return { ...m15, id: 'M15QueueSweep', name: 'M15 — MaaS Sweep (queue-mode test copy)', nodes };
}

/** The shipped WF90, schedules and all, claiming only document_chunk jobs (WF10's telegram_update jobs have no WF20 here). */
function scheduledRunner() {
	const wf90 = JSON.parse(fs.readFileSync(path.join(WORKFLOWS, 'WF90_job_runner.json'), 'utf8'));
	const nodes = wf90.nodes.map((n: { name: string; parameters: Record<string, any> }) => {
		if (n.name !== 'Runner Settings') return n;
		const assignments = n.parameters.assignments.assignments.map((a: { name: string }) => (a.name === 'req.job_types' ? { ...a, value: 'document_chunk' } : a));
		return { ...n, parameters: { ...n.parameters, assignments: { assignments } } };
	});
	return { ...wf90, id: SCHEDULED_WF90, name: 'WF90 — Job Runner (queue-mode schedule copy)', nodes };
}

before(
	async () => {
		skipReason = await redisUnavailable();
		if (skipReason) return;
		db = await setupDatabase();
		bot = await seedBot(db.pool, 'queue_rec_bot', 'queueRec-Secret_123');
		await model.up();
		model.respond = normalModel;
		files.push(writeWorkflow(wf10Saving()), writeWorkflow(sweepCopy()), writeWorkflow(scheduledRunner()));
		const maas = fs
			.readdirSync(MAAS)
			.filter((f) => f.endsWith('.json') && f !== 'M15_sweep.json')
			.map((f) => path.join(MAAS, f));
		n8n = await startQueueN8n(
			db.url,
			[...['WF99_global_err_handler.json', 'WF40_chunker.json'].map((f) => path.join(WORKFLOWS, f)), ...maas, ...files],
			['telegram', 'api/query', 'test/m15-sweep'],
			{
				workers: 2,
				webhooks: 1,
				concurrency: 10,
				extraCredentials: [
					{ id: 'llmContracts01', name: 'Contracts LLM', type: 'contractsLlmApi', data: { api: 'openai', baseUrl: model.url, apiKey: 'sk-stand-in', model: 'stand-in' } },
					jwtCredential(SECRET),
				],
			},
		);
	},
	{ timeout: 20 * 60_000 },
);

after(async () => {
	await n8n?.stop();
	await model.down();
	await db?.drop();
	for (const file of files) fs.rmSync(path.dirname(file), { recursive: true, force: true });
});

function skipped(t: TestContext): boolean {
	if (skipReason) t.skip(skipReason);
	return skipReason !== null;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
	const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
	const text = await res.text();
	try {
		return { status: res.status, body: JSON.parse(text) };
	} catch {
		return { status: res.status, body: text as any };
	}
}

/** n8n's own records of `workflowId`: execution id and creation time, oldest first. */
async function executionsOf(workflowId: string): Promise<{ id: string; createdAt: Date }[]> {
	const client = new Client({ connectionString: n8n.n8nDatabaseUrl });
	await client.connect();
	try {
		const { rows } = await client.query('SELECT id::text, "createdAt" FROM execution_entity WHERE "workflowId" = $1 ORDER BY id', [workflowId]);
		return rows;
	} finally {
		await client.end();
	}
}

/** Worker role of each execution id; fails when one was started by no worker or by two. */
function rolesOf(executionIds: string[]): Map<string, string> {
	const started = n8n.workerOfExecutions();
	const roles = new Map<string, string>();
	for (const id of executionIds) {
		const by = started.get(id) ?? [];
		assert.equal(by.length, 1, `execution ${id} started by ${JSON.stringify(by)}`);
		roles.set(id, by[0]);
	}
	return roles;
}

function countBy<T>(values: T[]): Record<string, number> {
	const out: Record<string, number> = {};
	for (const v of values) out[String(v)] = (out[String(v)] ?? 0) + 1;
	return out;
}

/** Neither main nor the webhook process ran an execution itself. */
function assertOnlyWorkersExecuted() {
	for (const p of [n8n.main, ...n8n.webhooks]) assert.equal(p.transcript().match(/Worker started execution/g), null, `${p.role} ran no execution itself`);
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000, everyMs = 500): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		const value = await probe();
		if (value !== undefined) return value;
		await new Promise((r) => setTimeout(r, everyMs));
	}
	const runs = (await db.pool.query('SELECT status, archived_at IS NOT NULL AS archived, count(*)::int AS n FROM maas.pipeline_runs GROUP BY 1, 2')).rows;
	assert.fail(`${what}: not reached in ${timeoutMs} ms\nruns: ${JSON.stringify(runs)}\n${n8n.logs()}`);
}

test('200 WF10 deliveries (140 distinct) at 12 clients to the webhook process → 140 raw, key and job rows; every execution ran on a worker; main no longer answers the production webhook', { timeout: 300_000 }, async (t) => {
	if (skipped(t)) return;
	assert.notEqual(n8n.webhookUrl, n8n.url, 'webhooks are served by the webhook process');
	const distinct = Array.from({ length: 140 }, (_, i) => realisticUpdates[i % realisticUpdates.length]());
	const deliveries = [...distinct, ...Array.from({ length: 60 }, (_, i) => distinct[(i * 7) % distinct.length])];
	deliveries.sort(() => Math.random() - 0.5);
	const headers = { 'X-Telegram-Bot-Api-Secret-Token': bot.secret };
	const started = Date.now();
	const answers = await mapLimit(deliveries, 12, (update) => post(`${n8n.webhookUrl}/webhook/telegram?bot=${bot.botKey}`, update, headers));
	t.diagnostic(`200 deliveries through the webhook process in ${Date.now() - started} ms`);
	const failed = answers.filter((a) => a.status !== 200);
	assert.equal(failed.length, 0, `${failed.length} failed, e.g. ${JSON.stringify(failed[0])}\n${n8n.logs()}`);
	assert.equal(answers.filter((a) => a.body.duplicate === false).length, 140, 'one first delivery per update');
	const jobOf = new Map<number, Set<number>>();
	deliveries.forEach((u, i) => jobOf.set(u.update_id, (jobOf.get(u.update_id) ?? new Set()).add(answers[i].body.job_id)));
	assert.ok([...jobOf.values()].every((jobs) => jobs.size === 1), 'every delivery of an update names the same job');
	const ids = distinct.map((u) => u.update_id);
	const { rows } = await db.pool.query(
		`SELECT (SELECT count(*) FROM raw.telegram_updates WHERE bot_id = $1 AND update_id = ANY($2))::int AS raw,
		        (SELECT count(*) FROM raw.telegram_update_keys WHERE bot_id = $1 AND update_id = ANY($2))::int AS keys,
		        (SELECT count(*) FROM ops.jobs WHERE dedup_key = ANY($3))::int AS jobs,
		        (SELECT count(*) FROM ops.jobs)::int AS all_jobs`,
		[bot.botId, ids, ids.map((id) => `tg:${bot.botId}:${id}`)],
	);
	assert.deepEqual(rows[0], { raw: 140, keys: 140, jobs: 140, all_jobs: 140 });
	const executions = (await executionsOf('WF10TgIngest')).map((e) => e.id);
	assert.equal(executions.length, 200, 'one n8n execution per delivery');
	const perWorker = countBy([...rolesOf(executions).values()]);
	t.diagnostic(`WF10 executions per worker: ${JSON.stringify(perWorker)}`);
	assert.deepEqual(Object.keys(perWorker).sort(), ['worker-1', 'worker-2']);
	assertOnlyWorkersExecuted();
	// N8N_DISABLE_PRODUCTION_MAIN_PROCESS: main has no /webhook/… route; nothing is written
	const refused = await post(`${n8n.url}/webhook/telegram?bot=${bot.botKey}`, realisticUpdates[0](), headers);
	assert.equal(refused.status, 404, `main answered ${refused.status}: ${JSON.stringify(refused.body).slice(0, 200)}`);
	assert.equal((await db.pool.query('SELECT count(*)::int AS n FROM raw.telegram_updates')).rows[0].n, 140);
});
