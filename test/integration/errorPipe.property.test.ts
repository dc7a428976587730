/**
 * Issue 10 item 1, property-based (seed 002 §1.3 invariant 1): for ANY item — arbitrary JSON-ish values with
 * hostile strings and ids, deep nesting, huge strings, `__proto__` keys, the shapes of n8n's error output
 * and of this package's `{ error: {...ctx} }` — normalize + record against the real PostgreSQL give one
 * valid ErrorEnvelope and exactly one ops.errors row, never throw, and leave no undefined/NaN anywhere.
 * Runs: PROPERTY_RUNS (default 10,000); the seed is printed (replay with PROPERTY_SEED).
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { inspect } from 'node:util';
import fc from 'fast-check';
import { ErrorEnvelope } from '../../nodes/shared/contracts/envelope';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { recordError } from '../../nodes/ErrorPipe/actions/record';
import { MAX_DEPTH, MAX_DETAILS_BYTES } from '../../nodes/shared/sanitize';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { hostileId, hostileString, propertyParams } from '../helpers/property';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

/** Keys that break naive code, mixed with hostile strings. */
const key = fc.oneof(
	{ weight: 3, arbitrary: hostileString(12) },
	{
		weight: 1,
		arbitrary: fc.constantFrom(
			'__proto__',
			'constructor',
			'prototype',
			'toString',
			'correlation_id',
			'job_id',
			'tenant_id',
			'a\u0000b',
			'\ud800',
		),
	},
);

const leaf = fc.oneof(
	hostileString(40),
	hostileId(),
	fc.double(),
	fc.boolean(),
	fc.constant(null),
	fc.constant(undefined),
	fc.bigInt(),
);

/** Arbitrary JSON-ish values: objects (null-prototype too), arrays (sparse too), dates, typed arrays, Maps … */
const anything = fc.anything({
	key,
	values: [leaf],
	maxDepth: 4,
	maxKeys: 6,
	withNullPrototype: true,
	withBigInt: true,
	withDate: true,
	withTypedArray: true,
	withSparseArray: true,
	withMap: true,
	withSet: true,
	withBoxedValues: true,
});

/** `depth` nested arrays or `{ a }` objects; printed as `nest(…)` in a counterexample (fast-check's printer recurses). */
function nest(depth: number, asObjects: boolean, bottom: unknown): unknown {
	let value = bottom;
	for (let i = 0; i < depth; i++) value = asObjects ? { a: value } : [value];
	const label = `nest(${depth}, ${asObjects ? 'objects' : 'arrays'}, ${inspect(bottom, { depth: 2, maxStringLength: 40 })})`;
	return Object.defineProperty(value as object, fc.toStringMethod, { value: () => label, enumerable: false });
}

