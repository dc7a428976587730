/**
 * URL → Fetch (WF31), File → Download (WF32) and Document → Extract (WF33) on real PostgreSQL against
 * real HTTP servers on 127.0.0.1: a page server (HTML, PDF, DOCX, errors, a slow page, a too-large body)
 * and a stand-in of the Bot API's getFile and file download.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, test } from '@jest/globals';
import { extractOperation } from '../../nodes/KnowledgeBot/actions/document/extract.operation';
import { downloadOperation } from '../../nodes/KnowledgeBot/actions/file/download.operation';
import { fetchOperation } from '../../nodes/KnowledgeBot/actions/url/fetch.operation';
import { normalizeOperation } from '../../nodes/KnowledgeBot/actions/url/normalize.operation';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { startBotApi, type BotApiStandIn } from '../helpers/botApiStandIn';
import { docxWithParagraphs, pdfWithText } from '../helpers/documents';
import { knowledgeRunner } from '../helpers/knowledgeOps';

let db: TestDatabase;
let tenant: string;
let botApi: BotApiStandIn;
let server: http.Server;
let base: string;
let version = 1;
const pages: Record<string, { type: string; body: () => Buffer | Promise<Buffer>; status?: number; delayMs?: number }> =
	{
		'/article.html': {
			type: 'text/html; charset=utf-8',
			body: () =>
				Buffer.from(
					`<html><head><title>Vector search notes</title></head><body><nav>menu</nav><h1>HNSW</h1><p>Graph index, version ${version}.</p><script>track()</script></body></html>`,
				),
		},
		'/paper.pdf': { type: 'application/pdf', body: () => pdfWithText('Attention is all you need') },
		'/notes.docx': {
			type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
			body: () => docxWithParagraphs(['First point', 'Second point']),
		},
		'/image.png': { type: 'image/png', body: () => Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]) },
		'/gone': { type: 'text/plain', body: () => Buffer.from('not here'), status: 404 },
		'/boom': { type: 'text/plain', body: () => Buffer.from('down'), status: 503 },
		'/slow': { type: 'text/plain', body: () => Buffer.from('late'), delayMs: 3000 },
		'/huge': { type: 'text/plain', body: () => Buffer.alloc(300_000, 'a') },
	};

beforeAll(async () => {
	db = await setupDatabase();
	tenant = (await seedBot(db.pool)).tenantId;
	botApi = await startBotApi();
	server = http.createServer(async (req, res) => {
		const page = pages[req.url ?? ''];
		if (!page) {
			res.writeHead(404).end();
			return;
		}
		if (page.delayMs) await new Promise((r) => setTimeout(r, page.delayMs));
		const body = await page.body();
		res.writeHead(page.status ?? 200, { 'content-type': page.type }).end(body);
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
	await botApi.close();
	server.closeAllConnections();
	await new Promise((r) => server.close(r));
	await db.drop();
});

const CORRELATION = '1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5';
const GROUP: Record<string, unknown> = {
	chat_id: -100555,
	visibility: 'group',
	dm_owner_user_id: null,
	message_version_id: null,
};

// the page server is on 127.0.0.1: URL → Fetch's guard refuses it unless the node's options name it
const runner = knowledgeRunner(
	() => db.pool,
	CORRELATION,
	{ telegram: () => ({ accessToken: botApi.token, baseUrl: botApi.baseUrl }) },
	{ allowedAddresses: '127.0.0.1', allowedPorts: '1024-65535' },
);
const run = async (op: Parameters<typeof runner.run>[0], req: unknown) => (await runner.run(op, req)).data;
const failure = runner.failure;
async function urlId(pathname: string, ctx = GROUP) {
	return Number((await run(normalizeOperation, { tenant_id: tenant, url: `${base}${pathname}`, ctx })).url_id);
}
async function fetchAndExtract(pathname: string) {
	const fetched = await run(fetchOperation, { tenant_id: tenant, url_id: await urlId(pathname), ctx: GROUP });
	const extracted = await run(extractOperation, { tenant_id: tenant, document_id: fetched.document_id });
	const doc = (
		await db.pool.query('SELECT text, title, status, token_count, error FROM content.documents WHERE id = $1', [
			fetched.document_id,
		])
	).rows[0];
	return { fetched, extracted, doc };
}

test('HTML: fetched into a blob and a pending document, extracted without nav/script, chunk job enqueued; an unchanged body is not extracted again', async () => {
	const { fetched, extracted, doc } = await fetchAndExtract('/article.html');
	assert.equal(fetched.status, 'pending');
	assert.ok(fetched.extract_job_id);
	assert.equal(doc.status, 'done');
	assert.equal(doc.title, 'Vector search notes');
	assert.match(doc.text, /HNSW/);
	assert.match(doc.text, /Graph index, version 1\./);
	assert.doesNotMatch(doc.text, /menu|track/);
	assert.ok(doc.token_count > 3);
	assert.ok(extracted.chunk_job_id);
	const again = await run(fetchOperation, { tenant_id: tenant, url_id: await urlId('/article.html'), ctx: GROUP });
	assert.deepEqual([again.document_id, again.status, again.extract_job_id], [fetched.document_id, 'done', null]);
	version = 2; // the page changed: the same document goes back to pending with a new blob
	const changed = await run(fetchOperation, { tenant_id: tenant, url_id: await urlId('/article.html'), ctx: GROUP });
	assert.equal(changed.status, 'pending');
	assert.notEqual(changed.extract_job_id, fetched.extract_job_id);
	const blobs = await db.pool.query(
		"SELECT count(*)::int AS n FROM content.url_fetches f JOIN content.urls u ON u.id = f.url_id WHERE u.normalized_url LIKE '%/article.html' AND f.status = 'done'",
	);
	assert.equal(blobs.rows[0].n, 3);
});

test('PDF and DOCX: text extracted by the maintained libraries', async () => {
	const pdf = await fetchAndExtract('/paper.pdf');
	assert.deepEqual([pdf.doc.status, pdf.doc.text, pdf.extracted.kind], ['done', 'Attention is all you need', 'pdf']);
	const docx = await fetchAndExtract('/notes.docx');
	assert.deepEqual(
		[docx.doc.status, docx.doc.text.split(/\s+/).join(' '), docx.extracted.kind],
		['done', 'First point Second point', 'docx'],
	);
});

test('a type without an extractor: the document is set to error with the reason, no chunk job', async () => {
	const { extracted, doc } = await fetchAndExtract('/image.png');
	assert.deepEqual([doc.status, extracted.chunk_job_id], ['error', null]);
	assert.match(doc.error, /no text extractor for image\/png/);
});

test('4xx recorded as an error fetch and answered (not retried); 5xx, timeout and too-large recorded and raised', async () => {
	const gone = await run(fetchOperation, { tenant_id: tenant, url_id: await urlId('/gone'), ctx: GROUP });
	assert.deepEqual([gone.status, gone.http_status, gone.document_id], ['error', 404, null]);
	const boom = await failure(fetchOperation, { tenant_id: tenant, url_id: await urlId('/boom'), ctx: GROUP });
	assert.deepEqual(
		[boom.statusCode, boom.kind, boom.retryable, boom.details.http_status],
		[502, 'upstream', true, 503],
	);
	const slow = await failure(fetchOperation, {
		tenant_id: tenant,
		url_id: await urlId('/slow'),
		ctx: GROUP,
		timeout_ms: 300,
	});
	assert.deepEqual([slow.statusCode, slow.retryable], [502, true]);
	const huge = await failure(fetchOperation, {
		tenant_id: tenant,
		url_id: await urlId('/huge'),
		ctx: GROUP,
		max_bytes: 100_000,
	});
	assert.deepEqual([huge.statusCode, huge.details.code, huge.retryable], [413, 'TOO_LARGE', false]);
	const rows = await db.pool.query(
		"SELECT u.normalized_url, f.status FROM content.url_fetches f JOIN content.urls u ON u.id = f.url_id WHERE u.normalized_url ~ '/(gone|boom|slow|huge)$' ORDER BY f.id",
	);
	assert.deepEqual(
		rows.rows.map((r) => [r.normalized_url.replace(base, ''), r.status]),
		[
			['/gone', 'error'],
			['/boom', 'error'],
			['/slow', 'error'],
			['/huge', 'error'],
		],
	);
	const missing = await failure(fetchOperation, { tenant_id: tenant, url_id: 987_654, ctx: GROUP });
	assert.deepEqual([missing.statusCode, missing.details.code], [404, 'URL_NOT_FOUND']);
});

test('dm visibility travels from the fetch to the document', async () => {
	const dm = { chat_id: 4242, visibility: 'dm', dm_owner_user_id: 4242, message_version_id: null };
	const fetched = await run(fetchOperation, { tenant_id: tenant, url_id: await urlId('/notes.docx', dm), ctx: dm });
	const doc = (
		await db.pool.query(
			'SELECT visibility, dm_owner_user_id::int AS owner, chat_id::int AS chat FROM content.documents WHERE id = $1',
			[fetched.document_id],
		)
	).rows[0];
	assert.deepEqual(doc, { visibility: 'dm', owner: 4242, chat: 4242 });
});

test("Extract: 404 for another tenant's document, 409 before anything was downloaded", async () => {
	const other = (await seedBot(db.pool, 'other_bot')).tenantId;
	const { fetched } = await fetchAndExtract('/paper.pdf');
	const foreign = await failure(extractOperation, { tenant_id: other, document_id: fetched.document_id });
	assert.deepEqual([foreign.statusCode, foreign.details.code], [404, 'DOCUMENT_NOT_FOUND']);
	const { rows } = await db.pool.query(
		"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility) VALUES ($1, 'file', 'file:none', -1, 'group') RETURNING id",
		[tenant],
	);
	const empty = await failure(extractOperation, { tenant_id: tenant, document_id: rows[0].id });
	assert.deepEqual([empty.statusCode, empty.details.code], [409, 'NO_BODY']);
});

/** A document sent to the group, as WF20 enqueues its file_download job, with the file on the Bot API stand-in. */
async function sentFile(uniqueId: string, body: Buffer, extra: Record<string, unknown> = {}) {
	const fileId = `BQAC-${uniqueId}`;
	botApi.files.set(fileId, { path: `documents/${uniqueId}.pdf`, body, type: 'application/octet-stream' });
	await db.pool.query(
		'INSERT INTO tg.files (tenant_id, file_unique_id, file_name, mime_type, file_size) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING',
		[tenant, uniqueId, 'report.pdf', 'application/pdf', body.length],
	);
	await db.pool.query(
		'INSERT INTO tg.file_instances (tenant_id, file_unique_id, file_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
		[tenant, uniqueId, fileId],
	);
	return {
		tenant_id: tenant,
		file_id: fileId,
		file_unique_id: uniqueId,
		file_name: 'report.pdf',
		mime_type: 'application/pdf',
		file_size: body.length,
		ctx: GROUP,
		...extra,
	};
}

