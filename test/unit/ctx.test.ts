/**
 * The one builder of the seed's ctx (nodes/shared/contracts/ctx.ts newCtx): its output passes the `Ctx`
 * schema for every field combination its callers use (the router, Telegram Ingest, Context Loader), keeps
 * the order of the fields it is given, and always carries the current `contracts`. The builder itself
 * never parses (Telegram Ingest's path is benchmarked): this test is where the schema is checked.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { Ctx, ERRORPIPE_CONTRACT_VERSION, newCtx } from '../../nodes/shared/contracts/ctx';

const CONTRACTS = { errorpipe: ERRORPIPE_CONTRACT_VERSION };

/** Parses with the schema and checks nothing was dropped or changed (passthrough keeps unknown keys). */
function assertValid(ctx: Record<string, unknown>): void {
	const parsed = Ctx.safeParse(ctx);
	assert.ok(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues));
	assert.deepEqual(parsed.data, ctx);
}

test('newCtx: the router ctx (travelling ctx first, correlation id, workflow, node, operation, contracts)', () => {
	const correlation_id = randomUUID();
	for (const incoming of [
		undefined,
		{},
		{ job_id: 7 },
		{ job_id: 5, correlation_id: randomUUID(), trace_id: 't-1', job_claim_token: randomUUID() },
		{ contracts: { errorpipe: 99 }, tenant_id: randomUUID(), chat_id: -100123, message_id: 4, custom: [1] },
	]) {
		for (const operation of [undefined, 'document.extract']) {
			const ctx = newCtx({
				...incoming,
				correlation_id,
				workflow: 'WF20',
				node: 'Knowledge Bot',
				...(operation ? { operation } : {}),
			});
			assertValid(ctx);
			assert.equal(ctx.correlation_id, correlation_id, 'the router’s correlation id wins over the incoming one');
			assert.deepEqual(ctx.contracts, CONTRACTS, 'the current contract version replaces an incoming one');
			// the literal the router built by hand before newCtx: same keys, same order, same values
			const literal = {
				...incoming,
				correlation_id,
				workflow: 'WF20',
				node: 'Knowledge Bot',
				...(operation ? { operation } : {}),
				contracts: CONTRACTS,
			};
			assert.deepEqual(Object.entries(ctx), Object.entries(literal));
		}
	}
});

test('newCtx: the Telegram Ingest ctx, before and after the update is read', () => {
	for (const trace_id of [null, 'trace-abc']) {
		const ctx: Record<string, unknown> = newCtx({
			correlation_id: randomUUID(),
			trace_id,
			workflow: 'WF10',
			node: 'Telegram Ingest',
			tenant_id: null,
			job_id: null,
		});
		assertValid(ctx);
		assert.deepEqual(Object.keys(ctx), [
			'correlation_id',
			'trace_id',
			'workflow',
			'node',
			'tenant_id',
			'job_id',
			'contracts',
		]);
		// what ingestUpdate adds as it learns it (bot, update keys, job)
		Object.assign(ctx, { bot_key: 'main', tenant_id: randomUUID(), bot_id: '12' });
		assertValid(ctx);
		for (const chat_id of [-1001234567890, 42, null, '-9223372036854775808']) {
			Object.assign(ctx, { update_id: 9007199254740991, chat_id, message_id: 17, job_id: 3 });
			assertValid(ctx);
		}
	}
});

test('newCtx: the Context Loader ctx, alone and on top of a routed ctx (Knowledge Bot Answer)', () => {
	const routed = newCtx({ job_id: 9, correlation_id: randomUUID(), workflow: 'WF40', node: 'Knowledge Bot' });
	for (const previous of [undefined, routed]) {
		for (const tenant_id of [null, randomUUID()]) {
			for (const trace_id of [null, 'x']) {
				const correlation_id = randomUUID();
				const workflow = previous?.workflow ?? 'WF00c';
				const ctx = newCtx({ ...previous, correlation_id, trace_id, tenant_id, workflow });
				assertValid(ctx);
				assert.equal(ctx.workflow, previous ? 'WF40' : 'WF00c');
				assert.equal(ctx.job_id, previous ? 9 : undefined);
				// the literal loadContext built by hand before newCtx: same keys, same order, same values
				const literal = { ...previous, correlation_id, trace_id, tenant_id, workflow, contracts: CONTRACTS };
				assert.deepEqual(Object.entries(ctx), Object.entries(literal));
			}
		}
	}
});

test('newCtx: any schema-valid init gives a schema-valid ctx; the init is not changed', () => {
	const init = fc.record(
		{
			correlation_id: fc.uuid(),
			trace_id: fc.option(fc.string()),
			tenant_id: fc.option(fc.uuid()),
			job_id: fc.option(fc.integer({ min: 1 })),
			job_claim_token: fc.option(fc.uuid()),
			workflow: fc.option(fc.string()),
			node: fc.option(fc.string()),
			chat_id: fc.option(fc.oneof(fc.integer(), fc.string())),
			message_id: fc.option(fc.integer()),
			operation: fc.string(),
		},
		{ requiredKeys: ['correlation_id'] },
	);
	fc.assert(
		fc.property(init, (generated) => {
			const fields = { ...generated };
			const copy = structuredClone(fields);
			const ctx = newCtx(fields);
			assertValid(ctx);
			assert.deepEqual(fields, copy);
			assert.notEqual(ctx, fields);
		}),
	);
});

test('newCtx: an own "__proto__" key of a travelling ctx stays an own key, never the prototype', () => {
	const incoming = JSON.parse('{"job_id": 4, "__proto__": {"polluted": true}}') as Record<string, unknown>;
	const correlation_id = randomUUID();
	const ctx = newCtx({ ...incoming, correlation_id });
	assert.equal(Object.getPrototypeOf(ctx), Object.prototype);
	assert.equal((ctx as Record<string, unknown>).polluted, undefined);
	assert.deepEqual(Object.keys(ctx), ['job_id', '__proto__', 'correlation_id', 'contracts']);
	assert.deepEqual(Object.getOwnPropertyDescriptor(ctx, '__proto__')?.value, { polluted: true });
	assert.deepEqual(ctx.contracts, CONTRACTS);
});
