/**
 * What Model → Generate records per HTTP attempt (nodes/shared/llm/generate.ts `observe`, seed 001 §9):
 * outcome, HTTP status and the tokens the provider reported, against a real stand-in model on 127.0.0.1.
 * Timeouts are told apart from other failures for both senders the project uses: n8n's own request helper
 * (n8n-core's httpRequest, what the node's sender calls, with the node's options) and fetch.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, test } from '@jest/globals';
import { fetchSender } from '../../nodes/KnowledgeBot/transport/http';
import { generate, isTimeout, type LlmAttempt, type RetryPolicy, type Sender } from '../../nodes/shared/llm/generate';
import { closedPort } from '../helpers/secretScan';
import { requestSender } from '../../nodes/shared/llm/requestSender';
import { UsageModelStandIn } from '../helpers/usageModelStandIn';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { httpRequest } = require('n8n-core/dist/execution-engine/node-execution-context/utils/request-helper-functions');

/** The node's sender (nodes/shared/llm/requestSender.ts) over n8n-core's httpRequest, as in n8n. */
const n8nSender: Sender = requestSender(httpRequest);

const model = new UsageModelStandIn();
/** A server that accepts and never answers. */
let silent: Server;
let silentUrl = '';
beforeAll(async () => {
	await model.up();
	silent = createServer(() => undefined);
	await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
	silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
});
afterAll(async () => {
	await model.down();
	silent.closeAllConnections();
	await new Promise((r) => silent.close(r));
});

// deadlineMs well above 3 × 300 ms: on a loaded machine a 300 ms timeout fires late, and the default deadline
// (timeout × attempts) would then end the call before the scripted 429 and answer (not what this file tests)
const POLICY: RetryPolicy = { timeoutMs: 300, maxRetries: 2, backoffBaseMs: 1, rateLimitWaitMs: 5, deadlineMs: 30_000 };
const request = { system: 's', input: 'i', expectJson: false };

async function attempts(
	api: 'openai' | 'ollama',
	send: Sender,
	baseUrl = model.url,
): Promise<{ seen: LlmAttempt[]; error?: unknown }> {
	const seen: LlmAttempt[] = [];
	try {
		await generate({ api, baseUrl, apiKey: 'sk-unit', model: 'm1' }, request, POLICY, send, async (a) => {
			seen.push(a);
		});
		return { seen };
	} catch (error) {
		return { seen, error };
	}
}

const brief = (a: LlmAttempt) => [a.attempt, a.outcome, a.httpStatus, a.promptTokens, a.completionTokens];

for (const [name, send] of [
	["n8n's request helper", n8nSender],
	['fetch', fetchSender],
] as const) {
	test(`${name}: a timeout and a 429 are recorded as such, then the answer with its tokens`, async () => {
		model.script.push({ hang: 1_000 }, { status: 429 }, { text: 'ok', promptTokens: 7, completionTokens: 3 });
		const { seen, error } = await attempts('openai', send);
		assert.equal(error, undefined);
		assert.deepEqual(seen.map(brief), [
			[1, 'timeout', null, null, null],
			[2, 'rate_limited', 429, null, null],
			[3, 'ok', 200, 7, 3],
		]);
		assert.ok(seen[0].durationMs >= 250, `the timed-out attempt took its timeout: ${seen[0].durationMs}`);
		assert.ok(seen.every((a) => a.model === 'm1' && a.startedAt instanceof Date));
	});

	test(`${name}: a silent server is a timeout, a refused connection an error`, async () => {
		const timedOut = await attempts('openai', send, silentUrl);
		assert.deepEqual(
			timedOut.seen.map((a) => a.outcome),
			['timeout', 'timeout', 'timeout'],
		);
		const refused = await attempts('openai', send, `http://127.0.0.1:${await closedPort()}`);
		assert.deepEqual(
			refused.seen.map((a) => [a.outcome, a.httpStatus]),
			[
				['error', null],
				['error', null],
				['error', null],
			],
		);
	});
}

test('Ollama: tokens from prompt_eval_count / eval_count; a 2xx without text is an error attempt (and a 502)', async () => {
	model.script.push({ text: 'hi', promptTokens: 11, completionTokens: 4 });
	assert.deepEqual((await attempts('ollama', fetchSender)).seen.map(brief), [[1, 'ok', 200, 11, 4]]);
	model.script.push({ empty: true });
	const { seen, error } = await attempts('ollama', fetchSender);
	assert.deepEqual(seen.map(brief), [[1, 'error', 200, null, null]]);
	assert.equal((error as { statusCode?: number }).statusCode, 502);
});

test('isTimeout: timeout errors of fetch, axios and sockets; not a refusal or a reset', () => {
	assert.ok(isTimeout(new DOMException('The operation was aborted due to timeout', 'TimeoutError')));
	assert.ok(isTimeout(Object.assign(new Error('timeout of 300ms exceeded'), { code: 'ECONNABORTED' })));
	assert.ok(isTimeout(new Error('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ETIMEDOUT' }) })));
	assert.ok(!isTimeout(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' })));
	assert.ok(!isTimeout(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })));
	assert.ok(!isTimeout('a string'));
});