test('File → Download: getFile then the file, path recorded, a pending document extracted as PDF; a replay reuses the job', async () => {
	const req = await sentFile('AgADpdf1', pdfWithText('Quarterly report'));
	const first = await run(downloadOperation, req);
	assert.equal(first.status, 'pending');
	assert.deepEqual(botApi.requests.slice(-2), ['/bot<token>/getFile', '/file/bot<token>/documents/AgADpdf1.pdf']);
	const instance = await db.pool.query('SELECT tg_file_path FROM tg.file_instances WHERE file_id = $1', [req.file_id]);
	assert.equal(instance.rows[0].tg_file_path, 'documents/AgADpdf1.pdf');
	const again = await run(downloadOperation, req);
	assert.deepEqual([again.document_id, again.extract_job_id], [first.document_id, first.extract_job_id]);
	const extracted = await run(extractOperation, { tenant_id: tenant, document_id: first.document_id });
	assert.deepEqual([extracted.status, extracted.kind], ['done', 'pdf']);
	const doc = await db.pool.query('SELECT doc_type, source_key, text, mime_type FROM content.documents WHERE id = $1', [
		first.document_id,
	]);
	assert.deepEqual(doc.rows[0], {
		doc_type: 'file',
		source_key: 'file:AgADpdf1',
		text: 'Quarterly report',
		mime_type: 'application/pdf',
	});
});

