/**
 * Issue 25 §2: the catch-all error workflow's row (Error Pipe "Once per Failed Execution",
 * recordOncePerExecution, migration 018) against the real PostgreSQL: one ops.errors row per failed n8n
 * execution (named by n8n instance + execution id), none when an error branch recorded that node's failure
 * already, a linked one when it recorded another node's, exactly one when many catch-alls race for it, one
 * when the statement's reply is lost and it is sent again, a new one for a claim older than 7 days, and the
 * row still written (claim_failed) when the claim table is missing. The kept execution.error holds no secret. Plus a fast-check property:
 * for any Error Trigger item (hostile ids, names, messages) the catch-all gives one valid envelope and at
 * most one row per execution id that fits, never throwing.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import fc from 'fast-check';
import { Pool } from 'pg';
import { ErrorEnvelope } from '../../nodes/shared/contracts/envelope';
import { executionIdOf, isErrorTriggerItem, normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { CLAIM_STALE_AFTER_SECONDS, recordError, recordOncePerExecution } from '../../nodes/ErrorPipe/actions/record';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { hostileId, hostileString, propertyParams } from '../helpers/property';
import { closeProxiedDatabase, setupProxiedDatabase } from '../helpers/proxiedDatabase';
import type { TcpProxy } from '../helpers/tcpProxy';

let db: TestDatabase;
let proxy: TcpProxy;
let proxied: Pool;
beforeAll(async () => {
	({ db, proxy, proxied } = await setupProxiedDatabase());
});
afterAll(() => closeProxiedDatabase({ db, proxy, proxied }));

const INSTANCE = `instance-${randomUUID()}`;
const CATCH_ALL = { source: 'WF99e catch-all', oncePerExecution: true, instanceId: INSTANCE };
/** An error branch's options (WF99 called by execution `executionId` of the same n8n instance). */
const branchOptions = (executionId: string, instanceId = INSTANCE) => ({ source: 'WF99', executionId, instanceId });
let nextExecution = 1_000_000;

/** The item n8n 2.4.8's Error Trigger emits for a failed execution (execute-error-workflow.js). */
function errorTriggerItem(executionId: string, message = `boom ${randomUUID()}`) {
	return {
		execution: {
			id: executionId,
			url: `http://127.0.0.1:5678/workflow/wfX/executions/${executionId}`,
			error: {
				message,
				stack: 'NodeOperationError: boom\n    at Code',
				node: {
					id: 'n1',
					name: 'Throw',
					type: 'n8n-nodes-base.code',
					typeVersion: 2,
					parameters: { jsCode: 's3cret' },
				},
			},
			lastNodeExecuted: 'Throw',
			mode: 'webhook',
			executionContext: { version: 1, establishedAt: 1, source: 'webhook' },
		},
		workflow: { id: 'wfX', name: 'Test — throws' },
	};
}

/** The catch-all: normalize (as the node does) + recordOncePerExecution. */
async function catchAll(pool: Pool, item: unknown, instanceId = INSTANCE) {
	const normalized = normalizeErrorItem(item, { ...CATCH_ALL, instanceId });
	normalized.envelope.error.details.recorded_by = 'catch_all';
	const result = await recordOncePerExecution(
		pool,
		normalized.envelope,
		normalized.executionId,
		normalized.contractVersion,
		{ instanceId, failedNode: normalized.failedNode },
	);
	return { ...result, envelope: normalized.envelope, executionId: normalized.executionId };
}

async function rowsOf(executionId: string) {
	const { rows } = await db.pool.query(
		`SELECT id, workflow, node, source, message, details FROM ops.errors WHERE details->>'execution_id' = $1 ORDER BY id`,
		[executionId],
	);
	return rows;
}

