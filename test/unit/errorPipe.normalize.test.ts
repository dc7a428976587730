import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import { inspect } from 'node:util';
import { ErrorEnvelope } from '../../nodes/shared/contracts/envelope';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { fixtureA, fixtureB, undefinedPaths } from '../helpers/fixtures';

const options = { source: 'WF99' };

test('fixture A: correlation id and error_context.node are taken from the input; job path enabled', () => {
	const { uuid, item } = fixtureA(123);
	const { envelope, jobId } = normalizeErrorItem(item, options);
	ErrorEnvelope.parse(envelope);
	assert.equal(envelope.meta.correlation.correlation_id, uuid);
	assert.equal(envelope.error.details.error_context?.node, 'Lookup Bot');
	assert.equal(jobId, 123);
	assert.equal(envelope._internal?.job_id, 123);
	assert.equal(envelope.meta.source, 'WF99');
	assert.equal(envelope.meta.correlation.workflow, 'WF10');
	assert.equal(envelope.meta.correlation.node, 'Lookup Bot');
	assert.equal(envelope.error.kind, 'db');
	assert.equal(envelope.status_code, 500);
	assert.deepEqual(undefinedPaths(envelope), []);
});

test('fixture B: no job id → job path disabled, no undefined anywhere, details an object', () => {
	const { uuid, item } = fixtureB();
	const { envelope, jobId } = normalizeErrorItem(item, options);
	ErrorEnvelope.parse(envelope);
	assert.equal(jobId, null);
	assert.equal(envelope._internal?.job_id, null);
	assert.equal(envelope.meta.correlation.correlation_id, uuid);
	assert.equal(typeof envelope.error.details, 'object');
	assert.equal(typeof envelope.error.details.ctx, 'object');
	assert.deepEqual(undefinedPaths(envelope), []);
	assert.equal(JSON.stringify(JSON.parse(JSON.stringify(envelope))), JSON.stringify(envelope));
});

