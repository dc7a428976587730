/**
 * Issue 10 item 5, the credential tests of the HTTP credentials (Contracts Telegram Bot API, LLM API,
 * Embeddings API; `testedBy` on the Knowledge Bot and Pipeline Capture): a base URL without a scheme or
 * with a space is refused with a message naming the field; every failure (DNS, refused, TLS mismatch,
 * 401/404 echoing path, query and headers) is reported as Error without the token or key in the message
 * or in anything logged; a working server answers OK. (The timeout is left out: the tests wait 10 s.)
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { ICredentialTestFunctions, ICredentialsDecrypted, INodeCredentialTestResult } from 'n8n-workflow';
import {
	contractsEmbeddingsApiTest,
	contractsTelegramApiTest,
} from '../../nodes/KnowledgeBot/transport/credentialTest';
import { contractsLlmApiTest } from '../../nodes/shared/llm/credentialTest';
import { ContractsEmbeddingsApi } from '../../credentials/ContractsEmbeddingsApi.credentials';
import { ContractsLlmApi } from '../../credentials/ContractsLlmApi.credentials';
import { ContractsTelegramApi } from '../../credentials/ContractsTelegramApi.credentials';
import { assertNoSecret, captureOutput, closedPort, generateSecrets, startEchoServer } from '../helpers/secretScan';

/** A node class (the `.ts` named: without it the runtime resolves the node's codex `.node.json`). */
async function load<T>(path: string): Promise<T> {
	const m = (await import(path)) as T & { default?: T };
	return m.default ?? m;
}
const S = generateSecrets();
let echo: Awaited<ReturnType<typeof startEchoServer>>;
let refused: number;
let good: http.Server;
let goodUrl: string;
const seen: { path: string; auth?: string; key?: string }[] = [];

beforeAll(async () => {
	echo = await startEchoServer();
	refused = await closedPort();
	good = http.createServer((req, res) => {
		seen.push({
			path: req.url ?? '',
			auth: req.headers.authorization,
			key: req.headers['x-goog-api-key'] as string | undefined,
		});
		res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"result":{},"data":[],"models":[]}');
	});
	await new Promise<void>((r) => good.listen(0, '127.0.0.1', r));
	goodUrl = `http://127.0.0.1:${(good.address() as AddressInfo).port}`;
});
afterAll(async () => {
	await echo.close();
	good.closeAllConnections();
	await new Promise((r) => good.close(r));
});

type Tester = (this: ICredentialTestFunctions, credential: ICredentialsDecrypted) => Promise<INodeCredentialTestResult>;
const CREDENTIALS: { name: string; test: Tester; data: (baseUrl: string) => Record<string, unknown> }[] = [
	{
		name: 'Contracts Telegram Bot API',
		test: contractsTelegramApiTest,
		data: (baseUrl) => ({ accessToken: S.telegramToken, baseUrl }),
	},
	{
		name: 'Contracts LLM API',
		test: contractsLlmApiTest,
		data: (baseUrl) => ({ api: 'openai', baseUrl, apiKey: S.llmKey }),
	},
	{
		name: 'Contracts Embeddings API',
		test: contractsEmbeddingsApiTest,
		data: (baseUrl) => ({ api: 'gemini', baseUrl, apiKey: S.embeddingsKey }),
	},
	{
		name: 'Contracts Embeddings API',
		test: contractsEmbeddingsApiTest,
		data: (baseUrl) => ({ api: 'openai', baseUrl, apiKey: S.embeddingsKey }),
	},
];
const MODES: { name: string; base: () => string; status?: number; badUrl?: string }[] = [
	{ name: 'no scheme', base: () => 'api.secrets-test.invalid', badUrl: 'has no scheme' },
	{ name: 'a space', base: () => `http://127.0.0.1:${echo.port} /x`, badUrl: 'contains whitespace' },
	{
		name: 'user info',
		base: () => `http://user:${encodeURIComponent(S.telegramToken)}@127.0.0.1:${echo.port}`,
		badUrl: 'must not contain a user name or password',
	},
	{ name: 'ftp scheme', base: () => 'ftp://127.0.0.1', badUrl: 'must use http:// or https://' },
	{ name: 'DNS failure', base: () => 'http://api.secrets-test.invalid' },
	{ name: 'connection refused', base: () => `http://127.0.0.1:${refused}` },
	{ name: 'TLS to a plain-HTTP server', base: () => `https://127.0.0.1:${echo.port}` },
	{ name: '401 echoing the request', base: () => echo.url, status: 401 },
	{ name: '404 echoing the request', base: () => echo.url, status: 404 },
];

