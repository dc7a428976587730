/**
 * Issue 10 item 5: no secret in any error, row or log. Every node operation that holds a secret is driven
 * through every error path — base URL without a scheme or with a space, DNS failure (`.invalid`),
 * connection refused (a closed 127.0.0.1 port), TLS to a plain-HTTP server, 401 and 404 answers echoing
 * path, query, headers and body, a timeout — and every output is scanned for every secret (as is and
 * URL-encoded; ArangoDB's Basic header also as Base64): the thrown error (message, stack, cause chain,
 * JSON, util.inspect), the node's error item (runItems, continue mode), its NodeOperationError (stop
 * mode), the ErrorPipe envelope built from each (normalizeErrorItem) and the ops.errors row recorded from
 * it (real PostgreSQL), the watchdog's rows (ops.webhook_health_snapshots, core.bot_transport_state,
 * ops.bot_transport_events), and everything written to console/stdout/stderr. Secrets are new per run.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { afterAll, beforeAll, test } from '@jest/globals';
import type { IExecuteFunctions, ICredentialTestFunctions, ICredentialsDecrypted } from 'n8n-workflow';
import { RESOURCES } from '../../nodes/ArangoCas/actions';
import { arangoDbApiTest } from '../../nodes/ArangoCas/transport/credentialTest';
import { forgetDatabases, getDatabase, type ArangoCredential } from '../../nodes/ArangoCas/transport/database';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { recordError } from '../../nodes/ErrorPipe/actions/record';
import { embeddingsFailure } from '../../nodes/KnowledgeBot/actions/document/embed.operation';
import { downloadOperation } from '../../nodes/KnowledgeBot/actions/file/download.operation';
import { checkOperation } from '../../nodes/KnowledgeBot/actions/botTransport/check.operation';
import { sendMessage } from '../../nodes/KnowledgeBot/transport/botApi';
import { embedTexts } from '../../nodes/KnowledgeBot/transport/embeddings';
import { fetchSender, httpPostJson } from '../../nodes/KnowledgeBot/transport/http';
import { generateOperation } from '../../nodes/PipelineCapture/actions/model/generate.operation';
import { ContractError, fromPgError } from '../../nodes/shared/errors';
import { runItems } from '../../nodes/shared/node/runItems';
import { postgresContractsApiTest } from '../../nodes/shared/postgres/credentialTest';
import { ingestUpdate } from '../../nodes/TelegramIngest/actions/ingest.operation';
import { closeAllPools, getPool, type PostgresCredential } from '../../nodes/shared/postgres/pool';
import { startBotApi } from '../helpers/botApiStandIn';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { knowledgeRunner } from '../helpers/knowledgeOps';
import {
	assertNoSecret,
	captureOutput,
	closedPort,
	generateSecrets,
	secret,
	startEchoServer,
} from '../helpers/secretScan';
import { textWithUrls } from '../helpers/updates';

const S = generateSecrets();
let db: TestDatabase;
let echo: Awaited<ReturnType<typeof startEchoServer>>;
let refusedPort: number;
let silent: net.Server;
let silentPort: number;
let tenantId: string;
let botId: string;

/** Where the credential under test points (set per case). */
let telegramBase = '';
const CORRELATION = '0c0c0c0c-1d1d-4e4e-8f8f-909090909090';
const { run } = knowledgeRunner(() => db.pool, CORRELATION, {
	telegram: () => ({ accessToken: S.telegramToken, baseUrl: telegramBase }),
});
const GROUP = { chat_id: -100777, visibility: 'group', dm_owner_user_id: null, message_version_id: null };

beforeAll(async () => {
	db = await setupDatabase();
	echo = await startEchoServer();
	refusedPort = await closedPort();
	silent = net.createServer(() => undefined);
	await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
	silentPort = (silent.address() as net.AddressInfo).port;
	const bot = await seedBot(db.pool, 'secrets_bot');
	[tenantId, botId] = [bot.tenantId, bot.botId];
	await db.pool.query('UPDATE core.bots SET tg_bot_id = 5550001 WHERE bot_id = $1', [botId]);
});
afterAll(async () => {
	forgetDatabases();
	await closeAllPools();
	await echo.close();
	silent.close();
	await db.drop();
});

