/** The model call's retry policy (seed 001 Final Responder) against a stand-in model server on 127.0.0.1. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { generate, type RetryPolicy, type Sender } from '../../nodes/shared/llm/generate';
import { ContractError } from '../../nodes/shared/errors';
import { ModelStandIn } from '../helpers/modelStandIn';

const model = new ModelStandIn();
before(() => model.up());
after(() => model.down());

/** A fetch-based sender (the node uses n8n's httpRequest helper; the policy is the same code). */
const send: Sender = async ({ url, body, headers, timeoutMs }) => {
	const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
	return { status: res.status, body: await res.json(), headers: Object.fromEntries(res.headers) };
};
const FAST: RetryPolicy = { timeoutMs: 200, maxRetries: 3, backoffBaseMs: 20, rateLimitWaitMs: 150 };
const openai = () => ({ api: 'openai' as const, baseUrl: model.url, apiKey: 'sk-test', model: 'gpt-x' });
const request = { system: 'You are terse.', input: 'Hi', expectJson: false };

test('OpenAI style: messages, key and model sent; the answer\'s text returned', async () => {
	model.requests.length = 0;
	model.script.push({ text: 'Hello.' });
	const result = await generate(openai(), { ...request, temperature: 0.7, maxTokens: 2000 }, FAST, send);
	assert.deepEqual([result.text, result.attempts, result.model], ['Hello.', 1, 'gpt-x']);
	const [sent] = model.requests;
	assert.equal(sent.path, '/v1/chat/completions');
	assert.equal(sent.authorization, 'Bearer sk-test');
	assert.deepEqual(sent.body, { model: 'gpt-x', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hi' }], temperature: 0.7, max_tokens: 2000 });
});

test('Ollama style with JSON: format json, the answer parsed; prose → 422 INVALID_JSON', async () => {
	model.requests.length = 0;
	model.script.push({ text: '{"needs_context":true}' }, { text: 'Sure! Here it is.' });
	const ollama = { api: 'ollama' as const, baseUrl: model.url, model: 'llama3' };
	const result = await generate(ollama, { ...request, expectJson: true }, FAST, send);
	assert.deepEqual(result.json, { needs_context: true });
	assert.equal(model.requests[0].path, '/api/generate');
	assert.equal(model.requests[0].body.format, 'json');
	await assert.rejects(generate(ollama, { ...request, expectJson: true }, FAST, send), (e: ContractError) => e.statusCode === 422 && e.details.code === 'INVALID_JSON');
});

test('timeouts and 503 are retried with exponential backoff; success on the 4th attempt', async () => {
	model.script.push({ hang: 400 }, { status: 503 }, { hang: 400 }, { text: 'finally' });
	const started = Date.now();
	const result = await generate(openai(), request, FAST, send);
	assert.deepEqual([result.text, result.attempts], ['finally', 4]);
	assert.ok(Date.now() - started >= 20 + 40 + 80, 'waited 20, 40, 80 ms between attempts');
});

test('429 waits the rate-limit delay (or Retry-After) before retrying', async () => {
	model.script.push({ status: 429 }, { text: 'after the wait' });
	const started = Date.now();
	assert.equal((await generate(openai(), request, FAST, send)).text, 'after the wait');
	assert.ok(Date.now() - started >= 150);
});

test('after 3 retries the call fails retryable (504 upstream); a 400 or 500 fails at once (502, not retried)', async () => {
	model.script.push({ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 });
	await assert.rejects(generate(openai(), request, FAST, send), (e: ContractError) => {
		assert.deepEqual([e.statusCode, e.kind, e.retryable, e.details.attempts], [504, 'upstream', true, 4]);
		return true;
	});
	for (const status of [400, 500]) {
		model.requests.length = 0;
		model.script.push({ status });
		await assert.rejects(generate(openai(), request, FAST, send), (e: ContractError) => e.statusCode === 502 && e.retryable === false && e.details.http_status === status);
		assert.equal(model.requests.length, 1, `${status} is not retried`);
	}
});
