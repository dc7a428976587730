/**
 * The Pipeline Capture node itself on real PostgreSQL, with a minimal IExecuteFunctions: SuccessEnvelopes
 * paired to their items, the "Not Captured" output for a lost race, one item per claimed job, and the
 * error item (409 ILLEGAL_TRANSITION with the legal transitions) in continue mode.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { SuccessItem } from '../../nodes/shared/contracts/envelope';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { setupDatabase, type TestDatabase } from '../helpers/db';
// The compiled node (npm test builds first): "PipelineCapture.node" would resolve to the codex .json beside it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { PipelineCapture } =
	require('../../dist/nodes/PipelineCapture/PipelineCapture.node.js') as typeof import('../../nodes/PipelineCapture/PipelineCapture.node');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const distPools =
	require('../../dist/nodes/shared/postgres/pool.js') as typeof import('../../nodes/shared/postgres/pool');

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await distPools.closeAllPools();
	await closeAllPools();
	await db?.drop();
});

function run(
	params: Record<string, unknown>[],
	items: INodeExecutionData[] = params.map(() => ({ json: {} })),
	executionId = '42',
) {
	const context = {
		getInputData: () => items,
		getNode: () => ({
			name: 'Pipeline Capture',
			type: 'n8n-nodes-contracts.pipelineCapture',
			typeVersion: 1,
			position: [0, 0],
			parameters: {},
			id: '1',
		}),
		getCredentials: async () => db.credential,
		getExecutionId: () => executionId,
		// n8n gives every execute context these; Capture builds its call key from them (issue 26)
		getInstanceId: () => 'test-instance',
		getWorkflow: () => ({ id: 'wf-test', name: 'test', active: false }),
		getWorkflowDataProxy: () => ({ $runIndex: 0 }),
		getNodeParameter: (name: string, i: number, fallback?: unknown) => (name in params[i] ? params[i][name] : fallback),
		continueOnFail: () => true,
	} as unknown as IExecuteFunctions;
	return new PipelineCapture().execute.call(context);
}

/** The item n8n's Webhook node emits after verifying a JWT whose `sub` is `sub` (Authentication = JWT Auth). */
function tokenItem(sub: unknown, json: Record<string, unknown> = {}): INodeExecutionData {
	return {
		json: {
			headers: { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.test-token-secret.sig' },
			jwtPayload: { sub, iat: 1_700_000_000 },
			...json,
		},
	};
}

/** Create Run with the default Identity (token): n8n passes no User ID parameter. */
const createParams = (query: string) => ({
	resource: 'run',
	operation: 'createRun',
	identity: 'token',
	identityClaim: 'sub',
	query,
});

test('Create Run → Capture by two items: one on "Done" with the capture token, one on "Not Captured"', async () => {
	const [created] = await run([createParams('hello')], [tokenItem('u1')]);
	const envelope = SuccessItem.parse(created[0].json);
	assert.equal(envelope.status_code, 201);
	const id = envelope.data.request_id as string;
	const [done, notCaptured] = await run([
		{ resource: 'run', operation: 'capture', runId: id, transition: 'CAPTURE_ANALYSIS' },
		{ resource: 'run', operation: 'capture', runId: id, transition: 'CAPTURE_ANALYSIS' },
	]);
	assert.equal(done.length, 1);
	assert.equal(notCaptured.length, 1);
	const won = SuccessItem.parse(done[0].json).data;
	assert.deepEqual([won.captured, won.status, typeof won.capture_token], [true, 'ANALYZING', 'string']);
	assert.deepEqual(notCaptured[0].pairedItem, { item: 1 });
	assert.equal(SuccessItem.parse(notCaptured[0].json).data.captured, false);
	const [illegal] = await run([
		{
			resource: 'run',
			operation: 'completeStep',
			runId: id,
			transition: 'RESPONSE_DONE',
			captureToken: won.capture_token,
			result: 'x',
		},
	]);
	const error = illegal[0].json.error as Record<string, any>;
	assert.deepEqual([error.status_code, error.details.code], [409, 'ILLEGAL_TRANSITION']);
	assert.deepEqual(error.error_context.table, 'maas.pipeline_runs');
});

test('Claim Jobs emits one item per job, Finish Job (same execution) closes it', async () => {
	await db.pool.query("INSERT INTO ops.jobs (job_type) SELECT 'node-test' FROM generate_series(1, 3)");
	const [claimed] = await run(
		[{ resource: 'job', operation: 'claimJobs', jobType: 'node-test', batchSize: 10 }],
		undefined,
		'77',
	);
	assert.equal(claimed.length, 3);
	const jobs = claimed.map((i) => SuccessItem.parse(i.json).data);
	assert.ok(jobs.every((j) => j.locked_by === 'n8n-77'));
	const [finished] = await run(
		jobs.map((j) => ({ resource: 'job', operation: 'finishJob', jobId: j.id, worker: j.locked_by, success: true })),
		undefined,
		'78',
	);
	assert.deepEqual(
		finished.map((i) => SuccessItem.parse(i.json).data.status),
		['succeeded', 'succeeded', 'succeeded'],
	);
});

test('Finish Job: the items of one execution in one statement; a job not held is its own error item (paired), the others finish', async () => {
	await db.pool.query("INSERT INTO ops.jobs (job_type) SELECT 'node-batch' FROM generate_series(1, 3)");
	const [claimed] = await run(
		[{ resource: 'job', operation: 'claimJobs', jobType: 'node-batch', batchSize: 10 }],
		undefined,
		'90',
	);
	const jobs = claimed.map((i) => SuccessItem.parse(i.json).data);
	const params = jobs.map((j, k) => ({
		resource: 'job',
		operation: 'finishJob',
		jobId: j.id,
		worker: k === 1 ? 'someone-else' : j.locked_by,
		claimToken: j.claim_token,
		success: k !== 2,
		error: { message: 'nope' },
	}));
	const [out] = await run(params, undefined, '91');
	assert.deepEqual(
		out.map((i) => i.pairedItem),
		[{ item: 0 }, { item: 1 }, { item: 2 }],
	);
	assert.equal(SuccessItem.parse(out[0].json).data.status, 'succeeded');
	const error = out[1].json.error as Record<string, any>;
	assert.deepEqual(
		[error.status_code, error.details.code, error.ctx.operation],
		[409, 'NOT_LOCKED_BY_WORKER', 'job.finishJob'],
	);
	assert.equal(SuccessItem.parse(out[2].json).data.status, 'queued');
	const { rows } = await db.pool.query('SELECT status FROM ops.jobs WHERE id = ANY($1) ORDER BY id', [
		jobs.map((j) => j.id),
	]);
	assert.deepEqual(
		rows.map((r) => r.status),
		['succeeded', 'running', 'queued'],
	);
});

test('State Machine: an import with an unguarded cycle is refused (400, named); a valid one is used by the next Capture; export omits defaults', async () => {
	const cyclic = {
		workflows: [
			{ name: 'pipeline-runs', initialState: 'NEW', states: { NEW: { transitions: [{ name: 'SPIN', next: 'NEW' }] } } },
		],
	};
	const [refused] = await run([
		{ resource: 'stateMachine', operation: 'import', body: cyclic, model: 'pipeline_runs', modelVersion: 1 },
	]);
	const error = refused[0].json.error as Record<string, any>;
	assert.equal(error.status_code, 400);
	assert.match(error.message, /infinite loop detected: NEW -> NEW/);
	// The shipped machine with CAPTURE_ANALYSIS disabled: Capture must now refuse it as illegal.
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const { shippedDefinition } =
		require('../../dist/nodes/PipelineCapture/engine/definition.js') as typeof import('../../nodes/PipelineCapture/engine/definition');
	const edited = structuredClone(shippedDefinition()) as unknown as {
		states: Record<string, { transitions: { name: string; disabled?: boolean }[] }>;
	};
	edited.states.NEW.transitions[0].disabled = true;
	const [imported] = await run([
		{
			resource: 'stateMachine',
			operation: 'import',
			body: { importMode: 'REPLACE', workflows: [edited] },
			model: 'pipeline_runs',
			modelVersion: 1,
		},
	]);
	assert.deepEqual(SuccessItem.parse(imported[0].json).data.workflows, ['pipeline-runs']);
	const [created] = await run([createParams('q')], [tokenItem('sm-user')]);
	const id = SuccessItem.parse(created[0].json).data.request_id;
	const [failed] = await run([{ resource: 'run', operation: 'capture', runId: id, transition: 'CAPTURE_ANALYSIS' }]);
	const illegal = failed[0].json.error as Record<string, any>;
	assert.deepEqual([illegal.status_code, illegal.details.code], [409, 'ILLEGAL_TRANSITION']);
	const [exported] = await run([
		{ resource: 'stateMachine', operation: 'export', model: 'pipeline_runs', modelVersion: 1 },
	]);
	const body = SuccessItem.parse(exported[0].json).data as { workflows: { states: Record<string, unknown> }[] };
	assert.deepEqual(body.workflows[0].states.COMPLETED, {});
	assert.deepEqual((body.workflows[0].states.NEW as { transitions: unknown[] }).transitions[0], {
		name: 'CAPTURE_ANALYSIS',
		next: 'ANALYZING',
		manual: true,
		disabled: true,
	});
	await run([
		{
			resource: 'stateMachine',
			operation: 'import',
			body: { importMode: 'REPLACE', workflows: [shippedDefinition()] },
			model: 'pipeline_runs',
			modelVersion: 1,
		},
	]);
});

/** Rows of `user` in pipeline_runs and raw_logs. */
async function rowsOf(user: string) {
	const { rows } = await db.pool.query<{ runs: number; logs: number }>(
		'SELECT (SELECT count(*)::int FROM maas.pipeline_runs WHERE user_id = $1) AS runs, (SELECT count(*)::int FROM maas.raw_logs WHERE user_id = $1) AS logs',
		[user],
	);
	return rows[0];
}

test("Create Run takes the token's sub: no body user_id or the same one is accepted; a different one → 403 and nothing written", async () => {
	const [created] = await run(
		[createParams('first'), createParams('second'), createParams('third'), createParams('as bob')],
		[
			tokenItem('alice-1'),
			tokenItem('alice-1', { body: { user_id: 'alice-1', query: 'second' } }),
			tokenItem(1234, { body: { user_id: 1234 } }),
			tokenItem('alice-1', { body: { user_id: 'bob-1' } }),
		],
	);
	const ids = created.slice(0, 3).map((i) => SuccessItem.parse(i.json).data.request_id as string);
	const { rows } = await db.pool.query<{ id: string; user_id: string }>(
		'SELECT id, user_id FROM maas.pipeline_runs WHERE id = ANY($1::uuid[]) ORDER BY created_at',
		[ids],
	);
	assert.deepEqual(
		rows.map((r) => [r.id, r.user_id]),
		[
			[ids[0], 'alice-1'],
			[ids[1], 'alice-1'],
			[ids[2], '1234'],
		],
	);
	const refused = created[3].json.error as Record<string, any>;
	assert.deepEqual(
		[refused.status_code, refused.kind, refused.retryable, refused.details.code],
		[403, 'auth', false, 'IDENTITY_MISMATCH'],
	);
	assert.equal(refused.ctx.operation, 'run.createRun', 'the error item keeps its ctx');
	assert.deepEqual(await rowsOf('bob-1'), { runs: 0, logs: 0 });
	assert.deepEqual(await rowsOf('alice-1'), { runs: 2, logs: 2 }, 'the refused item wrote nothing as alice either');
	assert.ok(!JSON.stringify(refused).includes('test-token-secret'), 'the token is not in the error');
	const [anonymous] = await run(
		[createParams('no token')],
		[{ json: { body: { user_id: 'carol-1', query: 'no token' } } }],
	);
	assert.deepEqual(
		[
			(anonymous[0].json.error as Record<string, any>).status_code,
			(anonymous[0].json.error as Record<string, any>).details.code,
		],
		[401, 'UNAUTHENTICATED'],
	);
	assert.deepEqual(await rowsOf('carol-1'), { runs: 0, logs: 0 });
});

test("Get Status answers the run's owner only: another user's token gets the same 404 as an unknown id", async () => {
	const [created] = await run([createParams('mine')], [tokenItem('owner-1')]);
	const id = SuccessItem.parse(created[0].json).data.request_id as string;
	const unknown = '7d4c8d2e-0000-4000-8000-000000000000';
	const correlation = { 'x-correlation-id': 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee' };
	const status = (runId: string) => ({
		resource: 'run',
		operation: 'getStatus',
		runId,
		identity: 'token',
		identityClaim: 'sub',
	});
	const [answers] = await run(
		[status(id), status(id), status(unknown)],
		[
			tokenItem('owner-1', { params: { id } }),
			tokenItem('other-1', { headers: correlation }),
			tokenItem('other-1', { headers: correlation }),
		],
	);
	assert.deepEqual(SuccessItem.parse(answers[0].json).data, { request_id: id, status: 'processing' });
	const foreign = answers[1].json.error as Record<string, any>;
	const missing = answers[2].json.error as Record<string, any>;
	assert.deepEqual([foreign.status_code, foreign.details.code], [404, 'NOT_FOUND']);
	const withoutIds = (error: unknown) =>
		JSON.parse(JSON.stringify(error).replaceAll(id, '<id>').replaceAll(unknown, '<id>'));
	assert.deepEqual(withoutIds(foreign), withoutIds(missing), "another user's run and an unknown id answer alike");
	// User ID Field identity: the same owner check; an empty User ID is refused, never "any owner"
	const byField = (userId: unknown) => ({
		resource: 'run',
		operation: 'getStatus',
		runId: id,
		identity: 'field',
		userId,
	});
	const [fields] = await run([byField('owner-1'), byField('other-1'), byField('')]);
	assert.equal(SuccessItem.parse(fields[0].json).data.status, 'processing');
	assert.deepEqual(
		[1, 2].map((i) => (fields[i].json.error as Record<string, any>).status_code),
		[404, 422],
	);
});
