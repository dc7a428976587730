/**
 * Pipeline Capture run by n8n's own execution engine (test/helpers/n8nEngine.ts, n8n-core 2.4.4) on real
 * PostgreSQL: what the execute-function fakes of pipelineCaptureNode.test.ts cannot show — n8n resolving
 * `={{ … }}` parameters (also `$('Input').item`, which follows pairedItem back through our node), the
 * engine's onError modes (continueErrorOutput: our `{ error }` items on the third output, merged with
 * their input item; continueRegularOutput; stop), pairedItem on every item of every output, and the
 * credential as n8n hands it over (declared, set on the node, shown for the resource).
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { INodeExecutionData } from 'n8n-workflow';
import { SuccessItem } from '../../nodes/shared/contracts/envelope';
import { clearExecutionPools } from '../../nodes/shared/postgres/executionPool';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { PASS_THROUGH, runWorkflow, sinkOf, stopEngine, type EngineNode, type RunOptions } from '../helpers/n8nEngine';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await closeAllPools();
	await db?.drop();
	stopEngine();
});

const CREDENTIALS = { postgresContractsApi: 'Contracts DB' };

/** A Pipeline Capture node named `name` with the PostgreSQL credential set. */
const capture = (name: string, parameters: EngineNode['parameters'], onError?: EngineNode['onError']): EngineNode => ({
	name,
	type: 'pipelineCapture',
	parameters,
	credentials: CREDENTIALS,
	...(onError ? { onError } : {}),
});

const run = (options: Omit<RunOptions, 'credentials'> & Partial<Pick<RunOptions, 'credentials'>>) =>
	runWorkflow({ credentials: { postgresContractsApi: { ...db.credential } }, ...options });

/** The item n8n's Webhook node emits after verifying a JWT (Authentication = JWT Auth). */
const webhookItem = (sub: unknown, body: Record<string, unknown>): INodeExecutionData => ({
	json: { headers: {}, body, jwtPayload: { sub, iat: 1_700_000_000 } },
});

/** Every item of every main output of `name` is paired to an input item in [0, inputs). */
function assertPaired(result: Awaited<ReturnType<typeof runWorkflow>>, name: string, inputs: number) {
	for (let output = 0; output < result.outputCount(name); output++) {
		for (const item of result.output(name, output)) {
			const paired = item.pairedItem as { item: number } | undefined;
			assert.ok(
				paired && Number.isInteger(paired.item) && paired.item >= 0 && paired.item < inputs,
				`${name} output ${output}: pairedItem ${JSON.stringify(item.pairedItem)}`,
			);
		}
	}
}

test('expressions: Query from {{ $json.body.q }}, then Capture by {{ $json.data.request_id }} of the previous node, with $("Input").item through pairedItem', async () => {
	const result = await run({
		nodes: [
			capture('Create Run', {
				resource: 'run',
				operation: 'createRun',
				identity: 'token',
				identityClaim: 'sub',
				query: '={{ $json.body.q.trim() }}',
			}),
			capture('Capture', {
				resource: 'run',
				operation: 'capture',
				runId: '={{ $json.data.request_id }}',
				transition: 'CAPTURE_ANALYSIS',
				options: { worker: "={{ 'worker-' + $('Input').item.json.body.who }}" },
			}),
		],
		connections: { 'Create Run': [['Capture']] },
		items: [webhookItem('u1', { q: '  first question ', who: 'a' }), webhookItem('u2', { q: 'second', who: 'b' })],
	});
	assert.equal(result.error, undefined);
	assert.deepEqual(result.order.slice(0, 3), ['Input', 'Create Run', 'Capture']);
	const created = result.output('Create Run').map((i) => SuccessItem.parse(i.json).data);
	assert.equal(created.length, 2);
	const { rows } = await db.pool.query<{ id: string; user_id: string; user_query: string; captured_by: string }>(
		'SELECT id, user_id, user_query, captured_by FROM maas.pipeline_runs WHERE id = ANY($1) ORDER BY user_id',
		[created.map((c) => c.request_id)],
	);
	assert.deepEqual(
		rows.map((r) => [r.user_id, r.user_query, r.captured_by]),
		[
			['u1', 'first question', 'worker-a'],
			['u2', 'second', 'worker-b'],
		],
	);
	const done = result.output('Capture', 0).map((i) => SuccessItem.parse(i.json).data);
	assert.deepEqual(
		done.map((d) => [d.captured, d.status]),
		[
			[true, 'ANALYZING'],
			[true, 'ANALYZING'],
		],
	);
	assertPaired(result, 'Create Run', 2);
	assertPaired(result, 'Capture', 2);
});

