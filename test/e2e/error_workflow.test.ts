/**
 * Issue 25 §2 in a real n8n 2.4.8 (regular mode): the shipped catch-all error workflow
 * (workflows-json/WF99e_catch_all.json, Error Trigger → Error Pipe "Once per Failed Execution") writes
 * exactly one ops.errors row for each failed execution no error branch recorded — a node that throws with
 * no error output, an error branch whose "Call WF99" itself fails — each row with the execution id, the workflow, the node and meta.source of the
 * catch-all; and none for an execution whose error branch recorded the failure before it failed anyway
 * (the catch-all ran and found the branch's row: ops.error_executions names it). A workflow that hits its
 * timeout (settings.executionTimeout) is cancelled by regular mode's main, by timer, without starting any
 * error workflow: no row (what n8n does, pinned here; in queue mode it gets its row:
 * queue_mode_error_workflow.test.ts; docs/nodes/error-pipe.md says what recovers the work). Test workflows:
 * test/helpers/catchAllWorkflows.ts. Queue mode (a worker killed mid-execution): queue_mode_error_workflow.test.ts.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
import {
	CASES,
	CATCH_ALL_ID,
	errorSequence,
	settledRows,
	writeTestWorkflow,
	type ErrorRow,
} from '../helpers/catchAllWorkflows';

let db: TestDatabase;
let n8n: RunningN8n;

beforeAll(async () => {
	db = await setupDatabase();
	n8n = await startN8n(
		db.url,
		[
			path.join(WORKFLOWS, 'WF99e_catch_all.json'),
			path.join(WORKFLOWS, 'WF99_global_err_handler.json'),
			...Object.values(CASES).map((c) => writeTestWorkflow(c.workflow)),
		],
		Object.values(CASES).map((c) => c.path),
	);
}, 30 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await db?.drop();
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

/** The one catch-all row of a case: its execution id, workflow, node and source. */
function assertCatchAllRow(rows: ErrorRow[], workflow: string, node: string) {
	assert.equal(rows.length, 1, `exactly one row: ${JSON.stringify(rows)}\n${n8n.logs()}`);
	const [row] = rows;
	assert.equal(row.source, 'WF99e catch-all');
	assert.equal(row.workflow, workflow);
	assert.equal(row.node, node);
	assert.match(String(row.details.execution_id), /^\d+$/);
	assert.equal(row.details.execution.id, row.details.execution_id);
	assert.equal(row.details.recorded_by, 'catch_all');
	return row;
}

async function claimOf(executionId: string) {
	const { rows } = await db.pool.query(
		'SELECT error_id::text, recorded_by FROM ops.error_executions WHERE execution_id = $1',
		[executionId],
	);
	return rows;
}

test('the shipped catch-all is published and is the error workflow of the test workflows', () => {
	for (const c of Object.values(CASES)) assert.equal(c.workflow.settings.errorWorkflow, CATCH_ALL_ID);
});

test('a node that throws with no error output → exactly one catch-all row', async () => {
	const c = CASES.throws;
	await start(c.path);
	const row = assertCatchAllRow(await settledRows(db.pool, c.rowWorkflow), c.rowWorkflow, c.node);
	assert.match(row.message, /thrown with no error output/);
	assert.deepEqual(await claimOf(row.details.execution_id), [{ error_id: row.id, recorded_by: 'catch_all' }]);
}, 120_000);

test('a workflow that hits its timeout in regular mode: n8n 2.4.8 cancels it by timer and starts no error workflow → no row (docs/nodes/error-pipe.md)', async () => {
	// n8n's timeout cancels the execution (status "canceled"); the cancel hook carries no resultData.error,
	// which is what n8n's executeErrorWorkflow needs, and the end-of-run hook is skipped for a cancelled run.
	// If a later n8n starts the error workflow here, this fails: then it must be exactly one catch-all row.
	const c = CASES.timeout;
	await start(c.path);
	await new Promise((r) => setTimeout(r, 8_000)); // the 1 s timeout, the 4 s Wait, and time for an error workflow
	const rows = await settledRows(db.pool, c.rowWorkflow, { timeoutMs: 0, settleMs: 0 });
	assert.deepEqual(rows, [], 'n8n started the error workflow for a timeout: update the docs and expect one row');
	assert.match(n8n.logs(), /Activated workflow "TEST catch-all — timeout"/);
}, 120_000);

test('an error branch whose "Call WF99" fails → exactly one catch-all row, naming Call WF99', async () => {
	const c = CASES.callWf99Fails;
	await start(c.path);
	assertCatchAllRow(await settledRows(db.pool, c.rowWorkflow), c.rowWorkflow, c.node);
}, 120_000);

test('a failure the error branch recorded, then the execution failed: one row (the branch one), the catch-all wrote none', async () => {
	const c = CASES.branchRecorded;
	const before = await errorSequence(db.pool);
	await start(c.path);
	const rows = await settledRows(db.pool, c.rowWorkflow);
	assert.equal(rows.length, 1, `exactly one row: ${JSON.stringify(rows)}\n${n8n.logs()}`);
	const [row] = rows;
	assert.equal(row.source, 'WF99');
	assert.equal(row.node, 'Fetch');
	// WF99 ran as a sub-execution: its Error Pipe recorded the caller's execution
	assert.match(String(row.details.execution_id), /^\d+$/);
	assert.deepEqual(await claimOf(row.details.execution_id), [{ error_id: row.id, recorded_by: 'branch' }]);
	// the catch-all ran for that execution (it took an id up front) and wrote nothing
	const deadline = Date.now() + 30_000;
	while (Date.now() < deadline && (await errorSequence(db.pool)) < before + 2)
		await new Promise((r) => setTimeout(r, 250));
	assert.equal(await errorSequence(db.pool), before + 2, 'the branch row and the catch-all attempt: two ids');
	assert.equal((await settledRows(db.pool, c.rowWorkflow, { settleMs: 1_000 })).length, 1);
	const all = await db.pool.query("SELECT count(*)::int AS n FROM ops.errors WHERE details->>'execution_id' = $1", [
		row.details.execution_id,
	]);
	assert.equal(all.rows[0].n, 1);
}, 120_000);
