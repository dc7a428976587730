/**
 * Issue 25 §2 in queue mode (n8n 2.4.8: main + 2 `n8n worker` processes, Redis, scripts/lib/n8nQueue.js): a
 * worker killed with SIGKILL while it runs an execution (a 20 s Wait). n8n's main holds the job's promise:
 * when the surviving worker's stalled-job check finds the dead worker's lock expired, Bull fails the job
 * ("job stalled more than maxStalledCount": n8n sets maxStalledCount 0, so the job is not run again), main
 * finishes the execution as `error` (MaxStalledCountError) and starts its error workflow — the shipped
 * catch-all, which writes exactly one ops.errors row for it (no node: the run data died with the worker).
 * Bull's lock and stalled-check times are shortened here (QUEUE_WORKER_LOCK_DURATION 10 s,
 * QUEUE_WORKER_STALLED_INTERVAL 5 s; n8n's defaults are 60 s and 30 s) so the test does not wait 90 s.
 * Also: a node that throws with no error output, run on a worker → one catch-all row (the worker runs the
 * error workflow's hook); a workflow that hits its timeout on a worker → one row (a worker checks the
 * timeout between nodes and ends the run with the timeout error in its result; regular mode's main cancels
 * it by timer instead and starts no error workflow: error_workflow.test.ts). Skipped (with the reason) when Redis does not answer at 127.0.0.1:6379.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { afterAll, beforeAll } from '@jest/globals';
import { Client } from 'pg';
import { testSkipIf } from '../helpers/skip';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { WORKFLOWS } from '../helpers/n8n';
import { startQueueN8n, type RunningQueueN8n } from '../helpers/n8nQueue';
import { waitFor } from '../helpers/queueRecords';
import { CASES, removeTestWorkflows, settledRows, writeTestWorkflow } from '../helpers/catchAllWorkflows';

const skipReason = process.env.CONTRACTS_TEST_REDIS_SKIP || null;
let db: TestDatabase;
let n8n: RunningQueueN8n;
const files: string[] = [];
const saved = { lock: process.env.QUEUE_WORKER_LOCK_DURATION, stalled: process.env.QUEUE_WORKER_STALLED_INTERVAL };

beforeAll(async () => {
	if (skipReason) return;
	process.env.QUEUE_WORKER_LOCK_DURATION = '10000';
	process.env.QUEUE_WORKER_STALLED_INTERVAL = '5000';
	db = await setupDatabase();
	files.push(
		writeTestWorkflow(CASES.slow.workflow),
		writeTestWorkflow(CASES.throws.workflow),
		writeTestWorkflow(CASES.timeout.workflow),
	);
	n8n = await startQueueN8n(
		db.url,
		[...['WF99e_catch_all.json', 'WF99_global_err_handler.json'].map((f) => path.join(WORKFLOWS, f)), ...files],
		[CASES.slow.path, CASES.throws.path, CASES.timeout.path],
		{ workers: 2, concurrency: 5 },
	);
}, 20 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await db?.drop();
	removeTestWorkflows(files);
	for (const [name, value] of [
		['QUEUE_WORKER_LOCK_DURATION', saved.lock],
		['QUEUE_WORKER_STALLED_INTERVAL', saved.stalled],
	] as const)
		if (value === undefined) delete process.env[name];
		else process.env[name] = value;
});

async function start(urlPath: string) {
	const res = await fetch(`${n8n.url}/webhook/${urlPath}`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: '{}',
	});
	await res.text();
	assert.equal(res.status, 200, `POST ${urlPath}`);
}

/** n8n's record of execution `id`: its status and workflow. */
async function executionRecord(id: string) {
	const client = new Client({ connectionString: n8n.n8nDatabaseUrl });
	await client.connect();
	try {
		const { rows } = await client.query('SELECT status, "workflowId" FROM execution_entity WHERE id = $1', [
			Number(id),
		]);
		return rows[0] as { status: string; workflowId: string } | undefined;
	} finally {
		await client.end();
	}
}

