/**
 * No request carrying a secret follows a redirect (review of issue 10 item 5): a stand-in on 127.0.0.1
 * answers 307 to a second stand-in on another port; the second never sees the Gemini key, the LLM key
 * or the bot token, and the caller gets a clear error that names the redirect and quotes no secret.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { ICredentialTestFunctions, ICredentialsDecrypted } from 'n8n-workflow';
import { downloadFile, getFile, getMe, sendMessage } from '../../nodes/KnowledgeBot/transport/botApi';
import {
	contractsEmbeddingsApiTest,
	contractsTelegramApiTest,
} from '../../nodes/KnowledgeBot/transport/credentialTest';
import { embedTexts } from '../../nodes/KnowledgeBot/transport/embeddings';
import { fetchSender, httpGet, httpPostJson } from '../../nodes/KnowledgeBot/transport/http';
import { contractsLlmApiTest } from '../../nodes/shared/llm/credentialTest';
import { generate } from '../../nodes/shared/llm/generate';

const KEY = `AIza${randomBytes(18).toString('base64url')}`;
const TOKEN = `123456789:AA${randomBytes(20).toString('base64url')}`;
const seenByTarget: string[] = [];
let target: http.Server;
let redirector: http.Server;
let base = '';

const listen = (s: http.Server) =>
	new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)));

beforeAll(async () => {
	target = http.createServer((req, res) => {
		let body = '';
		req.on('data', (c) => (body += c));
		req.on('end', () => {
			seenByTarget.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)} ${body}`);
			res
				.writeHead(200, { 'content-type': 'application/json' })
				.end('{"ok":true,"result":{"id":1,"file_path":"a.pdf","message_id":1},"embeddings":[{"values":[1]}]}');
		});
	});
	const targetPort = await listen(target);
	redirector = http.createServer((req, res) => {
		req.resume();
		res.writeHead(307, { location: `http://127.0.0.1:${targetPort}${req.url}` }).end();
	});
	base = `http://127.0.0.1:${await listen(redirector)}`;
});

afterAll(() => {
	target.close();
	redirector.close();
});

function assertClean(what: string, text: string) {
	assert.ok(
		!text.includes(KEY) && !text.includes(TOKEN) && !text.includes(TOKEN.split(':')[1]),
		`${what} quotes a secret: ${text}`,
	);
	assert.match(text, /307/, what);
	assert.match(text, /redirect/, what);
}

async function failure(what: string, run: () => Promise<unknown>): Promise<void> {
	const error = await run().then(
		() => assert.fail(`${what} succeeded through a redirect`),
		(e: unknown) => e as Error,
	);
	assertClean(what, `${error.message} ${error.stack} ${JSON.stringify(error)}`);
}

const credentialCall = (t: typeof contractsLlmApiTest, data: Record<string, unknown>) =>
	t.call({} as ICredentialTestFunctions, { id: '1', name: 'c', type: 't', data } as unknown as ICredentialsDecrypted);

test('Gemini embeddings, the LLM sender, the Bot API and the credential tests never follow a redirect', async () => {
	await failure('embeddings (gemini)', () =>
		embedTexts(
			httpPostJson,
			{ api: 'gemini', baseUrl: base, apiKey: KEY },
			{ name: 'text-embedding-004', dims: 1 },
			['x'],
			'RETRIEVAL_QUERY',
		),
	);
	await failure('embeddings (openai)', () =>
		embedTexts(
			httpPostJson,
			{ api: 'openai', baseUrl: base, apiKey: KEY },
			{ name: 'm', dims: 1 },
			['x'],
			'RETRIEVAL_QUERY',
		),
	);
	await failure('LLM', () =>
		generate(
			{ api: 'openai', baseUrl: base, apiKey: KEY, model: 'm' },
			{ system: 's', input: 'i', expectJson: false },
			{ timeoutMs: 5_000, maxRetries: 0, backoffBaseMs: 1, rateLimitWaitMs: 1 },
			fetchSender,
		),
	);
	const telegram = { accessToken: TOKEN, baseUrl: base };
	await failure('getMe', () => getMe(httpGet, telegram, 5_000));
	await failure('getFile', () => getFile(httpGet, telegram, 'FILE', 5_000));
	await failure('file download', () => downloadFile(httpGet, telegram, 'documents/a.pdf', 5_000, 1024));
	await failure('sendMessage', () => sendMessage(httpPostJson, telegram, 1, 'hi', null, 5_000));
	for (const [name, t, data] of [
		['Telegram credential test', contractsTelegramApiTest, { accessToken: TOKEN, baseUrl: base }],
		['Embeddings credential test', contractsEmbeddingsApiTest, { api: 'gemini', apiKey: KEY, baseUrl: base }],
		['LLM credential test', contractsLlmApiTest, { api: 'openai', apiKey: KEY, baseUrl: base }],
	] as const) {
		const result = await credentialCall(t, data);
		assert.equal(result.status, 'Error', name);
		assertClean(name, result.message);
	}
	assert.deepEqual(seenByTarget, [], 'the redirect target was called');
});