interface Mode {
	name: string;
	/** The base URL of an HTTP credential in this mode (`arango`: the ArangoDB URL). */
	base: (arango?: boolean) => string;
	status?: number;
	hang?: boolean;
	/** The base URL itself is refused: BAD_CREDENTIAL_URL naming the field. */
	badUrl?: boolean;
}

const MODES: Mode[] = [
	{
		name: 'base URL without a scheme',
		base: (a) => (a ? 'arango.secrets-test.invalid:8529' : 'api.secrets-test.invalid'),
		badUrl: true,
	},
	{ name: 'base URL with a space', base: () => `http://127.0.0.1:${echo.port} /api`, badUrl: true },
	{
		name: 'DNS failure',
		base: (a) => (a ? 'http://arango.secrets-test.invalid:8529' : 'http://api.secrets-test.invalid'),
	},
	{ name: 'connection refused', base: () => `http://127.0.0.1:${refusedPort}` },
	{ name: 'TLS to a plain-HTTP server', base: () => `https://127.0.0.1:${echo.port}` },
	{ name: '401 echoing path, query and headers', base: () => echo.url, status: 401 },
	{ name: '404 echoing path, query and headers', base: () => echo.url, status: 404 },
	{ name: 'timeout', base: () => echo.url, hang: true },
];

function enter(mode: Mode): void {
	echo.status = mode.status ?? 401;
	echo.hang = mode.hang === true;
}

const NODE = {
	id: 'n1',
	name: 'Secret Holder',
	type: 'n8n-nodes-contracts.knowledgeBot',
	typeVersion: 1,
	position: [0, 0],
	parameters: {},
};
const fn = (continueOnFail: boolean) =>
	({
		getInputData: () => [{ json: {} }],
		getNode: () => NODE,
		continueOnFail: () => continueOnFail,
	}) as unknown as IExecuteFunctions;

/**
 * Runs `work` with output captured; when it throws, passes the error through the node's error item
 * (continue mode), its NodeOperationError (stop mode), the ErrorPipe envelope of each and the ops.errors
 * row recorded from it; scans all of them, the log and `rows()` for every secret.
 * @returns what `work` threw (undefined when it succeeded)
 */
async function expectClean(
	label: string,
	work: () => Promise<unknown>,
	rows: () => Promise<unknown> = async () => null,
	secrets = S.all,
): Promise<unknown> {
	const outputs: [string, unknown][] = [];
	const { logged, result: thrown } = await captureOutput(async () => {
		let error: unknown;
		try {
			outputs.push(['result', await work()]);
		} catch (caught) {
			error = caught;
		}
		if (error === undefined) return undefined;
		outputs.push(['thrown error', error]);
		const [[item]] = await runItems(fn(true), async () => {
			throw error;
		});
		outputs.push(['node error item', item.json]);
		let stop: (Error & { description?: string }) | undefined;
		try {
			await runItems(fn(false), async () => {
				throw error;
			});
		} catch (e) {
			stop = e as Error;
		}
		outputs.push(['NodeOperationError', stop]);
		const stopItem = {
			error: { name: stop?.name, message: stop?.message, description: stop?.description, stack: stop?.stack },
			ctx: { correlation_id: CORRELATION },
		};
		for (const [what, input] of [
			['error item', item.json],
			['stop-mode error', stopItem],
		] as const) {
			const { envelope, jobId, contractVersion } = normalizeErrorItem(input, { source: 'WF99' });
			outputs.push([`ErrorPipe envelope (${what})`, envelope]);
			const recorded = await recordError(db.pool, envelope, jobId, contractVersion);
			assert.ok(recorded.error_id, `${label}: an ops.errors row for the ${what}`);
			const row = await db.pool.query('SELECT row_to_json(e)::text AS j FROM ops.errors e WHERE id = $1', [
				recorded.error_id,
			]);
			outputs.push([`ops.errors row (${what})`, row.rows[0].j]);
		}
		return error;
	});
	outputs.push(['rows written', await rows()], ['console/stdout/stderr', logged]);
	for (const [what, value] of outputs) assertNoSecret(`${label}: ${what}`, value, secrets);
	return thrown;
}