/** Rare but heavy: nesting far beyond any stack, strings of up to 2 MB with a NUL or a lone surrogate inside. */
const heavy = fc.oneof(
	fc
		.tuple(fc.integer({ min: 60, max: 5_000 }), fc.boolean(), leaf)
		.map(([depth, asObjects, bottom]) => nest(depth, asObjects, bottom)),
	fc.tuple(fc.constantFrom(100_000), fc.boolean()).map(([depth, asObjects]) => nest(depth, asObjects, 'bottom')),
	fc
		.tuple(fc.integer({ min: 20_000, max: 2_000_000 }), fc.constantFrom('\u0000', '\ud800', '\udfff', 'é', '😀'))
		.map(([n, c]) => `${'x'.repeat(n)}${c}${'y'.repeat(16)}`),
	fc
		.integer({ min: 1_000, max: 40_000 })
		.map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}\u0000`, i]))),
);

const value = fc.oneof({ weight: 80, arbitrary: anything }, { weight: 1, arbitrary: heavy });
const id = fc.oneof(hostileId(), value);

/** ctx as callers send it: the known ids (valid or hostile) and anything else. */
const ctx = fc.record(
	{
		correlation_id: fc.oneof(fc.uuid(), id),
		tenant_id: id,
		job_id: id,
		trace_id: id,
		workflow: fc.oneof(hostileString(), id),
		node: id,
		chat_id: id,
		message_id: id,
		contracts: fc.oneof(fc.record({ errorpipe: id }), value),
		test_mode: value,
		extra: value,
	},
	{ requiredKeys: [] },
);

const errorContext = fc.record(
	{
		node: fc.oneof(hostileString(), id),
		operation: hostileString(),
		table: hostileString(),
		correlation_id: fc.oneof(fc.uuid(), id),
		error_message: fc.oneof(hostileString(), value),
		status_code: id,
	},
	{ requiredKeys: [] },
);

/** The item shapes the Error Pipe accepts (seed 002 §1.2), each field hostile or absent. */
const item = fc.oneof(
	// WF99 input: ctx / _ctx / error_context / _err and the loose message fields
	fc.record(
		{
			ctx: fc.oneof(ctx, value),
			_ctx: fc.oneof(ctx, value),
			error_context: fc.oneof(errorContext, value),
			_err: fc.oneof(errorContext, value),
			message: fc.oneof(hostileString(), value),
			description: value,
			errorMessage: value,
			statusCode: id,
			test_mode: value,
			test_case: value,
			_test_job_id: value,
		},
		{ requiredKeys: [] },
	),
	// n8n's error output of a node (NodeApiError / NodeOperationError serialised)
	fc.record(
		{
			message: fc.oneof(hostileString(), value),
			error: fc.oneof(
				hostileString(),
				fc.record(
					{
						message: value,
						name: fc.constantFrom('NodeApiError', 'NodeOperationError'),
						httpCode: id,
						description: value,
						node: fc.record({ type: fc.oneof(hostileString(), value) }),
						context: value,
					},
					{ requiredKeys: [] },
				),
			),
			n8nDetails: fc.oneof(fc.record({ nodeType: value, httpCode: id }, { requiredKeys: [] }), value),
			stack: hostileString(),
		},
		{ requiredKeys: [] },
	),
	// this package's error item: { error: { message, kind, status_code, retryable, details, node_type, ctx, error_context } }
	fc.record({
		error: fc.record(
			{
				message: fc.oneof(hostileString(), value),
				kind: fc.oneof(fc.constantFrom('db', 'upstream', 'auth', 'nope'), value),
				status_code: id,
				retryable: fc.oneof(fc.boolean(), value),
				details: value,
				node_type: value,
				ctx: fc.oneof(ctx, value),
				error_context: fc.oneof(errorContext, value),
				code: id,
			},
			{ requiredKeys: [] },
		),
	}),
	// anything at all: arrays, strings, numbers, null, undefined
	value,
);

/**
 * Half of the object items get a valid ctx.correlation_id (and often a valid ctx.job_id) on top of whatever
 * else they carry: the envelope must keep them (`expect`), whatever the rest of the item is.
 */
const withValidIds = fc
	.tuple(item, fc.boolean(), fc.uuid(), fc.option(fc.integer({ min: 1, max: 2 ** 31 }), { nil: undefined }))
	.map(([input, inject, correlationId, jobId]) => {
		if (
			!inject ||
			input === null ||
			typeof input !== 'object' ||
			Array.isArray(input) ||
			input instanceof Map ||
			input instanceof Set
		)
			return { input, expect: undefined };
		const given = (input as Record<string, unknown>).ctx;
		const ctx: Record<string, unknown> = {
			...(given !== null && typeof given === 'object' && !Array.isArray(given) ? given : {}),
			correlation_id: correlationId,
		};
		if (jobId === undefined) delete ctx.job_id;
		else ctx.job_id = jobId;
		return { input: { ...(input as Record<string, unknown>), ctx }, expect: { correlationId, jobId } };
	});

/** Valid UUIDs an item carries in error_context / _err / error.error_context: these may win over ctx's (seed 002 §1.3). */
function contextCorrelations(input: unknown): string[] {
	const at = (value: unknown, key: string): unknown =>
		value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
	return [
		at(at(input, 'error_context'), 'correlation_id'),
		at(at(input, '_err'), 'correlation_id'),
		at(at(at(input, 'error'), 'error_context'), 'correlation_id'),
	]
		.filter((v): v is string => typeof v === 'string' && UUID.test(v))
		.map((v) => v.toLowerCase());
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Paths to undefined, NaN or ±Infinity, and the deepest nesting — iteratively (no stack). */
function inspectTree(root: unknown): { bad: string[]; depth: number } {
	const bad: string[] = [];
	let depth = 0;
	const stack: Array<[unknown, string, number]> = [[root, '$', 0]];
	while (stack.length) {
		const [value, path, level] = stack.pop()!;
		if (value === undefined || (typeof value === 'number' && !Number.isFinite(value))) bad.push(path);
		if (value === null || typeof value !== 'object') continue;
		depth = Math.max(depth, level);
		for (const k of Object.keys(value)) stack.push([(value as Record<string, unknown>)[k], `${path}.${k}`, level + 1]);
	}
	return { bad, depth };
}

/** Records in flight at once: the DB round trips overlap, the checks stay per item (PROPERTY_RUNS=10,000 in < 60 s). */
const CONCURRENCY = 6;

test('any item: one valid ErrorEnvelope and exactly one ops.errors row, no throw, no undefined/NaN', async () => {
	const expected = new Map<string, number>();
	const failures: string[] = [];
	const inFlight = new Set<Promise<void>>();
	let items = 0;
	const started = Date.now();
	await fc.assert(
		fc.asyncProperty(withValidIds, async ({ input, expect }) => {
			// normalize and the envelope checks: per run, so fast-check shrinks a failing item
			const { envelope, jobId, contractVersion, jobClaimToken } = normalizeErrorItem(input, { source: 'WF99' });
			const parsed = ErrorEnvelope.safeParse(envelope);
			assert.ok(parsed.success, parsed.success ? '' : parsed.error.message);
			// a real envelope, not the "could not read this item" fallback, and the caller's valid ids kept
			assert.equal(envelope.error.details.normalize_failure, undefined, 'not the fallback envelope');
			if (expect) {
				const kept = envelope.meta.correlation.correlation_id.toLowerCase();
				assert.ok(
					[expect.correlationId.toLowerCase(), ...contextCorrelations(input)].includes(kept),
					`correlation id ${kept} kept`,
				);
				assert.equal(jobId, expect.jobId ?? jobId, "a valid ctx.job_id is the job path's id");
				if (expect.jobId !== undefined) assert.equal(envelope.meta.correlation.job_id, expect.jobId);
			}
			const { bad, depth } = inspectTree(envelope);
			assert.deepEqual(bad, [], 'no undefined, NaN or Infinity in the envelope');
			assert.ok(depth <= MAX_DEPTH + 4, `envelope depth ${depth}`);
			assert.ok(
				Buffer.byteLength(JSON.stringify(envelope.error.details)) <= MAX_DETAILS_BYTES,
				'details within MAX_DETAILS_BYTES',
			);
			// the row: recorded with a few in flight; a failure is reported with its item after the runs
			const correlation = envelope.meta.correlation.correlation_id.toLowerCase();
			expected.set(correlation, (expected.get(correlation) ?? 0) + 1);
			items++;
			const pending: Promise<void> = recordError(db.pool, envelope, jobId, contractVersion, jobClaimToken).then(
				(result) => {
					if (result.error_id === null || result.write_failures.length) {
						failures.push(
							`${JSON.stringify(result.write_failures)} for ${inspect(input, { depth: 4, maxStringLength: 200, maxArrayLength: 10 })}`,
						);
					}
					inFlight.delete(pending);
				},
			);
			inFlight.add(pending);
			if (inFlight.size >= CONCURRENCY) await Promise.race(inFlight);
		}),
		propertyParams('errorPipe: one row per item'),
	);
	await Promise.all(inFlight);
	assert.deepEqual(failures.slice(0, 3), [], `${failures.length} items without their row`);
	// Exactly one row per item: per correlation id, as many rows as items that carried it.
	const { rows } = await db.pool.query(
		'SELECT correlation_id, count(*)::int AS n FROM ops.errors GROUP BY correlation_id',
	);
	const actual = new Map<string, number>(rows.map((r) => [r.correlation_id as string, r.n as number]));
	assert.deepEqual(actual, expected);
	const total = rows.reduce((sum, r) => sum + r.n, 0);
	assert.equal(total, items);
	console.log(`[property] errorPipe: ${items} items recorded in ${Date.now() - started} ms`);
});