test('File → Download: over 20 MB the Bot API is not called and the document records why; Bot API errors map to 502', async () => {
	const before = botApi.requests.length;
	const big = await run(downloadOperation, {
		...(await sentFile('AgADbig', Buffer.from('x'))),
		file_size: 25 * 1024 * 1024,
	});
	assert.equal(big.status, 'error');
	assert.equal(botApi.requests.length, before, 'no Bot API call for a file a bot cannot download');
	const doc = await db.pool.query('SELECT status, error FROM content.documents WHERE id = $1', [big.document_id]);
	assert.equal(doc.rows[0].status, 'error');
	assert.match(doc.rows[0].error, /over the Bot API download limit/);
	const expired = await failure(downloadOperation, {
		tenant_id: tenant,
		file_id: 'gone',
		file_unique_id: 'AgADgone',
		ctx: GROUP,
	});
	assert.deepEqual(
		[expired.statusCode, expired.retryable, expired.details.description],
		[502, false, 'Bad Request: invalid file_id'],
	);
	assert.doesNotMatch(expired.message, new RegExp(botApi.token), 'the token never appears in an error');
	const req = await sentFile('AgADretry', pdfWithText('Later'));
	botApi.failNext(502);
	const down = await failure(downloadOperation, req);
	assert.deepEqual([down.statusCode, down.retryable], [502, true]);
	botApi.failNext(429);
	const limited = await failure(downloadOperation, req);
	assert.deepEqual([limited.kind, limited.retryable], ['rate_limit', true]);
	assert.equal((await run(downloadOperation, req)).status, 'pending');
});