test('an Error Trigger item: one row with the execution id, workflow, node and meta.source of the catch-all', async () => {
	const id = String(nextExecution++);
	const item = errorTriggerItem(id);
	const result = await catchAll(db.pool, item);
	assert.deepEqual(result.write_failures, []);
	assert.equal(result.execution?.outcome, 'recorded');
	const rows = await rowsOf(id);
	assert.equal(rows.length, 1);
	assert.equal(Number(rows[0].id), result.error_id);
	assert.equal(rows[0].workflow, 'Test — throws');
	assert.equal(rows[0].node, 'Throw');
	assert.equal(rows[0].source, 'WF99e catch-all');
	assert.equal(rows[0].message, item.execution.error.message);
	assert.equal(rows[0].details.recorded_by, 'catch_all');
	assert.equal(rows[0].details.execution.workflow.id, 'wfX');
	assert.equal(rows[0].details.execution.lastNodeExecuted, 'Throw');
	assert.ok(!JSON.stringify(rows[0]).includes('s3cret'), 'the failed node parameters are not copied');
	assert.equal(rows[0].details.instance_id, INSTANCE);
	const claim = await db.pool.query(
		'SELECT instance_id, error_id, recorded_by, node FROM ops.error_executions WHERE execution_id = $1',
		[id],
	);
	assert.deepEqual(claim.rows, [
		{ instance_id: INSTANCE, error_id: String(result.error_id), recorded_by: 'catch_all', node: 'Throw' },
	]);
	ErrorEnvelope.parse(result.envelope);
	assert.equal(result.envelope.meta.source, 'WF99e catch-all');
});

test("a node's failure an error branch recorded already: the catch-all writes nothing and names that row", async () => {
	const id = String(nextExecution++);
	// the error branch: WF99's Error Pipe, called by execution `id` (its execution context names the caller)
	const branch = normalizeErrorItem(
		{ ctx: { correlation_id: randomUUID(), workflow: 'WF10' }, error_context: { node: 'Throw' }, message: 'x' },
		branchOptions(id),
	);
	const recorded = await recordError(db.pool, branch.envelope, null, branch.contractVersion);
	assert.equal(branch.executionId, id);
	// a second item of the same execution still gets its row (every branch item is recorded)
	const second = normalizeErrorItem({ message: 'y' }, branchOptions(id));
	await recordError(db.pool, second.envelope, null, second.contractVersion);
	const result = await catchAll(db.pool, errorTriggerItem(id));
	assert.deepEqual(result.write_failures, []);
	assert.deepEqual(result.execution, {
		instance_id: INSTANCE,
		execution_id: id,
		outcome: 'already_recorded',
		error_id: recorded.error_id,
		recorded_by: 'branch',
	});
	assert.equal(result.error_id, recorded.error_id);
	assert.deepEqual(
		(await rowsOf(id)).map((r) => r.source),
		['WF99', 'WF99'],
		'the two branch rows, no catch-all row',
	);
});

test('another node failing after the error branch recorded one (Respond Error fails after Call WF99): a linked row, once', async () => {
	const id = String(nextExecution++);
	const branch = normalizeErrorItem({ error_context: { node: 'Lookup Bot' }, message: 'x' }, branchOptions(id));
	const recorded = await recordError(db.pool, branch.envelope, null, branch.contractVersion);
	const item = errorTriggerItem(id); // execution.error.node.name: Throw
	const result = await catchAll(db.pool, item);
	assert.deepEqual(result.write_failures, []);
	assert.equal(result.execution?.outcome, 'recorded');
	assert.equal(result.execution?.branch_error_id, recorded.error_id);
	const again = await catchAll(db.pool, item);
	assert.equal(again.execution?.outcome, 'already_recorded');
	const rows = await rowsOf(id);
	assert.deepEqual(
		rows.map((r) => [r.source, r.node]),
		[
			['WF99', 'Lookup Bot'],
			['WF99e catch-all', 'Throw'],
		],
	);
	assert.equal(rows[1].details.branch_error_id, recorded.error_id);
	assert.equal(Number(rows[1].id), result.error_id);
	assert.equal(again.error_id, recorded.error_id, 'the execution is named by its first (branch) row');
});

