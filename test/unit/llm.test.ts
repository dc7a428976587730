/** The model call's retry policy (seed 001 Final Responder) against a stand-in model server on 127.0.0.1. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import { generate, type RetryPolicy, type Sender } from '../../nodes/shared/llm/generate';
import { ContractError } from '../../nodes/shared/errors';
import { ModelStandIn } from '../helpers/modelStandIn';

const model = new ModelStandIn();
beforeAll(() => model.up());
afterAll(() => model.down());

/** A fetch-based sender (the node uses n8n's httpRequest helper; the policy is the same code). */
const send: Sender = async ({ url, body, headers, timeoutMs }) => {
	const res = await fetch(url, {
		method: 'POST',
		headers,
		body: JSON.stringify(body),
		signal: AbortSignal.timeout(timeoutMs),
	});
	return { status: res.status, body: await res.json(), headers: Object.fromEntries(res.headers) };
};
const FAST: RetryPolicy = { timeoutMs: 200, maxRetries: 3, backoffBaseMs: 20, rateLimitWaitMs: 150 };
const openai = () => ({ api: 'openai' as const, baseUrl: model.url, apiKey: 'sk-test', model: 'gpt-x' });
const request = { system: 'You are terse.', input: 'Hi', expectJson: false };

test("OpenAI style: messages, key and model sent; the answer's text returned", async () => {
	model.requests.length = 0;
	model.script.push({ text: 'Hello.' });
	const result = await generate(openai(), { ...request, temperature: 0.7, maxTokens: 2000 }, FAST, send);
	assert.deepEqual([result.text, result.attempts, result.model], ['Hello.', 1, 'gpt-x']);
	const [sent] = model.requests;
	assert.equal(sent.path, '/v1/chat/completions');
	assert.equal(sent.authorization, 'Bearer sk-test');
	assert.deepEqual(sent.body, {
		model: 'gpt-x',
		messages: [
			{ role: 'system', content: 'You are terse.' },
			{ role: 'user', content: 'Hi' },
		],
		temperature: 0.7,
		max_tokens: 2000,
	});
});

test("Gemini style: the OpenAI chat format at Gemini's OpenAI-compatible path, the key as Bearer", async () => {
	model.requests.length = 0;
	model.script.push({ text: 'Hallo.' });
	const gemini = { api: 'gemini' as const, baseUrl: model.url, apiKey: 'AIza-test-key', model: 'gemini-2.5-flash' };
	const result = await generate(gemini, request, FAST, send);
	assert.deepEqual([result.text, result.model], ['Hallo.', 'gemini-2.5-flash']);
	const [sent] = model.requests;
	assert.equal(sent.path, '/v1beta/openai/chat/completions');
	assert.equal(sent.authorization, 'Bearer AIza-test-key');
	assert.deepEqual(sent.body.messages, [
		{ role: 'system', content: 'You are terse.' },
		{ role: 'user', content: 'Hi' },
	]);
});

test('Ollama style with JSON: format json, the answer parsed; prose → 422 INVALID_JSON', async () => {
	model.requests.length = 0;
	model.script.push({ text: '{"needs_context":true}' }, { text: 'Sure! Here it is.' });
	const ollama = { api: 'ollama' as const, baseUrl: model.url, model: 'llama3' };
	const result = await generate(ollama, { ...request, expectJson: true }, FAST, send);
	assert.deepEqual(result.json, { needs_context: true });
	assert.equal(model.requests[0].path, '/api/generate');
	assert.equal(model.requests[0].body.format, 'json');
	await assert.rejects(
		generate(ollama, { ...request, expectJson: true }, FAST, send),
		(e: ContractError) => e.statusCode === 422 && e.details.code === 'INVALID_JSON',
	);
});

test('timeouts and 503 are retried with exponential backoff; success on the 4th attempt', async () => {
	model.script.push({ hang: 400 }, { status: 503 }, { hang: 400 }, { text: 'finally' });
	const started = Date.now();
	const result = await generate(openai(), request, FAST, send);
	assert.deepEqual([result.text, result.attempts], ['finally', 4]);
	// 20, 40, 80 ms, each ±20 % jitter (DEFAULT_RETRY.jitter)
	assert.ok(Date.now() - started >= 0.8 * (20 + 40 + 80), 'waited about 20, 40, 80 ms between attempts');
});

test('429 waits the rate-limit delay (or Retry-After) before retrying', async () => {
	model.script.push({ status: 429 }, { text: 'after the wait' });
	const started = Date.now();
	assert.equal((await generate(openai(), request, FAST, send)).text, 'after the wait');
	assert.ok(Date.now() - started >= 150);
});

test('after 3 retries the call fails retryable (504 upstream); a 400 or 404 fails at once (502, not retried)', async () => {
	model.script.push({ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 });
	await assert.rejects(generate(openai(), request, FAST, send), (e: ContractError) => {
		assert.deepEqual([e.statusCode, e.kind, e.retryable, e.details.attempts], [504, 'upstream', true, 4]);
		return true;
	});
	for (const status of [400, 404]) {
		model.requests.length = 0;
		model.script.push({ status });
		await assert.rejects(
			generate(openai(), request, FAST, send),
			(e: ContractError) => e.statusCode === 502 && e.retryable === false && e.details.http_status === status,
		);
		assert.equal(model.requests.length, 1, `${status} is not retried`);
	}
});

test('the API key never leaves in an error: a body echoing it (even across the 2000-character cut), a sender failure quoting it', async () => {
	const key = `sk-${randomBytes(16).toString('hex')}`;
	const credential = { api: 'openai' as const, baseUrl: model.url, apiKey: key, model: 'gpt-x' };
	// The key starts 10 characters before the cut of the quoted body: a cut first would leave its first 10.
	const echoing: Sender = async ({ headers }) => ({
		status: 401,
		body: { pad: 'x'.repeat(1964), error: headers.authorization },
		headers: {},
	});
	await assert.rejects(generate(credential, request, FAST, echoing), (e: ContractError) => {
		assert.equal(e.details.code, 'MODEL_ERROR');
		for (const text of [e.message, String(e.details.body), JSON.stringify(e.details)])
			assert.ok(!text.includes(key.slice(0, 10)), 'no part of the key');
		return true;
	});
	const failing: Sender = async ({ url, headers }) => {
		throw new TypeError(`request to ${url} with ${headers.authorization} failed`);
	};
	await assert.rejects(generate(credential, request, { ...FAST, maxRetries: 0 }, failing), (e: ContractError) => {
		assert.match(e.message, /no answer: request to .* with Bearer \[REDACTED\] failed/);
		assert.ok(!JSON.stringify(e.details).includes(key));
		return true;
	});
});

test('a base URL without a scheme or with a space is refused before any request, naming the field', async () => {
	for (const baseUrl of ['localhost:11434', `${model.url} /v1`]) {
		model.requests.length = 0;
		await assert.rejects(generate({ ...openai(), baseUrl }, request, FAST, send), (e: ContractError) => {
			assert.deepEqual(
				[e.statusCode, e.kind, e.retryable, e.details.code],
				[500, 'validation', false, 'BAD_CREDENTIAL_URL'],
			);
			assert.match(e.message, /^Contracts LLM API credential: Base URL \(baseUrl\) /);
			return true;
		});
		assert.equal(model.requests.length, 0);
	}
});