function assertBadUrl(label: string, thrown: unknown, field: RegExp): void {
	assert.ok(thrown instanceof ContractError, `${label}: a ContractError, got ${String(thrown)}`);
	assert.deepEqual(
		[thrown.statusCode, thrown.kind, thrown.retryable, thrown.details.code],
		[500, 'validation', false, 'BAD_CREDENTIAL_URL'],
		label,
	);
	assert.match(thrown.message, field, label);
}

/** Clears the watchdog's tables, so a case scans only the rows it wrote itself. */
const clearWatchdog = () =>
	db.pool.query(
		'DELETE FROM ops.bot_transport_events; DELETE FROM ops.webhook_health_snapshots; DELETE FROM core.bot_transport_state',
	);
const watchdogRows = async () =>
	(
		await db.pool
			.query(`SELECT (SELECT coalesce(json_agg(s), '[]') FROM ops.webhook_health_snapshots s)::text AS snapshots,
			(SELECT coalesce(json_agg(t), '[]') FROM core.bot_transport_state t)::text AS state,
			(SELECT coalesce(json_agg(e), '[]') FROM ops.bot_transport_events e)::text AS events`)
	).rows[0];

// Telegram bot token: File → Download (WF32), Bot Transport → Check (WF11), the Answer's sendMessage (WF51).
for (const mode of MODES) {
	test(`Telegram token, File → Download (WF32): ${mode.name}`, async () => {
		enter(mode);
		telegramBase = mode.base();
		const thrown = await expectClean('Download', () =>
			run(downloadOperation, {
				tenant_id: tenantId,
				file_id: 'AgADfileId',
				file_unique_id: 'AgADunique',
				ctx: GROUP,
				timeout_ms: 400,
			}),
		);
		assert.ok(thrown, 'the download fails');
		if (mode.badUrl) assertBadUrl('Download', thrown, /Contracts Telegram Bot API credential: Base URL \(baseUrl\)/);
	});

	test(`Telegram token, Bot Transport → Check (WF11) with bot_id: ${mode.name}`, async () => {
		enter(mode);
		telegramBase = mode.base();
		await clearWatchdog();
		const thrown = await expectClean('Check', () => run(checkOperation, { bot_id: botId }), watchdogRows);
		if (mode.badUrl) assertBadUrl('Check', thrown, /Base URL \(baseUrl\)/);
		else assert.equal(thrown, undefined, 'an unreachable Bot API is recorded, not raised');
	});

	if (!mode.hang) {
		test(`Telegram token, Bot Transport → Check (WF11) finding the bot by getMe: ${mode.name}`, async () => {
			enter(mode);
			telegramBase = mode.base();
			await clearWatchdog();
			const thrown = await expectClean('Check (getMe)', () => run(checkOperation, {}), watchdogRows);
			assert.ok(thrown, 'no bot without getMe');
		});
	}

	test(`Telegram token, sendMessage (WF51 reply): ${mode.name}`, async () => {
		enter(mode);
		const thrown = await expectClean('sendMessage', () =>
			sendMessage(httpPostJson, { accessToken: S.telegramToken, baseUrl: mode.base() }, 42, 'hello', null, 400),
		);
		assert.ok(thrown);
		if (mode.badUrl) assertBadUrl('sendMessage', thrown, /Base URL \(baseUrl\)/);
	});
}

