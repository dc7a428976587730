/**
 * The exfiltration story of issue 25 §1 through the Knowledge Bot operations (real PostgreSQL; stand-ins
 * of the embeddings endpoint, the model and the Bot API, and an "internal" admin page, all on 127.0.0.1):
 * a group member posts the internal URL (URL → Normalize, WF30), the bot's fetch (WF31) is refused by the
 * outbound-request guard, the pipeline (Extract, Chunk, Embed) has nothing of it, and when the member later
 * asks about it, neither the model's prompt, the answer, its citations nor the reply sent carry a word of the
 * page; the internal server was never asked.
 * The control at the end: the same URL with the page server on the node's allowlist is fetched, and the same
 * question then finds the page — so the test would see a leak if the guard let one through.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, test } from '@jest/globals';
import { chunkOperation } from '../../nodes/KnowledgeBot/actions/document/chunk.operation';
import { embedOperation } from '../../nodes/KnowledgeBot/actions/document/embed.operation';
import { extractOperation } from '../../nodes/KnowledgeBot/actions/document/extract.operation';
import { answerOperation } from '../../nodes/KnowledgeBot/actions/qa/answer.operation';
import { fetchOperation } from '../../nodes/KnowledgeBot/actions/url/fetch.operation';
import { normalizeOperation } from '../../nodes/KnowledgeBot/actions/url/normalize.operation';
import { startBotApi, type BotApiStandIn } from '../helpers/botApiStandIn';
import { startEmbeddings, type EmbeddingStandIn } from '../helpers/embeddingStandIn';
import { knowledgeRunner, type RunnerCredentials } from '../helpers/knowledgeOps';
import { ModelStandIn } from '../helpers/modelStandIn';
import { setupDatabase, type TestDatabase } from '../helpers/db';

const SECRET_WORD = 'ZEBRA-7731';
const TENANT = '00000000-0000-4000-8000-0000000000cc';
const GROUP = -1003;
const MEMBER = 2;
const CTX = { chat_id: GROUP, visibility: 'group', dm_owner_user_id: null, message_version_id: null };
const CORRELATION = '4f5a6b7c-8d9e-4fa0-b1c2-d3e4f5a6b7c8';

let db: TestDatabase;
let embeddings: EmbeddingStandIn;
let botApi: BotApiStandIn;
const model = new ModelStandIn();
let internal: http.Server;
let internalUrl: string;
const hits: string[] = [];

const credentials: RunnerCredentials = {
	embeddings: () => ({ api: 'gemini', baseUrl: embeddings.baseUrl }),
	telegram: () => ({ accessToken: botApi.token, baseUrl: botApi.baseUrl }),
	llm: () => ({ api: 'openai', baseUrl: model.url, model: 'stand-in' }),
};
/** WF31 as shipped, with every port open, so the address is what the guard decides on. */
const shipped = knowledgeRunner(() => db.pool, CORRELATION, credentials, { allowedPorts: '1-65535' });