test('the same execution id of another n8n instance (ids restart per n8n database): its own row', async () => {
	const id = String(nextExecution++);
	const branch = normalizeErrorItem({ error_context: { node: 'Throw' }, message: 'x' }, branchOptions(id, 'other-n8n'));
	await recordError(db.pool, branch.envelope, null, branch.contractVersion);
	const first = await catchAll(db.pool, errorTriggerItem(id), 'other-n8n');
	assert.equal(first.execution?.outcome, 'already_recorded');
	const result = await catchAll(db.pool, errorTriggerItem(id));
	assert.equal(result.execution?.outcome, 'recorded');
	const rows = await rowsOf(id);
	assert.deepEqual(
		rows.map((r) => [r.source, r.details.instance_id]),
		[
			['WF99', 'other-n8n'],
			['WF99e catch-all', INSTANCE],
		],
	);
});

test(`a claim older than ${CLAIM_STALE_AFTER_SECONDS} s (an execution id used again): a new failure replaces it`, async () => {
	const id = String(nextExecution++);
	const old = await catchAll(db.pool, errorTriggerItem(id));
	await db.pool.query(
		`UPDATE ops.error_executions SET created_at = now() - make_interval(secs => $3 + 60)
		 WHERE instance_id = $1 AND execution_id = $2`,
		[INSTANCE, id, CLAIM_STALE_AFTER_SECONDS],
	);
	const results = await Promise.all([1, 2, 3].map(() => catchAll(db.pool, errorTriggerItem(id))));
	const fresh = results.filter((r) => r.execution?.outcome === 'recorded');
	assert.equal(fresh.length, 1, 'one of three racing catch-alls replaces the stale claim');
	const rows = await rowsOf(id);
	assert.deepEqual(
		rows.map((r) => Number(r.id)),
		[old.error_id, fresh[0].error_id],
	);
	const claim = await db.pool.query(
		'SELECT error_id FROM ops.error_executions WHERE instance_id = $1 AND execution_id = $2',
		[INSTANCE, id],
	);
	assert.equal(Number(claim.rows[0].error_id), fresh[0].error_id);
	// an error branch's row replaces a stale claim too
	await db.pool.query(
		`UPDATE ops.error_executions SET created_at = now() - make_interval(secs => $3 + 60)
		 WHERE instance_id = $1 AND execution_id = $2`,
		[INSTANCE, id, CLAIM_STALE_AFTER_SECONDS],
	);
	const branch = normalizeErrorItem({ error_context: { node: 'Throw' }, message: 'x' }, branchOptions(id));
	const recorded = await recordError(db.pool, branch.envelope, null, branch.contractVersion);
	const after = await db.pool.query(
		'SELECT error_id, recorded_by FROM ops.error_executions WHERE instance_id = $1 AND execution_id = $2',
		[INSTANCE, id],
	);
	assert.deepEqual(after.rows, [{ error_id: String(recorded.error_id), recorded_by: 'branch' }]);
});

test('the claim table missing (42P01): the catch-all row is still written, claim_failed named', async () => {
	const other = await setupDatabase();
	try {
		await other.pool.query('DROP TABLE ops.error_executions');
		const id = String(nextExecution++);
		const result = await catchAll(other.pool, errorTriggerItem(id));
		assert.deepEqual(result.write_failures, []);
		assert.equal(result.execution?.outcome, 'recorded');
		const { rows } = await other.pool.query(`SELECT id, details FROM ops.errors WHERE details->>'execution_id' = $1`, [
			id,
		]);
		assert.equal(rows.length, 1);
		assert.equal(Number(rows[0].id), result.error_id);
		assert.equal(rows[0].details.claim_failed, '42P01');
	} finally {
		await other.drop();
	}
});