const call = (t: Tester, data: Record<string, unknown>) =>
	captureOutput(() =>
		t.call({} as ICredentialTestFunctions, { id: '1', name: 'c', type: 't', data } as unknown as ICredentialsDecrypted),
	);

for (const c of CREDENTIALS) {
	for (const mode of MODES) {
		test(`${c.name} credential test (${String(c.data('x').api ?? 'bot')}): ${mode.name}`, async () => {
			echo.status = mode.status ?? 401;
			const { result, logged } = await call(c.test, c.data(mode.base()));
			assert.equal(result.status, 'Error');
			assertNoSecret(`${c.name} credential test`, [result, logged], S.all);
			if (mode.badUrl)
				assert.ok(result.message.startsWith(`${c.name} credential: Base URL (baseUrl) ${mode.badUrl}`), result.message);
			if (mode.status) assert.match(result.message, new RegExp(`HTTP ${mode.status} echo: GET /.*\\[REDACTED\\]`));
		});
	}
	test(`${c.name} credential test (${String(c.data('x').api ?? 'bot')}): a working server answers OK, the secret sent where it belongs`, async () => {
		seen.length = 0;
		const { result } = await call(c.test, c.data(`${goodUrl}/`));
		assert.equal(result.status, 'OK', result.message);
		const [request] = seen;
		if (c.test === contractsTelegramApiTest) assert.equal(request.path, `/bot${S.telegramToken}/getMe`);
		else if (c.data('x').api === 'gemini')
			assert.deepEqual([request.path, request.key], ['/v1beta/models', S.embeddingsKey]);
		else assert.match(String(request.auth), /^Bearer /);
	});
}

test('the credential types have no declarative test; the nodes name their programmatic tests (testedBy)', async () => {
	for (const type of [new ContractsTelegramApi(), new ContractsLlmApi(), new ContractsEmbeddingsApi()])
		assert.equal((type as { test?: unknown }).test, undefined, type.name);
	const { KnowledgeBot } = await load<typeof import('../../nodes/KnowledgeBot/KnowledgeBot.node')>(
		'../../nodes/KnowledgeBot/KnowledgeBot.node.ts',
	);
	const { PipelineCapture } = await load<typeof import('../../nodes/PipelineCapture/PipelineCapture.node')>(
		'../../nodes/PipelineCapture/PipelineCapture.node.ts',
	);
	const kb = new KnowledgeBot();
	const testedBy = Object.fromEntries((kb.description.credentials ?? []).map((c) => [c.name, c.testedBy]));
	assert.deepEqual(testedBy, {
		postgresContractsApi: 'postgresContractsApiTest',
		contractsTelegramApi: 'contractsTelegramApiTest',
		contractsEmbeddingsApi: 'contractsEmbeddingsApiTest',
		contractsLlmApi: 'contractsLlmApiTest',
	});
	for (const name of Object.values(testedBy))
		assert.equal(typeof kb.methods.credentialTest[name as keyof typeof kb.methods.credentialTest], 'function', name);
	const pc = new PipelineCapture();
	assert.equal(pc.description.credentials?.find((c) => c.name === 'contractsLlmApi')?.testedBy, 'contractsLlmApiTest');
	assert.equal(typeof pc.methods.credentialTest.contractsLlmApiTest, 'function');
});