test('Telegram token in getWebhookInfo (webhook URL and delivery error): redacted in every row; the health still judged', async () => {
	const botApi = await startBotApi(S.telegramToken);
	try {
		botApi.webhookInfo = {
			url: `https://hooks.example/tg/${S.telegramToken}`,
			pending_update_count: 0,
			last_error_date: Math.floor(Date.now() / 1000) - 5,
			last_error_message: `Wrong response from https://hooks.example/tg/${encodeURIComponent(S.telegramToken)}: 502`,
		};
		telegramBase = botApi.baseUrl;
		await clearWatchdog();
		const result = (await expectClean(
			'Check (webhook info)',
			() => run(checkOperation, { bot_id: botId }),
			watchdogRows,
		)) as undefined;
		assert.equal(result, undefined);
		const last = await db.pool.query(
			'SELECT health, url, last_error_message FROM ops.webhook_health_snapshots WHERE bot_id = $1 ORDER BY id DESC LIMIT 1',
			[botId],
		);
		assert.equal(last.rows[0].health, 'degraded');
		assert.equal(last.rows[0].url, 'https://hooks.example/tg/[REDACTED]');
		assert.match(last.rows[0].last_error_message, /\/tg\/\[REDACTED\]: 502/);
	} finally {
		await botApi.close();
	}
});

// API keys: embeddings (WF41 Embed, WF51 Answer) and the model (Pipeline Capture Model → Generate, WF51 Answer).
for (const mode of MODES) {
	for (const api of ['gemini', 'openai'] as const) {
		test(`embeddings key (${api}): ${mode.name}`, async () => {
			enter(mode);
			const raw: unknown[] = [];
			const thrown = await expectClean(`embeddings ${api}`, async () => {
				try {
					return await embedTexts(
						httpPostJson,
						{ api, baseUrl: mode.base(), apiKey: S.embeddingsKey },
						{ name: 'embed-model', dims: 3 },
						['a question'],
						'RETRIEVAL_QUERY',
						400,
					);
				} catch (error) {
					raw.push(error);
					throw embeddingsFailure(error);
				}
			});
			assert.ok(thrown);
			assertNoSecret("the transport's own error", raw[0], S.all);
			if (mode.badUrl) assertBadUrl('embeddings', thrown, /Contracts Embeddings API credential: Base URL \(baseUrl\)/);
		});
	}

	test(`LLM key, Pipeline Capture Model → Generate: ${mode.name}`, async () => {
		enter(mode);
		const ctx = {
			pool: db.pool,
			definition: async () => assert.fail('not used'),
			worker: 'secrets-test',
			llm: async () => ({
				credential: { api: 'openai' as const, baseUrl: mode.base(), apiKey: S.llmKey, model: 'gpt-x' },
				send: fetchSender,
			}),
		};
		const thrown = await expectClean('Generate', () =>
			generateOperation.execute(ctx, {
				system: 'terse',
				input: 'hi',
				max_retries: 0,
				timeout_ms: 400,
				backoff_base_ms: 1,
			}),
		);
		assert.ok(thrown);
		if (mode.badUrl) assertBadUrl('Generate', thrown, /Contracts LLM API credential: Base URL \(baseUrl\)/);
	});
}