test("an NodeApiError in the Error Trigger's item: only its named fields kept, no header, query or body secret", async () => {
	const id = String(nextExecution++);
	const item = errorTriggerItem(id);
	const url = 'http://127.0.0.1:9/v1/things?api_key=QKEY-77aa99bb&x=1';
	item.execution.error = {
		name: 'NodeApiError',
		message: 'Authorization failed - please check your credentials',
		description: `GET ${url} answered 401`,
		httpCode: '401',
		lineNumber: 3,
		timestamp: 1_700_000_000_000,
		functionality: 'regular',
		stack: `NodeApiError: Authorization failed\n    at request (${url})`,
		errorResponse: { headers: { 'X-Custom-Token': 'TOKEN-4411ccdd' }, body: 'BODY-SECRET-55' },
		cause: { config: { url, headers: { 'X-Custom-Token': 'TOKEN-4411ccdd' }, data: 'BODY-SECRET-55' } },
		context: { request: { headers: { 'X-Custom-Token': 'TOKEN-4411ccdd' } } },
		options: { url, headers: { 'X-Custom-Token': 'TOKEN-4411ccdd' } },
		node: item.execution.error.node,
	} as unknown as typeof item.execution.error;
	const result = await catchAll(db.pool, item);
	const { rows } = await db.pool.query('SELECT * FROM ops.errors WHERE id = $1', [result.error_id]);
	const text = JSON.stringify(rows[0]) + JSON.stringify(result.envelope);
	for (const secret of ['QKEY-77aa99bb', 'TOKEN-4411ccdd', 'BODY-SECRET-55', 's3cret'])
		assert.ok(!text.includes(secret), `${secret} is not in the row`);
	const kept = rows[0].details.execution.error;
	assert.deepEqual(Object.keys(kept).sort(), [
		'description',
		'functionality',
		'httpCode',
		'lineNumber',
		'message',
		'name',
		'node',
		'stack',
		'timestamp',
	]);
	assert.equal(kept.httpCode, '401');
	assert.ok(kept.description.includes('api_key=[REDACTED]&x=1'));
});

test('20 catch-alls racing for one execution (and again later): exactly one row', async () => {
	const id = String(nextExecution++);
	const results = await Promise.all(Array.from({ length: 20 }, () => catchAll(db.pool, errorTriggerItem(id))));
	const again = await catchAll(db.pool, errorTriggerItem(id));
	const rows = await rowsOf(id);
	assert.equal(rows.length, 1);
	const all = [...results, again];
	assert.equal(all.filter((r) => r.execution?.outcome === 'recorded').length, 1);
	assert.ok(all.every((r) => r.error_id === Number(rows[0].id) && r.write_failures.length === 0));
});

test('a catch-all racing an error branch whose statement is still open: one row, the branch row', async () => {
	const id = String(nextExecution++);
	const client = await db.pool.connect();
	try {
		await client.query('BEGIN');
		const branch = normalizeErrorItem({ message: 'branch' }, branchOptions(id));
		await client.query(
			`INSERT INTO ops.errors (correlation_id, kind, status_code, retryable, message, details, source, node)
			 VALUES ($1, 'unknown', 500, false, 'branch', $2::jsonb, 'WF99', 'Throw')`,
			[branch.envelope.meta.correlation.correlation_id, branch.envelope.error.details],
		);
		const pending = catchAll(db.pool, errorTriggerItem(id));
		await new Promise((resolve) => setTimeout(resolve, 300));
		await client.query('COMMIT');
		const result = await pending;
		assert.equal(result.execution?.outcome, 'already_recorded');
		assert.equal(result.execution?.recorded_by, 'branch');
	} finally {
		client.release();
	}
	assert.deepEqual(
		(await rowsOf(id)).map((r) => r.source),
		['WF99'],
	);
});

test('the reply of the catch-all statement lost after its commit: sent again, still one row, reported recorded', async () => {
	const id = String(nextExecution++);
	const item = errorTriggerItem(id, `lost reply ${randomUUID()}`);
	const droppedBefore = proxy.dropped;
	proxy.dropReplyTo(item.execution.error.message);
	const result = await catchAll(proxied, item);
	assert.equal(proxy.dropped, droppedBefore + 1, 'the reply of the statement was dropped');
	const rows = await rowsOf(id);
	assert.equal(rows.length, 1);
	assert.deepEqual(result.write_failures, []);
	assert.equal(result.execution?.outcome, 'recorded');
	assert.equal(result.error_id, Number(rows[0].id));
});