testSkipIf(skipReason)(
	'a node that throws with no error output, on a worker → exactly one catch-all row',
	async () => {
		const c = CASES.throws;
		await start(c.path);
		const rows = await settledRows(db.pool, c.rowWorkflow);
		assert.equal(rows.length, 1, `${JSON.stringify(rows)}\n${n8n.logs()}`);
		assert.equal(rows[0].source, 'WF99e catch-all');
		assert.equal(rows[0].node, c.node);
		const record = await executionRecord(rows[0].details.execution_id);
		assert.deepEqual(record, { status: 'error', workflowId: c.workflow.id });
	},
	180_000,
);

testSkipIf(skipReason)(
	'a workflow that hits its timeout on a worker → cancelled after the running node, the catch-all runs: exactly one row',
	async () => {
		// a worker checks the timeout between nodes (no timer, unlike regular mode's main): the run ends
		// "canceled" with a TimeoutExecutionCancelledError in its result, and that starts the error workflow
		const c = CASES.timeout;
		await start(c.path);
		const rows = await settledRows(db.pool, c.rowWorkflow, { timeoutMs: 60_000, settleMs: 6_000 });
		assert.equal(rows.length, 1, `${JSON.stringify(rows)}\n${n8n.logs()}`);
		const [row] = rows;
		assert.equal(row.source, 'WF99e catch-all');
		assert.match(row.message, /timed out/);
		assert.equal(row.node, c.node, 'the node that ran when the time was up');
		console.log(`timeout row: node ${JSON.stringify(row.node)}, message ${JSON.stringify(row.message)}`);
		assert.deepEqual(await executionRecord(row.details.execution_id), {
			status: 'canceled',
			workflowId: c.workflow.id,
		});
	},
	180_000,
);

testSkipIf(skipReason)(
	'a worker killed mid-execution → n8n fails the stalled job and runs the catch-all: exactly one row',
	async () => {
		const c = CASES.slow;
		const before = new Set(n8n.workers.flatMap((w) => w.startedExecutions()));
		await start(c.path);
		const { victim, executionId } = await waitFor(
			'a worker started the slow execution',
			async () => {
				for (const [i, w] of n8n.workers.entries()) {
					const id = w.startedExecutions().find((e) => !before.has(e));
					if (id) return { victim: i, executionId: id };
				}
				return undefined;
			},
			60_000,
			100,
			async () => n8n.logs(),
		);
		await new Promise((r) => setTimeout(r, 1_000)); // inside the Wait
		await n8n.killWorker(victim);
		const killedAt = Date.now();
		const rows = await settledRows(db.pool, c.rowWorkflow, { timeoutMs: 150_000, settleMs: 10_000 });
		console.log(
			`catch-all row ${Date.now() - killedAt} ms after the kill: ${JSON.stringify(rows.map((r) => r.message))}`,
		);
		assert.equal(rows.length, 1, `${JSON.stringify(rows)}\n${n8n.logs()}`);
		const [row] = rows;
		assert.equal(row.source, 'WF99e catch-all');
		assert.equal(row.details.execution_id, executionId);
		assert.equal(row.details.recorded_by, 'catch_all');
		assert.match(row.message, /too many times|stalled/i);
		assert.deepEqual(await executionRecord(executionId), { status: 'error', workflowId: c.workflow.id });
		// the execution was not run again on the surviving worker (maxStalledCount 0)
		const survivor = n8n.workers[1 - victim];
		assert.equal(survivor.startedExecutions().filter((e) => e === executionId).length, 0);
		// the restarted worker's recovery from its event log finds the execution ended already: still one row
		await n8n.startWorker(victim);
		assert.equal((await settledRows(db.pool, c.rowWorkflow, { settleMs: 8_000 })).length, 1);
	},
	300_000,
);