test('continueErrorOutput: a failed item goes to the engine\'s error output (third), merged with its input item; the others stay on "Done"', async () => {
	const result = await run({
		nodes: [
			capture(
				'Create Run',
				{
					resource: 'run',
					operation: 'createRun',
					identity: 'token',
					identityClaim: 'sub',
					query: '={{ $json.body.q }}',
				},
				'continueErrorOutput',
			),
		],
		items: [
			webhookItem('u1', { q: 'fine' }),
			{ json: { headers: {}, body: { q: 'no token' } } },
			webhookItem('u3', { q: 'fine too' }),
		],
	});
	assert.equal(result.error, undefined);
	// Done, Not Captured and the error output n8n adds for continueErrorOutput
	assert.equal(result.outputCount('Create Run'), 3);
	assert.deepEqual(
		result.output('Create Run', 0).map((i) => i.pairedItem),
		[{ item: 0 }, { item: 2 }],
	);
	assert.equal(result.output('Create Run', 1).length, 0);
	const [failed, ...more] = result.output('Create Run', 2);
	assert.equal(more.length, 0);
	assert.deepEqual(failed.pairedItem, { item: 1 });
	assert.equal(result.output(sinkOf('Create Run', 2)).length, 1, 'n8n ran the error branch with it');
	const error = failed.json.error as Record<string, any>;
	assert.deepEqual([error.status_code, error.kind, error.details.code], [401, 'auth', 'UNAUTHENTICATED']);
	assert.equal(error.ctx.node, 'Create Run');
	// n8n merges the input item's json into an error-output item (a downstream node sees both)
	assert.deepEqual(failed.json.body, { q: 'no token' });
	// the sink after "Done" got the two successes, nothing reached "Not Captured"'s sink
	assert.equal(result.output(sinkOf('Create Run', 0)).length, 2);
	assert.equal(result.output(sinkOf('Create Run', 1)).length, 0);
	const { rows } = await db.pool.query(
		"SELECT count(*)::int AS n FROM maas.pipeline_runs WHERE user_query = 'no token'",
	);
	assert.equal(rows[0].n, 0);
});

test('continueRegularOutput keeps the error item on "Done" (paired); stop mode fails the execution naming the item', async () => {
	const items = [webhookItem('u1', { q: 'ok' }), { json: { body: { q: 'anonymous' } } }];
	const parameters = {
		resource: 'run',
		operation: 'createRun',
		identity: 'token',
		identityClaim: 'sub',
		query: '={{ $json.body.q }}',
	};
	const regular = await run({ nodes: [capture('Create Run', parameters, 'continueRegularOutput')], items });
	assert.equal(regular.error, undefined);
	assert.equal(regular.outputCount('Create Run'), 2);
	const done = regular.output('Create Run', 0);
	assert.deepEqual(
		done.map((i) => i.pairedItem),
		[{ item: 0 }, { item: 1 }],
	);
	assert.equal((done[1].json.error as Record<string, unknown>).status_code, 401);

	const stopped = await run({ nodes: [capture('Create Run', parameters)], items });
	assert.ok(stopped.error, 'the execution failed');
	assert.equal(stopped.error.name, 'NodeOperationError');
	assert.match(stopped.error.message, /no verified token/);
	assert.match(String(stopped.error.description), /status 401 \(auth\)/);
	assert.equal(stopped.output(sinkOf('Create Run', 0)).length, 0, 'nothing ran after the failed node');
});

