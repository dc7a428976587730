/**
 * Issue 10 item 1 (seed 002 §1.3 invariant 1): each input that made the Error Pipe lose the row or throw
 * on 6b6f5d7, on the real PostgreSQL. Every case must give one valid ErrorEnvelope and exactly one
 * ops.errors row (counted by correlation id), with the offending value still recognisable in the row.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { ErrorEnvelope } from '../../nodes/shared/contracts/envelope';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { recordError } from '../../nodes/ErrorPipe/actions/record';
import { claimJobs } from '../../nodes/shared/jobs/queue';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { MAX_DEPTH, MAX_DETAILS_BYTES, MAX_STRING_LENGTH } from '../../nodes/shared/sanitize';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { undefinedPaths } from '../helpers/fixtures';
// The node from source: "ErrorPipe.node" alone would resolve to the codex .json beside it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ErrorPipe } =
	require('../../nodes/ErrorPipe/ErrorPipe.node.ts') as typeof import('../../nodes/ErrorPipe/ErrorPipe.node');

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await closeAllPools();
	await db?.drop();
});

/** normalize + record one item; asserts the envelope is valid and exactly one row carries its correlation id. */
async function recordOne(item: unknown) {
	const { envelope, jobId, contractVersion } = normalizeErrorItem(item, { source: 'WF99' });
	assert.ok(ErrorEnvelope.safeParse(envelope).success, 'a valid ErrorEnvelope');
	assert.deepEqual(undefinedPaths(envelope), []);
	const result = await recordError(db.pool, envelope, jobId, contractVersion);
	assert.deepEqual(result.write_failures, [], 'no write failed');
	assert.ok(result.error_id, 'ops.errors.id returned');
	const { rows } = await db.pool.query('SELECT * FROM ops.errors WHERE correlation_id = $1', [
		envelope.meta.correlation.correlation_id,
	]);
	assert.equal(rows.length, 1, 'exactly one ops.errors row');
	return { envelope, result, row: rows[0] };
}

function nestedArrays(depth: number): unknown {
	let value: unknown = 'bottom';
	for (let i = 0; i < depth; i++) value = [value];
	return value;
}

function nestedObjects(depth: number): unknown {
	let value: unknown = 'bottom';
	for (let i = 0; i < depth; i++) value = { a: value };
	return value;
}

test('a tenant_id that is not a UUID: row written, column NULL, the id kept as text in details', async () => {
	const correlation = randomUUID();
	const { row, envelope } = await recordOne({
		ctx: { correlation_id: correlation, tenant_id: 'tenant-42' },
		message: 'boom',
	});
	assert.equal(row.tenant_id, null);
	assert.equal(row.details.invalid_tenant_id, 'tenant-42');
	assert.equal(row.details.ctx.tenant_id, 'tenant-42');
	assert.equal(envelope.meta.correlation.tenant_id, null);
	assert.equal(row.details.sanitized, true);
});

test('a job_id that is not a positive int8: row written, job_id NULL, the id kept as text, no job path', async () => {
	for (const jobId of ['abc', 1.5, -7, '9223372036854775808', 2 ** 64, { id: 3 }]) {
		const { row, result } = await recordOne({ ctx: { job_id: jobId }, message: 'boom' });
		assert.equal(row.job_id, null);
		assert.equal(typeof row.details.invalid_job_id, 'string', String(jobId));
		assert.ok(row.details.invalid_job_id.length > 0);
		assert.deepEqual(result.job, { executed: false });
	}
	const { row } = await recordOne({ ctx: { job_id: 2 ** 64 } });
	assert.equal(row.details.invalid_job_id, '18446744073709552000');
});

test('NUL in message, details, ctx values and object keys: replaced by U+FFFD, flagged, row written', async () => {
	const { row, envelope } = await recordOne({
		message: 'bad\u0000byte',
		ctx: { workflow: 'WF\u000010', ['key\u0000x']: 'v\u0000' },
		error_context: { node: 'No\u0000de', table: 'core.bots' },
		error: { details: { sqlstate: '22021', ['k\u0000']: ['\u0000'] } },
	});
	assert.equal(row.message, 'bad\ufffdbyte');
	assert.equal(row.workflow, 'WF\ufffd10');
	assert.equal(row.node, 'No\ufffdde');
	assert.equal(row.details.ctx['key\ufffdx'], 'v\ufffd');
	assert.deepEqual(row.details.node_details['k\ufffd'], ['\ufffd']);
	assert.equal(row.details.sanitized, true);
	assert.equal(envelope.error.details.sanitized, true);
});

test('lone UTF-16 surrogates in strings and keys: replaced by U+FFFD, a valid pair kept', async () => {
	const { row } = await recordOne({ message: 'x\ud800y', ctx: { note: 'a\udfffb 😀', ['\ud83d']: 1 } });
	assert.equal(row.message, 'x\ufffdy');
	assert.equal(row.details.ctx.note, 'a\ufffdb 😀');
	assert.equal(row.details.ctx['\ufffd'], 1);
	assert.equal(row.details.sanitized, true);
});