// ArangoDB password (Basic) and JWT: ArangoCAS, a one-query operation and a stream-transaction one in every
// mode, and every operation against a server echoing the request.
const ARANGO_INPUTS: Record<string, Record<string, unknown>> = {
	'atom.lock': { atom_id: 'atom_uuid_v5', user_id: 'user_123', expected_rev: '_r1' },
	'atom.unlock': { atom_id: 'atom_uuid_v5', user_id: 'user_123', expected_rev: '_r1' },
	'atom.archive': { atom_id: 'atom_uuid_v5', user_id: 'user_123', expected_rev: '_r1', reason: 'cancelled' },
	'atom.unlockExpired': {},
	'proposal.create': { target_active_id: 'atom_uuid_v5', new_content: 'text', comment: 'c', author: 'user_123' },
	'proposal.reject': { proposal_id: 'atom_draft_y', expected_proposal_rev: '_r1' },
	'proposal.merge': {
		winner_proposal_id: 'atom_draft_x',
		current_active_id: 'atom_uuid_v5',
		user_id: 'user_123',
		structure_edge_id: 'structure_links/e1',
		expected_edge_rev: '_e1',
	},
	'baseline.create': { doc_id: 'docs/doc_1', version_tag: 'v1.0', title: 'MVP' },
	'analysis.loadContext': { target_atom_id: 'atom_uuid_v5', agent_role_key: 'fixer' },
	'analysis.saveResult': { target_atom_id: 'atom_uuid_v5', prompt_id: 'prompts/p1', ai_response: '{"issues":[]}' },
	'analysis.saveError': { target_atom_id: 'atom_uuid_v5', prompt_id: 'prompts/p1', status_code: 500 },
};
const arangoOp = (name: string) => {
	const [resource, operation] = name.split('.');
	return RESOURCES.find((r) => r.value === resource)!.operations.find((o) => o.value === operation)!;
};
const arangoCredential = (url: string, auth: 'basic' | 'jwt'): ArangoCredential =>
	auth === 'basic'
		? { url, database: 'secrets', authMode: 'basic', username: 'root', password: S.arangoPassword, timeoutMs: 400 }
		: { url, database: 'secrets', authMode: 'jwt', token: S.arangoJwt, timeoutMs: 400 };
const arangoRun = (credential: ArangoCredential, name: string) => async () =>
	arangoOp(name).execute(getDatabase(credential), ARANGO_INPUTS[name], { executionId: '4711' });

for (const mode of MODES) {
	for (const auth of ['basic', 'jwt'] as const) {
		for (const name of ['atom.lock', 'proposal.merge']) {
			test(`ArangoDB ${auth === 'basic' ? 'password' : 'JWT'}, ArangoCAS ${name}: ${mode.name}`, async () => {
				enter(mode);
				const thrown = await expectClean(`ArangoCAS ${name}`, arangoRun(arangoCredential(mode.base(true), auth), name));
				assert.ok(thrown);
				if (mode.badUrl) assertBadUrl(name, thrown, /ArangoDB API credential: URL \(url\)/);
			});
		}
	}
}

test('ArangoDB password and JWT, every ArangoCAS operation against a server echoing the request (401 and 404)', async () => {
	for (const status of [401, 404]) {
		enter({ name: 'echo', base: () => echo.url, status });
		for (const auth of ['basic', 'jwt'] as const) {
			for (const name of Object.keys(ARANGO_INPUTS)) {
				assert.ok(
					await expectClean(
						`ArangoCAS ${name} (${auth}, ${status})`,
						arangoRun(arangoCredential(echo.url, auth), name),
					),
				);
			}
		}
	}
});

// PostgreSQL password: every node's pool (fromPgError) and the credential test.
const PG_CASES: { name: string; credential: () => PostgresCredential }[] = [
	{
		name: 'a connection string pasted into Host',
		credential: () => ({
			host: `postgres://postgres:${S.postgresPassword}@127.0.0.1:5432/postgres`,
			port: 5432,
			database: 'postgres',
			user: 'postgres',
			password: S.postgresPassword,
		}),
	},
	{
		name: 'DNS failure',
		credential: () => ({
			host: 'pg.secrets-test.invalid',
			port: 5432,
			database: 'postgres',
			user: 'postgres',
			password: S.postgresPassword,
		}),
	},
	{
		name: 'connection refused',
		credential: () => ({
			host: '127.0.0.1',
			port: refusedPort,
			database: 'postgres',
			user: 'postgres',
			password: S.postgresPassword,
		}),
	},
	{
		name: 'TLS required by a server without it',
		credential: () => ({
			host: '127.0.0.1',
			port: echo.port,
			database: 'postgres',
			user: 'postgres',
			password: S.postgresPassword,
			ssl: 'require',
		}),
	},
	{
		name: 'a server that answers HTTP',
		credential: () => ({
			host: '127.0.0.1',
			port: echo.port,
			database: 'postgres',
			user: 'postgres',
			password: S.postgresPassword,
		}),
	},
	{
		name: 'timeout (a server that never answers)',
		credential: () => ({
			host: '127.0.0.1',
			port: silentPort,
			database: 'postgres',
			user: 'postgres',
			password: S.postgresPassword,
		}),
	},
];