test('pairedItem on every item of every output: Done and Not Captured of one race, Claim Jobs fanning one item out', async () => {
	const created = await run({
		nodes: [
			capture('Create Run', {
				resource: 'run',
				operation: 'createRun',
				identity: 'token',
				identityClaim: 'sub',
				query: 'race',
			}),
		],
		items: [webhookItem('racer', {})],
	});
	const id = SuccessItem.parse(created.output('Create Run')[0].json).data.request_id as string;
	const race = await run({
		nodes: [
			capture('Capture', {
				resource: 'run',
				operation: 'capture',
				runId: '={{ $json.id }}',
				transition: 'CAPTURE_ANALYSIS',
			}),
		],
		items: [{ json: { id } }, { json: { id } }, { json: { id } }],
	});
	assert.equal(race.output('Capture', 0).length, 1);
	assert.equal(race.output('Capture', 1).length, 2);
	assert.deepEqual(
		[...race.output('Capture', 0), ...race.output('Capture', 1)]
			.map((i) => (i.pairedItem as { item: number }).item)
			.sort(),
		[0, 1, 2],
	);
	assert.equal(race.output(sinkOf('Capture', 1)).length, 2, 'n8n routed "Not Captured" to its own branch');
	assertPaired(race, 'Capture', 3);

	await db.pool.query("INSERT INTO ops.jobs (job_type) SELECT 'engine-fan' FROM generate_series(1, 4)");
	const claimed = await run({
		nodes: [
			capture('Claim Jobs', { resource: 'job', operation: 'claimJobs', jobType: '={{ $json.type }}', batchSize: 10 }),
			{ name: 'After', type: PASS_THROUGH },
		],
		connections: { 'Claim Jobs': [['After'], []] },
		items: [{ json: { type: 'engine-fan', tag: 'origin' } }],
		executionId: '555',
	});
	const jobs = claimed.output('Claim Jobs').map((i) => SuccessItem.parse(i.json).data);
	assert.equal(jobs.length, 4);
	assert.ok(
		jobs.every((j) => j.locked_by === 'n8n-555'),
		"worker name from n8n's execution id",
	);
	assertPaired(claimed, 'Claim Jobs', 1);
	assert.equal(claimed.output('After').length, 4);
});

test('credential: n8n reads only the declared, shown credential and resolves its expressions; a node without it fails before any SQL', async () => {
	const result = await run({
		nodes: [capture('Stats', { resource: 'job', operation: 'getStats' })],
		items: [{ json: { database: db.credential.database } }],
		credentials: { postgresContractsApi: { ...db.credential, database: '={{ $json.database }}' } },
	});
	assert.equal(result.error, undefined);
	const stats = result.output('Stats');
	assert.ok(stats.length > 0);
	assert.ok(stats.every((i) => SuccessItem.parse(i.json).status_code === 200));
	// contractsLlmApi is required too, but shown only for the Model resource: n8n does not ask for it
	assert.deepEqual([...new Set(result.credentialsRead)], ['postgresContractsApi']);

	const missing = await run({
		nodes: [{ name: 'Stats', type: 'pipelineCapture', parameters: { resource: 'job', operation: 'getStats' } }],
		items: [{ json: {} }],
	});
	assert.match(String(missing.error?.message), /Node does not have any credentials set/);
	assert.deepEqual(missing.credentialsRead, []);
});

test('Options → Reuse Credential for 5 Seconds (the shipped MaaS workflows and WF90): the credential is read through n8n once per 5 s per workflow; off (the default): on every execution', async () => {
	clearExecutionPools();
	const status = (options: Record<string, unknown>) =>
		capture('Create Run', {
			resource: 'run',
			operation: 'createRun',
			identity: 'token',
			identityClaim: 'sub',
			query: 'reuse?',
			options,
		});
	const reads = async (options: Record<string, unknown>, workflowIds: string[]) => {
		const out: string[][] = [];
		for (const workflowId of workflowIds) {
			const result = await run({
				nodes: [status(options)],
				connections: {},
				items: [webhookItem('u1', {})],
				workflowId,
			});
			assert.equal(result.error, undefined);
			assert.equal(result.output('Create Run', 0).length, 1, 'the run is created');
			out.push(result.credentialsRead);
		}
		return out;
	};
	assert.deepEqual(
		await reads({ reuseCredential: true }, ['wf-a', 'wf-a', 'wf-b']),
		[['postgresContractsApi'], [], ['postgresContractsApi']],
		'the second execution of wf-a reused it; wf-b read its own',
	);
	clearExecutionPools();
	assert.deepEqual(await reads({}, ['wf-a', 'wf-a']), [['postgresContractsApi'], ['postgresContractsApi']]);
	clearExecutionPools();
});