test('ctx.contracts.errorpipe beyond int4: row with the current version, the declared one kept as text', async () => {
	const { row } = await recordOne({ ctx: { contracts: { errorpipe: 2 ** 40 } }, message: 'boom' });
	assert.equal(row.contract_version, 1);
	assert.equal(row.details.invalid_contract_version, '1099511627776');
	const { row: huge } = await recordOne({ ctx: { contracts: { errorpipe: 1e300 } } });
	assert.equal(huge.details.invalid_contract_version, '1e+300');
});

test('status codes out of range are kept as text, the default status is used', async () => {
	const { row } = await recordOne({ statusCode: 1e300, message: 'boom' });
	assert.equal(row.status_code, 500);
	assert.equal(row.details.invalid_status_code, '1e+300');
});

test('NaN, Infinity and BigInt anywhere: no NaN in the envelope, the values kept as text where they were ids', async () => {
	const { envelope, row } = await recordOne({
		ctx: { chat_id: NaN, message_id: Infinity, job_id: 10n ** 30n, n: -Infinity, big: 12345678901234567890n },
	});
	assert.equal(envelope.meta.correlation.chat_id, null);
	assert.equal(envelope.meta.correlation.message_id, null);
	assert.equal(row.details.invalid_job_id, '1000000000000000000000000000000');
	assert.equal(row.details.ctx.big, '12345678901234567890');
	assert.equal(row.details.ctx.n, null);
	assert.ok(!JSON.stringify(envelope).includes('NaN'));
});

test('100,000 nested arrays / objects in ctx and in error.details: capped at MAX_DEPTH levels, flagged truncated', async () => {
	for (const deep of [nestedArrays(100_000), nestedObjects(100_000), nestedArrays(2_000), nestedObjects(4_000)]) {
		const { row } = await recordOne({ message: 'deep', ctx: { deep }, error: { details: { deep } } });
		assert.equal(row.details.truncated, true);
		let depth = 0;
		let cursor: unknown = row.details.ctx.deep;
		while (cursor !== null && typeof cursor === 'object') {
			cursor = Array.isArray(cursor) ? cursor[0] : (cursor as { a: unknown }).a;
			depth++;
		}
		assert.ok(depth <= MAX_DEPTH, `kept ${depth} levels`);
		assert.match(String(cursor), /truncated/);
	}
});

test('a 50 MB message and 50 MB ctx strings: the row keeps a recognisable prefix, details within MAX_DETAILS_BYTES', async () => {
	const huge = 'A'.repeat(50 * 1024 * 1024);
	const { row } = await recordOne({
		message: huge,
		ctx: { a: huge, b: huge, c: huge },
		error_context: { error_message: huge },
	});
	assert.ok(row.message.length <= MAX_STRING_LENGTH + 64, `message ${row.message.length} chars`);
	assert.ok(row.message.startsWith('AAAA'));
	assert.match(row.message, /truncated/);
	assert.ok(Buffer.byteLength(JSON.stringify(row.details)) <= MAX_DETAILS_BYTES);
	assert.equal(row.details.truncated, true);
	assert.ok(String(row.details.ctx.a).startsWith('AAAA'));
});

test('a wide ctx (300,000 keys) and a long array: details within MAX_DETAILS_BYTES, ids still read', async () => {
	const ctx: Record<string, unknown> = {};
	for (let i = 0; i < 300_000; i++) ctx[`k${i}`] = i;
	const correlation = randomUUID();
	ctx.correlation_id = correlation;
	const { row } = await recordOne({ ctx, error: { details: { list: Array.from({ length: 500_000 }, (_, i) => i) } } });
	assert.equal(row.correlation_id, correlation);
	assert.ok(Buffer.byteLength(JSON.stringify(row.details)) <= MAX_DETAILS_BYTES);
	assert.equal(row.details.truncated, true);
	assert.equal(row.details.ctx.k0, 0);
});