test('the claim gone between the statement and its read (its row deleted): error_id null, not the unused id', async () => {
	const id = String(nextExecution++);
	const first = await catchAll(db.pool, errorTriggerItem(id));
	// the real pool, its claim read preceded by deleting the execution's row (the claim goes with it)
	const racing = Object.create(db.pool) as Pool;
	racing.query = (async (text: string, params?: unknown[]) => {
		if (typeof text === 'string' && /FROM ops\.error_executions WHERE/.test(text))
			await db.pool.query('DELETE FROM ops.errors WHERE id = $1', [first.error_id]);
		return db.pool.query(text, params);
	}) as Pool['query'];
	const result = await catchAll(racing, errorTriggerItem(id));
	assert.deepEqual(result.write_failures, []);
	assert.equal(result.error_id, null);
	assert.equal(result.execution?.outcome, 'already_recorded');
	assert.equal(result.execution?.error_id, null);
	assert.equal((await rowsOf(id)).length, 0);
});

test('an Error Trigger item without an execution (a trigger that failed): recorded, no claim', async () => {
	const message = `trigger ${randomUUID()}`;
	const result = await catchAll(db.pool, {
		trigger: { error: { message }, mode: 'trigger' },
		workflow: { id: 'w', name: 'W' },
	});
	assert.equal(result.executionId, null);
	assert.deepEqual(result.write_failures, []);
	const { rows } = await db.pool.query('SELECT workflow FROM ops.errors WHERE message = $1', [message]);
	assert.deepEqual(rows, [{ workflow: 'W' }]);
});

test('the database down: the envelope still comes back, the failed write named', async () => {
	const down = new Pool({ host: '127.0.0.1', port: 1, connectionTimeoutMillis: 500 });
	down.on('error', () => undefined);
	try {
		const result = await catchAll(down, errorTriggerItem(String(nextExecution++)));
		assert.equal(result.error_id, null);
		assert.equal(result.write_failures[0].table, 'ops.errors');
		ErrorEnvelope.parse(result.envelope);
	} finally {
		await down.end();
	}
});

test('property: any Error Trigger item gives one valid envelope and at most one row per execution id, never throwing', async () => {
	const anyId = fc.oneof(hostileId(), hostileString(40), fc.nat().map(String), fc.constant(undefined));
	const item = fc.record(
		{
			execution: fc.record(
				{
					id: anyId,
					error: fc.record(
						{ message: hostileString(200), node: fc.record({ name: hostileString(20) }) },
						{ requiredKeys: [] },
					),
					lastNodeExecuted: hostileString(20),
					mode: hostileString(10),
				},
				{ requiredKeys: [] },
			),
			workflow: fc.record({ id: anyId, name: hostileString(40) }, { requiredKeys: [] }),
		},
		{ requiredKeys: ['workflow'] },
	);
	await fc.assert(
		fc.asyncProperty(item, fc.integer({ min: 1, max: 3 }), async (input, times) => {
			const results = [];
			for (let i = 0; i < times; i++) results.push(await catchAll(db.pool, input));
			for (const r of results) {
				ErrorEnvelope.parse(r.envelope);
				assert.deepEqual(r.write_failures, []);
			}
			const executionId = results[0].executionId;
			assert.equal(
				executionId,
				isErrorTriggerItem(input) ? executionIdOf((input.execution as { id?: unknown } | undefined)?.id) : null,
			);
			if (executionId !== null) {
				const { rows } = await db.pool.query(
					`SELECT count(*)::int AS n FROM ops.errors WHERE details->>'execution_id' = $1`,
					[executionId],
				);
				assert.equal(rows[0].n, 1);
				nextExecution++;
				await db.pool.query("DELETE FROM ops.errors WHERE details->>'execution_id' = $1", [executionId]);
			}
		}),
		propertyParams('catch-all Error Trigger items', { numRuns: 2_000 }),
	);
}, 600_000);