test('a correlation id is generated only when none came in', () => {
	let generated = 0;
	const newId = () => {
		generated++;
		return '00000000-0000-4000-8000-000000000001';
	};
	const withCtx = normalizeErrorItem(
		{ ctx: { correlation_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee' } },
		{ ...options, newId },
	);
	assert.equal(withCtx.envelope.meta.correlation.correlation_id, 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee');
	const fromErrorContext = normalizeErrorItem(
		{ error_context: { node: 'X', correlation_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeee0' } },
		{ ...options, newId },
	);
	assert.equal(fromErrorContext.envelope.meta.correlation.correlation_id, 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeee0');
	assert.equal(generated, 0);
	const none = normalizeErrorItem({}, { ...options, newId });
	assert.equal(none.envelope.meta.correlation.correlation_id, '00000000-0000-4000-8000-000000000001');
	assert.equal(generated, 1);
	const invalid = normalizeErrorItem({ ctx: { correlation_id: 'job-42' } }, { ...options, newId });
	assert.equal(generated, 2);
	assert.equal(invalid.envelope.error.details.invalid_correlation_id, 'job-42');
	// a malformed id in error_context does not hide the valid one of ctx
	const mixed = normalizeErrorItem(
		{ error_context: { correlation_id: 'x\u0000' }, ctx: { correlation_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeee1' } },
		{ ...options, newId },
	);
	assert.equal(generated, 2);
	assert.equal(mixed.envelope.meta.correlation.correlation_id, 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeee1');
	assert.equal(mixed.envelope.error.details.invalid_correlation_id, 'x\ufffd');
});

test('any input becomes one valid envelope', () => {
	const inputs: unknown[] = [
		{},
		null,
		'boom',
		42,
		[],
		{
			_ctx: {
				correlation_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
				tenant_id: 'bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee',
			},
		},
		{ error: 'Request failed with status code 404' },
		{
			message: 'x',
			error: { message: 'x', name: 'NodeApiError', httpCode: '429', node: { type: 'n8n-nodes-base.httpRequest' } },
		},
		{ description: 'only a description', n8nDetails: { nodeType: 'n8n-nodes-base.postgres', httpCode: 503 } },
		{ errorMessage: 'seed 003 WF99 input', statusCode: 429, ctx: { job_id: '', workflow: 'WF20' } },
		{ ctx: { job_id: 'not-a-number' }, error_context: 'not an object', extra: { deep: [undefined, () => 1, 10n] } },
		{ ctx: { job_id: null } },
	];
	for (const input of inputs) {
		const label = inspect(input);
		const { envelope, jobId } = normalizeErrorItem(input, options);
		assert.doesNotThrow(() => ErrorEnvelope.parse(envelope), label);
		assert.deepEqual(undefinedPaths(envelope), [], label);
		assert.equal(jobId, null, label);
		assert.equal(typeof envelope.error.details, 'object');
		assert.ok(envelope.error.message.length > 0);
	}
});

test('status code, kind and retryable follow the upstream error', () => {
	const rate = normalizeErrorItem({ message: 'slow down', error: { httpCode: '429' } }, options).envelope;
	assert.deepEqual([rate.status_code, rate.error.kind, rate.error.retryable], [429, 'rate_limit', true]);
	const auth = normalizeErrorItem({ statusCode: 403, message: 'forbidden' }, options).envelope;
	assert.deepEqual([auth.status_code, auth.error.kind, auth.error.retryable], [403, 'auth', false]);
	const http = normalizeErrorItem(
		{ message: 'bad gateway', n8nDetails: { nodeType: 'n8n-nodes-base.httpRequest', httpCode: 502 } },
		options,
	).envelope;
	assert.deepEqual([http.status_code, http.error.kind, http.error.retryable], [502, 'upstream', true]);
	const db = normalizeErrorItem(
		{ _err: { node: 'Insert', operation: 'insert', table: 'raw.telegram_updates' }, message: 'down' },
		options,
	).envelope;
	assert.deepEqual([db.error.kind, db.error.details.error_context?.table], ['db', 'raw.telegram_updates']);
	assert.equal(db.error.retryable, true, 'a db error without a status is treated as transient');
	const unknown = normalizeErrorItem({ message: 'odd' }, options).envelope;
	assert.deepEqual([unknown.status_code, unknown.error.kind, unknown.error.retryable], [500, 'unknown', false]);
});

test("the error item of this package's nodes keeps its ctx, kind and retryable", () => {
	const ctx = {
		correlation_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
		workflow: 'WF10',
		tenant_id: 'bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee',
	};
	const item = {
		headers: { host: 'x' },
		body: { update_id: 1 },
		error: {
			message: 'database error: connect ECONNREFUSED',
			kind: 'db',
			status_code: 503,
			retryable: true,
			details: { sqlstate: 'ECONNREFUSED' },
			node_type: 'n8n-nodes-contracts.telegramIngest',
			ctx,
			error_context: {
				node: 'Telegram Ingest',
				operation: 'select',
				table: 'core.bots',
				correlation_id: ctx.correlation_id,
			},
		},
	};
	const { envelope } = normalizeErrorItem(item, options);
	assert.equal(envelope.meta.correlation.correlation_id, ctx.correlation_id);
	assert.equal(envelope.meta.correlation.tenant_id, ctx.tenant_id);
	assert.deepEqual([envelope.status_code, envelope.error.kind, envelope.error.retryable], [503, 'db', true]);
	assert.equal(envelope.error.details.error_context?.node, 'Telegram Ingest');
	assert.equal(envelope.error.details.raw_error.node_type, 'n8n-nodes-contracts.telegramIngest');
	// ctx beats _ctx beats error.ctx
	const layered = normalizeErrorItem(
		{ ...item, _ctx: { workflow: 'glue' }, ctx: { workflow: 'canonical' } },
		options,
	).envelope;
	assert.equal(layered.meta.correlation.workflow, 'canonical');
	assert.equal(layered.error.details.ctx.tenant_id, ctx.tenant_id);
});

test('an item that cannot even be read still gives one valid envelope (fallback, reason named)', () => {
	const { envelope, jobId } = normalizeErrorItem({ message: 'x' }, { ...options, now: new Date(Number.NaN) });
	assert.doesNotThrow(() => ErrorEnvelope.parse(envelope));
	assert.equal(jobId, null);
	assert.equal(envelope.error.kind, 'unknown');
	assert.match(String(envelope.error.details.normalize_failure), /Invalid time value/);
	assert.ok(envelope.error.details.input !== undefined, 'what could be read of the item is kept');
});

test('a getter that throws is read as "[unreadable]": the rest of the item still makes a normal envelope', () => {
	const hostile = Object.defineProperty({ message: 'boom', ctx: undefined as unknown }, 'ctx', {
		enumerable: true,
		get: () => {
			throw new Error('getter exploded');
		},
	});
	const { envelope } = normalizeErrorItem(hostile, options);
	assert.doesNotThrow(() => ErrorEnvelope.parse(envelope));
	assert.equal(envelope.error.message, 'boom');
	assert.equal(envelope.error.details.normalize_failure, undefined, 'no fallback: the item was read');
});

test('a non-object item is kept in details.input; ids that fit their column are used as they are', () => {
	assert.equal(normalizeErrorItem([1, 'a\u0000'], options).envelope.error.details.input?.toString(), '1,a\ufffd');
	const { envelope, jobId, contractVersion } = normalizeErrorItem(
		{ ctx: { job_id: '42', tenant_id: 'bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee', contracts: { errorpipe: 2 } } },
		options,
	);
	assert.deepEqual(
		[jobId, contractVersion, envelope.meta.correlation.tenant_id],
		[42, 2, 'bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee'],
	);
	assert.equal(envelope.error.details.sanitized, undefined, 'nothing to sanitise: no flag');
	assert.equal(envelope.error.details.truncated, undefined);
});

test('fields the Error Pipe does not know are kept in details.input; an object message is made readable', () => {
	const cases: Array<[string, Record<string, unknown>, string, unknown]> = [
		['reason', { reason: 'disk full on /var', code: 'ENOSPC' }, 'disk full on /var', { code: 'ENOSPC' }],
		[
			'message object',
			{ message: { detail: 'quota exceeded', limit: 10 } },
			'quota exceeded',
			{ message: { detail: 'quota exceeded', limit: 10 } },
		],
		['message object without a text field', { message: { limit: 10 } }, '{"limit":10}', { message: { limit: 10 } }],
		[
			'error.description and error.context',
			{
				error: {
					message: 'Bad request',
					description: 'field "x" is required',
					context: { itemIndex: 3 },
					node: { name: 'HTTP', type: 'n8n-nodes-base.httpRequest', parameters: { headerValue: 'Bearer s3cret' } },
				},
			},
			'Bad request',
			{
				error: {
					description: 'field "x" is required',
					context: { itemIndex: 3 },
					node: { name: 'HTTP', type: 'n8n-nodes-base.httpRequest' },
				},
			},
		],
		[
			'n8nDetails',
			{
				message: 'boom',
				n8nDetails: { nodeType: 'n8n-nodes-base.set', nodeName: 'Set', itemIndex: 2, httpCode: '502' },
			},
			'boom',
			{ n8nDetails: { nodeName: 'Set', itemIndex: 2 } },
		],
		[
			'n8n Error Trigger',
			{
				execution: { id: '42', error: { message: 'Workflow failed', stack: 'Error: at x' }, lastNodeExecuted: 'HTTP' },
				workflow: { id: '7', name: 'WF10' },
			},
			'Workflow failed',
			// kept in details.execution instead (see the Error Trigger test)
			undefined,
		],
	];
	for (const [label, item, message, input] of cases) {
		const { envelope } = normalizeErrorItem({ ctx: { workflow: 'WF10' }, ...item }, options);
		ErrorEnvelope.parse(envelope);
		assert.equal(envelope.error.message, message, label);
		assert.deepEqual(envelope.error.details.input, input, label);
		assert.ok(!JSON.stringify(envelope).includes('s3cret'), `${label}: node parameters are not copied`);
	}
	// what the envelope carries already is not copied again
	const { envelope } = normalizeErrorItem(
		{ ctx: { a: 1 }, message: 'm', statusCode: 404, error_context: { node: 'N' }, test_mode: true },
		options,
	);
	assert.equal(envelope.error.details.input, undefined);
});

test('details.input is the first copy given up when the details budget runs out; ctx is kept', () => {
	const big = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, 'x'.repeat(10_000)]));
	const { envelope } = normalizeErrorItem(
		{ ctx: { correlation_id: '3f1c7a9e-6c1b-4d2a-9a57-0d4c1e2b3f40', note: 'kept' }, message: 'm', extra: big },
		options,
	);
	assert.equal(envelope.error.details.truncated, true);
	assert.equal((envelope.error.details.ctx as Record<string, unknown>).note, 'kept');
	assert.ok(Buffer.byteLength(JSON.stringify(envelope.error.details)) <= 256 * 1024);
});