test('a __proto__ key in ctx is kept as data, not dropped or turned into a prototype', async () => {
	const item = JSON.parse('{"ctx":{"__proto__":{"polluted":true},"workflow":"WF10"},"message":"p"}');
	const { row, envelope } = await recordOne(item);
	assert.deepEqual(Object.getOwnPropertyDescriptor(row.details.ctx, '__proto__')?.value, { polluted: true });
	assert.equal(Object.getOwnPropertyDescriptor(envelope.error.details.ctx, '__proto__')?.value.polluted, true);
	assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('job path: a NUL in the error message does not leave a claimed job running', async () => {
	await db.pool.query("INSERT INTO ops.jobs (job_type) VALUES ('errorpipe-nul')");
	const [job] = await claimJobs(db.pool, { job_type: 'errorpipe-nul', batch_size: 1, worker: 'w-nul' });
	const jobId = Number(job.id);
	const { result } = await recordOne({
		ctx: { job_id: jobId },
		message: 'connection\u0000lost',
		error: { retryable: false },
	});
	assert.equal(result.job.executed, true);
	const { rows } = await db.pool.query('SELECT status, locked_by, last_error FROM ops.jobs WHERE id = $1', [jobId]);
	assert.notEqual(rows[0].status, 'running');
	assert.equal(rows[0].locked_by, null);
	assert.equal(rows[0].last_error.message, 'connection\ufffdlost');
	const { rows: runs } = await db.pool.query('SELECT id::text, status, worker FROM ops.job_runs WHERE job_id = $1', [
		jobId,
	]);
	assert.deepEqual(
		runs,
		[{ id: String(job.run_id), status: 'failed', worker: 'w-nul' }],
		'the claimed attempt ended, its run written',
	);
});

function nodeContext(
	items: INodeExecutionData[],
	getNodeParameter = (_name: string, _i: number, fallback?: unknown) => fallback,
): IExecuteFunctions {
	return {
		getInputData: () => items,
		getNode: () => ({
			name: 'Error Pipe',
			type: 'n8n-nodes-contracts.errorPipe',
			typeVersion: 1,
			position: [0, 0],
			parameters: {},
			id: '1',
		}),
		getCredentials: async () => db.credential,
		getNodeParameter,
		continueOnFail: () => false,
	} as unknown as IExecuteFunctions;
}

test('the node in stop mode: deep nesting, NUL and bad ids give one envelope per item and never throw', async () => {
	const correlations = [randomUUID(), randomUUID(), randomUUID()];
	const items: INodeExecutionData[] = [
		{ json: { ctx: { correlation_id: correlations[0], deep: nestedArrays(100_000) as never }, message: 'deep' } },
		{ json: { ctx: { correlation_id: correlations[1], tenant_id: 'nope' }, message: 'nul\u0000' } },
		{
			json: {
				ctx: { correlation_id: correlations[2], contracts: { errorpipe: 2 ** 33 } },
				error: { details: nestedObjects(50_000) as never },
			},
		},
	];
	const [out] = await new ErrorPipe().execute.call(nodeContext(items));
	assert.equal(out.length, 3);
	for (const [i, item] of out.entries()) {
		const envelope = ErrorEnvelope.parse(item.json);
		assert.equal(envelope.meta.correlation.correlation_id, correlations[i]);
		assert.deepEqual(item.pairedItem, { item: i });
		assert.ok((envelope._internal as unknown as { error_id: number | null }).error_id);
	}
	const { rows } = await db.pool.query(
		'SELECT count(*)::int AS n FROM ops.errors WHERE correlation_id = ANY($1::uuid[])',
		[correlations],
	);
	assert.equal(rows[0].n, 3);
});

test('the node in stop mode: a parameter that cannot be read does not cost the item its envelope and row', async () => {
	const items: INodeExecutionData[] = [{ json: { message: 'first' } }, { json: { message: 'second' } }];
	const failing = (_name: string, i: number) => {
		if (i === 0) throw new Error('parameter exploded');
		return 'WF99-test';
	};
	const [out] = await new ErrorPipe().execute.call(nodeContext(items, failing));
	assert.equal(out.length, 2);
	const [first, second] = out.map((o) => ErrorEnvelope.parse(o.json));
	assert.deepEqual([first.error.message, first.meta.source], ['first', 'WF99']);
	assert.deepEqual([second.error.message, second.meta.source], ['second', 'WF99-test']);
	const ids = out.map((o) => (o.json._internal as { error_id: number | null }).error_id);
	const { rows } = await db.pool.query('SELECT message FROM ops.errors WHERE id = ANY($1::bigint[]) ORDER BY id', [
		ids,
	]);
	assert.deepEqual(
		rows.map((r) => r.message),
		['first', 'second'],
	);
});

test('the node with a credential that cannot give a pool (a connection string in Host): every item still gets its envelope, the failure named, no password', async () => {
	const password = `Pw-${randomUUID()}`;
	const broken = { ...db.credential, host: `postgres://app:${password}@db.invalid:5432/contracts` };
	const context = {
		...nodeContext([{ json: { message: 'first' } }, { json: { message: 'second' } }]),
		getCredentials: async () => broken,
	} as unknown as IExecuteFunctions;
	const [out] = await new ErrorPipe().execute.call(context);
	assert.equal(out.length, 2);
	for (const item of out) {
		const envelope = ErrorEnvelope.parse(item.json);
		const failures = envelope.error.details.write_failures as Array<{ table: string; message: string }>;
		assert.equal(failures.length, 1);
		assert.match(failures[0].message, /Host/);
		assert.equal((envelope._internal as unknown as { error_id: number | null }).error_id, null);
		assert.ok(!JSON.stringify(item).includes(password), 'the password never appears');
	}
});
