/**
 * Issue 26 item 4: the model call's retry policy (docs/retry-safety.md "LLM calls: retry policy") against
 * a real stand-in model server on 127.0.0.1, through the node's sender (requestSender over n8n-core's
 * httpRequest, as in n8n): an HTTP 500 is retried like 502/503/504 (bounded, exponential backoff with
 * jitter and a cap), a Retry-After is honoured up to its cap, a 4xx is not retried. The Retry-After header
 * is outside data: a fast-check property bounds every wait it can ask for.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import fc from 'fast-check';
import { ContractError } from '../../nodes/shared/errors';
import {
	backoffMs,
	deadlineOf,
	DEFAULT_RETRY,
	MAX_DEADLINE_MS,
	generate,
	MAX_RETRIES_LIMIT,
	retryAfterMs,
	retryWaitMs,
	type LlmAttempt,
	type RetryPolicy,
	type Sender,
} from '../../nodes/shared/llm/generate';
import { requestSender } from '../../nodes/shared/llm/requestSender';
import { ModelStandIn } from '../helpers/modelStandIn';
import { propertyParams } from '../helpers/property';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { httpRequest } = require('n8n-core/dist/execution-engine/node-execution-context/utils/request-helper-functions');

const send: Sender = requestSender(httpRequest);
const model = new ModelStandIn();
beforeAll(() => model.up());
afterAll(() => model.down());

const POLICY: RetryPolicy = { timeoutMs: 2_000, maxRetries: 3, backoffBaseMs: 20, rateLimitWaitMs: 50 };
const credential = () => ({ api: 'openai' as const, baseUrl: model.url, apiKey: 'sk-policy', model: 'm' });
const request = { system: 's', input: 'i', expectJson: false };

async function call(policy: RetryPolicy = POLICY) {
	model.requests.length = 0;
	const seen: LlmAttempt[] = [];
	const started = Date.now();
	try {
		const result = await generate(credential(), request, policy, send, async (a) => {
			seen.push(a);
		});
		return { result, seen, requests: model.requests.length, ms: Date.now() - started };
	} catch (error) {
		return { error: error as ContractError, seen, requests: model.requests.length, ms: Date.now() - started };
	}
}

test('500 then 200: one answer, two attempts (the 500 retried after a backoff)', async () => {
	model.script.push({ status: 500 }, { text: 'recovered' });
	const { result, seen, requests, ms } = await call();
	assert.deepEqual([result?.text, result?.attempts, requests], ['recovered', 2, 2]);
	assert.deepEqual(
		seen.map((a) => [a.attempt, a.outcome, a.httpStatus]),
		[
			[1, 'error', 500],
			[2, 'ok', 200],
		],
	);
	assert.ok(ms >= 20 * 0.8, `waited the first backoff (${ms} ms)`);
});

test('500 forever: 1 + maxRetries attempts, then a clear retryable error (504 MODEL_UNAVAILABLE, last HTTP 500)', async () => {
	model.respond = () => ({ status: 500 });
	try {
		const { error, requests } = await call();
		assert.ok(error instanceof ContractError);
		assert.deepEqual(
			[
				error.statusCode,
				error.kind,
				error.retryable,
				error.details.code,
				error.details.attempts,
				error.details.http_status,
			],
			[504, 'upstream', true, 'MODEL_UNAVAILABLE', 4, 500],
		);
		assert.match(error.message, /failed after 4 attempts: HTTP 500/);
		assert.equal(requests, 4);
		// a huge maxRetries is bounded
		const bounded = await call({ ...POLICY, backoffBaseMs: 1, maxRetries: 1e9 });
		assert.equal(bounded.requests, MAX_RETRIES_LIMIT + 1);
		assert.equal(bounded.error?.details.attempts, MAX_RETRIES_LIMIT + 1);
	} finally {
		model.respond = () => ({ text: 'ok' });
	}
});

test('400, 401, 404 and 422 are not retried (502 MODEL_ERROR after one request)', async () => {
	for (const status of [400, 401, 404, 422]) {
		model.script.push({ status });
		const { error, requests } = await call();
		assert.deepEqual(
			[error?.statusCode, error?.retryable, error?.details.code, error?.details.http_status, requests],
			[502, false, 'MODEL_ERROR', status, 1],
			`HTTP ${status}`,
		);
	}
});

test('Retry-After on a 503 or a 429 is honoured, up to retryAfterCapMs', async () => {
	// the server asks for 1 s; the cap is 300 ms: the call waits about 300 ms, not 1 s, not the 20 ms backoff
	for (const status of [503, 429]) {
		model.script.push({ status, retryAfter: 1 }, { text: 'after' });
		const { result, ms, requests } = await call({ ...POLICY, retryAfterCapMs: 300 });
		assert.deepEqual([result?.text, requests], ['after', 2]);
		assert.ok(ms >= 290 && ms < 950, `HTTP ${status}: waited ${ms} ms`);
	}
	// within the cap: the server's wait (1 s)
	model.script.push({ status: 503, retryAfter: 1 }, { text: 'after' });
	const { ms } = await call({ ...POLICY, retryAfterCapMs: 5_000 });
	assert.ok(ms >= 990, `waited ${ms} ms`);
});

test('backoff: base · 2^(n−1), capped, ±jitter', () => {
	const policy: RetryPolicy = { ...POLICY, backoffBaseMs: 1_000, backoffCapMs: 5_000, jitter: 0.2 };
	assert.deepEqual(
		[1, 2, 3, 4, 10].map((n) => backoffMs(policy, n, () => 0.5)),
		[1_000, 2_000, 4_000, 5_000, 5_000],
	);
	assert.equal(
		backoffMs(policy, 2, () => 0),
		1_600,
	);
	assert.equal(
		backoffMs(policy, 2, () => 1),
		2_400,
	);
	assert.equal(backoffMs({ ...policy, jitter: 0 }, 3, Math.random), 4_000);
	// the shipped defaults: 1 s, 2 s, 4 s … at most 30 s, ±20 %
	assert.deepEqual(
		[DEFAULT_RETRY.backoffBaseMs, DEFAULT_RETRY.backoffCapMs, DEFAULT_RETRY.jitter, DEFAULT_RETRY.retryAfterCapMs],
		[1_000, 30_000, 0.2, 60_000],
	);
});

test('Retry-After: delta-seconds and HTTP dates are read; anything else is ignored (property: no wait beyond the cap)', () => {
	const now = Date.parse('2026-11-28T10:00:00Z');
	assert.equal(retryAfterMs('2', now), 2_000);
	assert.equal(retryAfterMs(['1.5'], now), 1_500);
	assert.equal(retryAfterMs('Sat, 28 Nov 2026 10:00:30 GMT', now), 30_000);
	assert.equal(retryAfterMs('Sat, 28 Nov 2026 09:00:00 GMT', now), 0);
	for (const bad of [undefined, '', '-1', 'soon', '1e3', {}, 5])
		assert.equal(retryAfterMs(bad, now), null, String(bad));
	// property: whatever the header, the wait is a finite delay from 0 to the largest the policy allows
	const policy: RetryPolicy = { ...POLICY, backoffBaseMs: 1_000, backoffCapMs: 30_000, retryAfterCapMs: 60_000 };
	const most = Math.max(60_000, 30_000 * 1.2, policy.rateLimitWaitMs);
	fc.assert(
		fc.property(
			fc.oneof(
				fc.string(),
				fc.nat().map(String),
				fc.stringMatching(/^\d{1,400}(\.\d{0,20})?$/),
				fc.date({ noInvalidDate: false }).map((d) => (Number.isNaN(d.getTime()) ? 'Invalid Date' : d.toUTCString())),
				fc.array(fc.string()),
				fc.anything(),
			),
			fc.constantFrom(null, 429, 500, 502, 503, 504),
			fc.integer({ min: 1, max: MAX_RETRIES_LIMIT }),
			fc.double({ min: 0, max: 1, noNaN: true }),
			(header, status, retry, random) => {
				const asked = retryAfterMs(header);
				assert.ok(asked === null || (Number.isFinite(asked) && asked >= 0), `read ${String(asked)}`);
				const wait = retryWaitMs(policy, retry, status, header, () => random);
				assert.ok(Number.isFinite(wait) && wait >= 0 && wait <= most, `wait ${wait}`);
				if (asked !== null) assert.equal(wait, Math.min(asked, 60_000), 'the server’s wait, capped');
			},
		),
		propertyParams('Retry-After header'),
	);
});

test('the call has a deadline: a Retry-After longer than what is left fails at once (504 MODEL_UNAVAILABLE, retryable), never sleeps past it', async () => {
	// the server asks for 60 s (within retryAfterCapMs); the call's deadline is 1.5 s
	model.script.push({ status: 503, retryAfter: 60 }, { text: 'too late' });
	const { error, ms, requests } = await call({ ...POLICY, deadlineMs: 1_500 });
	assert.ok(error instanceof ContractError, 'failed');
	assert.deepEqual(
		[error.statusCode, error.retryable, error.details.code, error.details.attempts, error.details.http_status],
		[504, true, 'MODEL_UNAVAILABLE', 1, 503],
	);
	assert.deepEqual([error.details.deadline_ms, error.details.wait_ms], [1_500, 60_000]);
	assert.equal(requests, 1);
	assert.ok(ms < 1_500, `failed at once (${ms} ms), not after the deadline`);
	model.script.length = 0;
	// a 429 whose wait does not fit: the rate-limit answer, at once
	model.script.push({ status: 429 });
	const limited = await call({ ...POLICY, rateLimitWaitMs: 60_000, deadlineMs: 1_500 });
	assert.deepEqual(
		[limited.error?.statusCode, limited.error?.details.code, limited.requests],
		[429, 'MODEL_UNAVAILABLE', 1],
	);
	assert.ok(limited.ms < 1_500, `${limited.ms} ms`);
	model.script.length = 0;
});

test('the deadline also bounds an attempt: its timeout is cut to what is left', async () => {
	const seen: number[] = [];
	const recording: Sender = async (r) => {
		seen.push(r.timeoutMs);
		return { status: 503, body: null, headers: {} };
	};
	const policy: RetryPolicy = {
		timeoutMs: 30_000,
		maxRetries: 3,
		backoffBaseMs: 200,
		rateLimitWaitMs: 50,
		deadlineMs: 1_000,
	};
	await assert.rejects(generate(credential(), request, policy, recording), ContractError);
	assert.ok(seen.length >= 1 && seen.every((t) => t <= 1_000), `attempt timeouts ${seen.join(', ')} ms`);
});

test('default deadline: timeout × (1 + retries), at most 300 000 ms; the worst case of the shipped defaults is 120 s', () => {
	assert.equal(deadlineOf(DEFAULT_RETRY, DEFAULT_RETRY.maxRetries), 120_000);
	assert.equal(deadlineOf({ ...DEFAULT_RETRY, maxRetries: MAX_RETRIES_LIMIT }, MAX_RETRIES_LIMIT), MAX_DEADLINE_MS);
	assert.equal(MAX_DEADLINE_MS, 300_000);
	assert.equal(deadlineOf({ ...DEFAULT_RETRY, deadlineMs: 5_000 }, 3), 5_000);
	assert.equal(deadlineOf({ ...DEFAULT_RETRY, deadlineMs: 10 * MAX_DEADLINE_MS }, 3), MAX_DEADLINE_MS, 'bounded');
	assert.ok(MAX_DEADLINE_MS < 900_000, "below Release Stale's threshold");
});

test('the abort signal (n8n cancel) ends a retry wait at once', async () => {
	model.script.push({ status: 503, retryAfter: 30 }, { text: 'never' });
	const controller = new AbortController();
	setTimeout(() => controller.abort(), 200);
	const { error, ms, requests } = await call({ ...POLICY, timeoutMs: 30_000, signal: controller.signal });
	assert.deepEqual(
		[error?.statusCode, error?.details.code, error?.details.cancelled, requests],
		[504, 'MODEL_UNAVAILABLE', true, 1],
	);
	assert.ok(ms < 5_000, `ended at the abort (${ms} ms), not after the 30 s wait`);
	model.script.length = 0;
});

test('jitter never takes a backoff past its cap (the documented "at most 30 s" holds)', () => {
	fc.assert(
		fc.property(
			fc.integer({ min: 1, max: MAX_RETRIES_LIMIT }),
			fc.double({ min: 0, max: 1, noNaN: true }),
			(retry, random) => {
				const wait = backoffMs(DEFAULT_RETRY, retry, () => random);
				assert.ok(wait >= 0 && wait <= DEFAULT_RETRY.backoffCapMs, `retry ${retry}: ${wait} ms`);
			},
		),
		propertyParams('backoff cap'),
	);
	assert.equal(
		backoffMs(DEFAULT_RETRY, MAX_RETRIES_LIMIT, () => 0.999),
		30_000,
	);
});
