/**
 * Issue 26 item 1, Claim Jobs through the compiled Pipeline Capture node (npm test builds first): the node
 * gives Claim Jobs its call key (n8n instance, workflow, execution, node, $runIndex, item), so n8n's Retry On
 * Fail after a lost reply (the same execution calling the node again) gets the jobs the lost call claimed —
 * same claim tokens, `replayed: true` — and another execution claims anew. The node's pool connects through
 * a TCP proxy that drops the claim's reply after COMMIT. Each claim holds the process's job lease.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import type { Pool } from 'pg';
import { SuccessItem } from '../../nodes/shared/contracts/envelope';
import { CLAIM_JOBS_NAMED } from '../../nodes/shared/statements/jobs';
import { credentialFor, type TestDatabase } from '../helpers/db';
import { closeProxiedDatabase, setupProxiedDatabase } from '../helpers/proxiedDatabase';
import type { TcpProxy } from '../helpers/tcpProxy';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { PipelineCapture } =
	require('../../dist/nodes/PipelineCapture/PipelineCapture.node.js') as typeof import('../../nodes/PipelineCapture/PipelineCapture.node');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const distPools =
	require('../../dist/nodes/shared/postgres/pool.js') as typeof import('../../nodes/shared/postgres/pool');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const distLeases = require('../../dist/nodes/shared/jobs/lease.js') as typeof import('../../nodes/shared/jobs/lease');

let db: TestDatabase;
let proxy: TcpProxy;
let proxied: Pool;
beforeAll(async () => {
	({ db, proxy, proxied } = await setupProxiedDatabase());
});
afterAll(async () => {
	await distPools.closeAllPools();
	await distLeases.closeJobLeases();
	await closeProxiedDatabase({ db, proxy, proxied });
});

/** Claim Jobs as n8n runs it in execution `executionId` (undefined: n8n gave none), through the proxy. */
function claim(executionId: string | undefined, batchSize: number) {
	const credential = credentialFor(db.url.replace(/@[^/]+\//, `@127.0.0.1:${proxy.port}/`));
	const params: Record<string, unknown> = {
		resource: 'job',
		operation: 'claimJobs',
		jobType: 'node-replay',
		batchSize,
		options: { worker: 'wf90-runner' },
	};
	const context = {
		getInputData: (): INodeExecutionData[] => [{ json: {} }],
		getNode: () => ({
			name: 'Claim Jobs',
			type: 'n8n-nodes-contracts.pipelineCapture',
			typeVersion: 2,
			position: [0, 0],
			parameters: {},
			id: '1',
		}),
		getCredentials: async () => credential,
		getExecutionId: () => executionId,
		getInstanceId: () => 'test-instance',
		getWorkflow: () => ({ id: 'WF90JobRunner', name: 'WF90', active: true }),
		getWorkflowDataProxy: () => ({ $runIndex: 0 }),
		getNodeParameter: (name: string, _i: number, fallback?: unknown) => (name in params ? params[name] : fallback),
		continueOnFail: () => true,
	} as unknown as IExecuteFunctions;
	return new PipelineCapture().execute.call(context);
}

test('a lost Claim Jobs reply, retried by the same execution, gets the same jobs (replayed); another execution, or none, claims anew', async () => {
	await db.pool.query("INSERT INTO ops.jobs (job_type) SELECT 'node-replay' FROM generate_series(1, 6)");
	proxy.dropReplyTo(CLAIM_JOBS_NAMED.name);
	const [lost, lostErrors = []] = await claim('500', 2);
	const failed = [...lost, ...lostErrors].map((i) => i.json.error as Record<string, unknown> | undefined);
	assert.ok(
		failed.some((e) => e?.status_code === 503),
		`the lost reply is a 503 item: ${JSON.stringify(failed)}`,
	);
	const held = (
		await db.pool.query(
			"SELECT id::int, claim_token::text, lease_id IS NOT NULL AS leased FROM ops.jobs WHERE status = 'running' AND job_type = 'node-replay' ORDER BY id",
		)
	).rows;
	assert.equal(held.length, 2, 'the lost call committed its claim');
	assert.ok(
		held.every((r) => r.leased),
		'under the process lease',
	);
	const [retry] = await claim('500', 2);
	const replayed = retry.map((i) => SuccessItem.parse(i.json).data);
	assert.deepEqual(
		replayed.map((j) => [Number(j.id), j.claim_token, j.replayed]),
		held.map((r) => [r.id, r.claim_token, true]),
	);
	const [other] = await claim('501', 2);
	const fresh = other.map((i) => SuccessItem.parse(i.json).data);
	assert.equal(fresh.length, 2);
	assert.ok(fresh.every((j) => j.replayed === undefined && !held.some((r) => r.id === Number(j.id))));
	// no execution id → no call key → no replay: a manual call claims anew each time
	const [manual] = await claim(undefined, 1);
	const [again] = await claim(undefined, 1);
	assert.notDeepEqual(
		manual.map((i) => SuccessItem.parse(i.json).data.id),
		again.map((i) => SuccessItem.parse(i.json).data.id),
	);
	const { rows } = await db.pool.query(
		"SELECT count(*)::int AS n, max(attempts) AS most FROM ops.jobs WHERE job_type = 'node-replay' AND status = 'running'",
	);
	assert.deepEqual(rows[0], { n: 6, most: 1 }, 'six jobs claimed, each once');
});
