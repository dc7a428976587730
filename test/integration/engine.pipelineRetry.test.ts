/**
 * Issue 26 (review finding 3): Pipeline Capture's Capture with n8n's Retry On Fail and the error output
 * (as the shipped M11–M13 set it), run by n8n's own execution engine (test/helpers/n8nEngine.ts) against
 * real PostgreSQL through a TCP proxy that drops the reply of the committed capture statement. n8n 2.4.8
 * re-runs the node while its first output item is an error item, before the error output gets it: the
 * retry carries the same call key (instance, workflow, execution, node, $runIndex, item) and is answered
 * with the capture the first call committed (`replayed: true`), so the run is not left captured under a
 * token nobody holds. Without Retry On Fail the lost reply goes to the error output (503).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { runWorkflow, stopEngine, type EngineNode } from '../helpers/n8nEngine';
import { TcpProxy } from '../helpers/tcpProxy';

let db: TestDatabase;
let proxy: TcpProxy;
beforeAll(async () => {
	db = await setupDatabase();
	const target = new URL(db.url);
	proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
	await proxy.up();
});
afterAll(async () => {
	await closeAllPools();
	await proxy?.down();
	await db?.drop();
	stopEngine();
});

async function newRun() {
	const { request_id } = await createRun(db.pool, { user_id: `er-${randomUUID()}`, query: 'q' });
	return request_id;
}

const captureNode = (retry: EngineNode['retry']): EngineNode => ({
	name: 'Capture',
	type: 'pipelineCapture',
	typeVersion: 2,
	parameters: {
		resource: 'run',
		operation: 'capture',
		runId: '={{ $json.id }}',
		transition: 'CAPTURE_ANALYSIS',
		options: { worker: 'engine-worker' },
	},
	onError: 'continueErrorOutput',
	credentials: { postgresContractsApi: 'Contracts DB (proxied)' },
	...(retry ? { retry } : {}),
});

const runThroughProxy = (id: string, retry: EngineNode['retry'], executionId = '41') =>
	runWorkflow({
		nodes: [captureNode(retry)],
		items: [{ json: { id } }],
		credentials: { postgresContractsApi: { ...db.credential, host: '127.0.0.1', port: proxy.port } },
		executionId,
		workflowId: 'wf-retry',
	});

async function row(id: string) {
	return (await db.pool.query('SELECT * FROM maas.pipeline_runs WHERE id = $1', [id])).rows[0];
}

test('Retry On Fail + error output: a lost reply on Capture is retried by n8n with the same call key and answered with the committed capture (replayed)', async () => {
	const id = await newRun();
	const before = proxy.dropped;
	proxy.dropReplyTo('capture_key = $7');
	const result = await runThroughProxy(id, { retryOnFail: true, maxTries: 3, waitBetweenTries: 50 });
	assert.equal(result.error, undefined);
	assert.equal(proxy.dropped, before + 1, 'the first reply was dropped');
	assert.deepEqual(result.output('Capture', 2), [], 'nothing on the error output');
	const [done] = result.output('Capture', 0);
	const data = (done.json as { data: Record<string, unknown> }).data;
	const stored = await row(id);
	assert.deepEqual(
		[data.captured, data.replayed, data.capture_token, stored.status, stored.captured_by],
		[true, true, stored.capture_token, 'ANALYZING', 'engine-worker'],
	);
	// the key: [instance id, workflow id, execution id, node, run index, item index]
	const key = JSON.parse(String(stored.capture_key)) as unknown[];
	assert.equal(typeof key[0], 'string');
	assert.ok(String(key[0]).length > 0, 'n8n instance id');
	assert.deepEqual(key.slice(1), ['wf-retry', '41', 'Capture', 0, 0]);
	assert.equal('capture_key' in (data.run as object), false, 'bookkeeping not in the output');
});

test('without Retry On Fail the same lost reply goes to the error output as 503 (the run stays captured until the Sweep)', async () => {
	const id = await newRun();
	proxy.dropReplyTo('capture_key = $7');
	const result = await runThroughProxy(id, undefined);
	assert.deepEqual(result.output('Capture', 0), []);
	const [failed] = result.output('Capture', 2);
	assert.equal((failed.json as { error: { status_code: number } }).error.status_code, 503);
	assert.equal((await row(id)).status, 'ANALYZING');
});

test('no execution id: no call key is stored (no replay for id-less calls)', async () => {
	const id = await newRun();
	const result = await runThroughProxy(id, undefined, '');
	const [done] = result.output('Capture', 0);
	assert.equal((done.json as { data: { captured: boolean } }).data.captured, true);
	assert.equal((await row(id)).capture_key, null);
});