for (const c of PG_CASES) {
	test(`PostgreSQL password, a node's query (fromPgError) and the credential test: ${c.name}`, async () => {
		enter({ name: c.name, base: () => '', status: 400 });
		const credential = c.credential();
		const thrown = await expectClean('PostgreSQL query', async () => {
			try {
				return await getPool(credential).query('SELECT 1');
			} catch (error) {
				throw fromPgError(error, { operation: 'select', table: 'core.bots' });
			}
		});
		// a connection string in Host is refused before any connection (validation, the field named)
		assert.ok(
			thrown instanceof ContractError &&
				thrown.kind === (c.name.startsWith('a connection string') ? 'validation' : 'db'),
		);
		const { result, logged } = await captureOutput(() =>
			postgresContractsApiTest.call(
				{} as ICredentialTestFunctions,
				{ id: '1', name: 'pg', type: 'postgresContractsApi', data: credential } as unknown as ICredentialsDecrypted,
			),
		);
		assert.equal(result.status, 'Error');
		assertNoSecret('the PostgreSQL credential test', [result, logged], S.all);
	});
}

test('ArangoDB credential test: every mode, both authentications, the message never carries the secret', async () => {
	for (const mode of MODES.filter((m) => !m.hang)) {
		enter(mode);
		for (const auth of ['basic', 'jwt'] as const) {
			const data = arangoCredential(mode.base(true), auth);
			const { result, logged } = await captureOutput(() =>
				arangoDbApiTest.call(
					{} as ICredentialTestFunctions,
					{ id: '1', name: 'arango', type: 'arangoDbApi', data } as unknown as ICredentialsDecrypted,
				),
			);
			assert.equal(result.status, 'Error', `${mode.name} ${auth}`);
			assertNoSecret(`ArangoDB credential test (${mode.name}, ${auth})`, [result, logged], S.all);
			if (mode.badUrl) assert.match(result.message ?? '', /ArangoDB API credential: URL \(url\)/);
		}
	}
});

// Webhook secret (core.bots.webhook_secret): Telegram Ingest (WF10) refuses a missing or wrong header, or
// a bad body, without quoting the secret anywhere; an accepted update stores none of it.
test('webhook secret, Telegram Ingest (WF10): missing, near-miss, right secret with a bad body, and accepted', async () => {
	const webhookSecret = `whs_${Date.now().toString(36)}${Math.random().toString(36).slice(2)}-A`;
	const bot = await seedBot(db.pool, 'webhook_secret_bot', webhookSecret);
	const secrets = [...S.all, secret('webhook secret', webhookSecret)];
	const nearMiss = `${webhookSecret.slice(0, -1)}B`;
	const input = (secretToken: unknown, update: unknown) => ({
		botKey: bot.botKey,
		secretToken,
		update,
		jobType: 'telegram_update',
		maxAttempts: 5,
		workflow: 'WF10',
		nodeName: 'Telegram Ingest',
	});
	for (const [label, secretToken, update] of [
		['missing header', undefined, textWithUrls()],
		['near-miss secret', nearMiss, textWithUrls()],
		['right secret, body not JSON', webhookSecret, '{not json'],
		['right secret, not an update', webhookSecret, { hello: 'world' }],
	] as const) {
		const thrown = await expectClean(
			`Ingest (${label})`,
			() => ingestUpdate(db.pool, input(secretToken, update), { ctx: {} }),
			async () => (await db.pool.query('SELECT json_agg(e)::text AS j FROM ops.errors e')).rows[0].j,
			secrets,
		);
		assert.ok(thrown instanceof ContractError, label);
	}
	const accepted = await captureOutput(() => ingestUpdate(db.pool, input(webhookSecret, textWithUrls()), { ctx: {} }));
	assertNoSecret('Ingest (accepted): envelope and log', [accepted.result, accepted.logged], secrets);
});