test('File → Download: a file_path that would leave the file directory (dot segments, also with parameters `..;`, double-encoded `%252e`, query, fragment, backslash, encoded slash, control character) is not downloaded: 502 UNSAFE_FILE_PATH, not retried', async () => {
	const paths = [
		'../../x',
		'documents/../../../bot123/getMe',
		'%2e%2e/%2E%2E/admin',
		'documents/.%2e/x',
		'documents/file.pdf?x=1',
		'documents/file.pdf#x',
		'documents\\..\\..\\x',
		'documents//file.pdf',
		'documents/%2F..%2Fx',
		'documents/fi\nle.pdf',
		'documents/.',
		'documents/..;/..;/bot123/getMe',
		'..;jsessionid=1/x',
		'documents/.;x/file.pdf',
		'documents/;x/file.pdf',
		'documents/%2e%2e;/x',
		'a%252e%252e/b',
		'documents/%252e%252e/%252e%252e/x',
		'documents/file%2525.pdf',
	];
	for (const [k, unsafe] of paths.entries()) {
		const req = await sentFile(`AgADunsafe${k}`, Buffer.from('%PDF-1.4'));
		botApi.files.set(req.file_id, { path: unsafe, body: Buffer.from('%PDF-1.4'), type: 'application/pdf' });
		const before = botApi.requests.length;
		const error = await failure(downloadOperation, req);
		assert.deepEqual(
			[error.statusCode, error.retryable, error.details.code],
			[502, false, 'UNSAFE_FILE_PATH'],
			JSON.stringify(unsafe),
		);
		assert.deepEqual(
			botApi.requests.slice(before),
			['/bot<token>/getFile'],
			`${JSON.stringify(unsafe)}: only getFile was asked, no download`,
		);
	}
	// an ordinary nested path is still downloaded
	const ok = await sentFile('AgADnested', pdfWithText('Nested path'));
	botApi.files.set(ok.file_id, {
		path: 'documents/sub/file_7.pdf',
		body: pdfWithText('Nested path'),
		type: 'application/pdf',
	});
	assert.equal((await run(downloadOperation, ok)).status, 'pending');
});