beforeAll(async () => {
	db = await setupDatabase();
	embeddings = await startEmbeddings();
	botApi = await startBotApi();
	await model.up();
	internal = http.createServer((req, res) => {
		hits.push(req.url ?? '');
		res
			.writeHead(200, { 'content-type': 'text/html' })
			.end(
				`<html><head><title>Admin console</title></head><body><p>The vault code of the admin console is ${SECRET_WORD}.</p></body></html>`,
			);
	});
	await new Promise<void>((r) => internal.listen(0, '127.0.0.1', r));
	internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}/admin/vault`;
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	await q("INSERT INTO core.tenants (tenant_id, name) VALUES ($1, 'T')", [TENANT]);
	await q("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, $2, 'user')", [TENANT, MEMBER]);
	await q('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, $2)', [TENANT, GROUP]);
	await q(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, $2, $3, 'member')",
		[TENANT, GROUP, MEMBER],
	);
	await q("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536)");
	// one ordinary group document, so the question has something to be answered from
	const { rows } = await q(
		"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status, title) VALUES ($1, 'url', 'url:runbook', $2, 'group', 'The console runbook: restart the admin console after each deploy.', 'done', 'Runbook') RETURNING id",
		[TENANT, GROUP],
	);
	const id = Number((rows[0] as { id: number }).id);
	await shipped.run(chunkOperation, { tenant_id: TENANT, document_id: id });
	await shipped.run(embedOperation, { tenant_id: TENANT, document_id: id, model_id: 1 });
});

afterAll(async () => {
	internal?.closeAllConnections();
	await new Promise((r) => internal?.close(r));
	await model.down();
	await botApi.close();
	await embeddings.close();
	await db?.drop();
});

/** The member's question as WF51 gets it; everything the bot produced for it, as one string. */
async function ask(runner: typeof shipped) {
	const before = { requests: model.requests.length, sent: botApi.sent.length };
	model.respond = (body) => ({ text: `From the sources: ${JSON.stringify(body).slice(0, 2000)}` });
	const { data } = await runner.run(answerOperation, {
		tenant_id: TENANT,
		tg_user_id: MEMBER,
		channel: 'group',
		chat_id: GROUP,
		question: 'What is the vault code of the admin console?',
		question_message_version_id: null,
	});
	const prompts = model.requests.slice(before.requests).map((r) => JSON.stringify(r.body));
	const replies = botApi.sent.slice(before.sent).map((m) => m.text);
	return { data, everything: JSON.stringify({ data, prompts, replies }) };
}

/** WF30 → WF31 → (WF33 → WF40 → WF41 when a document came of it), as the job chain runs them. */
async function postLink(runner: typeof shipped) {
	const { data: normalized } = await runner.run(normalizeOperation, { tenant_id: TENANT, url: internalUrl, ctx: CTX });
	try {
		const { data } = await runner.run(fetchOperation, { tenant_id: TENANT, url_id: normalized.url_id, ctx: CTX });
		await runner.run(extractOperation, { tenant_id: TENANT, document_id: data.document_id });
		await runner.run(chunkOperation, { tenant_id: TENANT, document_id: data.document_id });
		await runner.run(embedOperation, { tenant_id: TENANT, document_id: data.document_id, model_id: 1 });
		return { fetched: true as const, error: null };
	} catch (error) {
		return { fetched: false as const, error: error as { statusCode: number; details: Record<string, unknown> } };
	}
}

test('a member posts an internal URL, later asks about it: refused, never fetched, nothing of it in the prompt, the answer, its citations or the reply', async () => {
	const posted = await postLink(shipped);
	assert.equal(posted.fetched, false);
	assert.equal(posted.error?.statusCode, 403);
	assert.equal(posted.error?.details.code, 'BLOCKED_ADDRESS');
	assert.deepEqual(hits, [], 'the internal server was never asked');
	const docs = await db.pool.query<{ n: number }>(
		"SELECT count(*)::int AS n FROM content.documents WHERE tenant_id = $1 AND doc_type = 'url' AND source_key <> 'url:runbook'",
		[TENANT],
	);
	assert.equal(docs.rows[0].n, 0, 'no document, so nothing chunked or embedded');
	const { data, everything } = await ask(shipped);
	assert.ok(typeof data.answer_text === 'string' && data.answer_text.length > 0);
	assert.doesNotMatch(everything, new RegExp(SECRET_WORD));
	assert.doesNotMatch(everything, /vault code of the admin console is/);
	assert.doesNotMatch(everything, /\/admin\/vault/, 'the refused URL is not cited');
});

test('control: with the page server allowlisted, the same post is fetched and the same question finds the page (so a leak would be seen)', async () => {
	const allowing = knowledgeRunner(() => db.pool, CORRELATION, credentials, {
		allowedAddresses: '127.0.0.1',
		allowedPorts: '1-65535',
	});
	const posted = await postLink(allowing);
	assert.equal(posted.fetched, true, JSON.stringify(posted.error));
	assert.equal(hits.length, 1);
	const { everything } = await ask(allowing);
	assert.match(everything, new RegExp(SECRET_WORD));
	assert.match(everything, /\/admin\/vault/, 'the page is cited');
});
