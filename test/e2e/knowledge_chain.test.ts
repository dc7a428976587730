/**
 * The knowledge-bot chain in a real n8n 2.4.8: Telegram updates posted to WF10 are queued, WF90 (its
 * Schedule trigger, every 10 s) claims them and runs WF20, then the jobs each step enqueues: WF30
 * (normalize) → WF31 (fetch from a page server on 127.0.0.1) and WF32 (getFile + download from a Bot API
 * stand-in) → WF33 (extract HTML and PDF) → WF40 (chunks). Every row is checked in PostgreSQL. A database failure injected in WF20 ends in ops.errors
 * naming the node, and the job is failed, never lost.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { startBotApi, type BotApiStandIn } from '../helpers/botApiStandIn';
import { startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
import { pdfWithText } from '../helpers/documents';
import { ARTICLE, messageWithLinks, startPageServer, wf31AllowingPages } from '../helpers/pageServer';
import { documentMessage } from '../helpers/updates';
import { JOB_TYPES } from '../../nodes/shared/jobs/registry';

let db: TestDatabase;
let n8n: RunningN8n;
let bot: Awaited<ReturnType<typeof seedBot>>;
let pages: Awaited<ReturnType<typeof startPageServer>>;
let botApi: BotApiStandIn;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');
let base: string;
let fetcherCopy: string | undefined;

beforeAll(async () => {
	db = await setupDatabase();
	bot = await seedBot(db.pool, 'kb_bot', 'kb-Secret_123');
	pages = await startPageServer();
	base = pages.base;
	botApi = await startBotApi();
	const workflows = [
		'WF99e_catch_all.json',
		'WF99_global_err_handler.json',
		'WF10_telegram_ingest.json',
		'WF20_update_processor.json',
		'WF30_url_normalizer.json',
		'WF31_url_fetcher.json',
		'WF32_file_downloader.json',
		'WF33_document_extractor.json',
		'WF40_chunker.json',
		'WF90_job_runner.json',
	];
	// the page server is on 127.0.0.1: WF31 fetches from it only because this copy allowlists it (issue 25)
	const copy = wf31AllowingPages(base);
	fetcherCopy = copy;
	n8n = await startN8n(
		db.url,
		workflows.map((f) => (f === 'WF31_url_fetcher.json' ? copy : path.join(WORKFLOWS, f))),
		['telegram'],
		[harness.telegramCredential(botApi.baseUrl, botApi.token)],
	);
}, 30 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await botApi?.close();
	await pages?.close();
	await db?.drop();
	if (fetcherCopy) fs.rmSync(path.dirname(fetcherCopy), { recursive: true, force: true });
});

async function deliver(update: unknown) {
	const res = await fetch(`${n8n.url}/webhook/telegram?bot=${bot.botKey}`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': bot.secret },
		body: JSON.stringify(update),
	});
	assert.equal(res.status, 200, await res.text());
}

/** Polls `query` until `done(rows)` or the deadline (WF90 runs every 10 s). */
async function waitFor<T extends Record<string, unknown>>(
	query: string,
	params: unknown[],
	done: (rows: T[]) => boolean,
	what: string,
	timeoutMs = 60_000,
): Promise<T[]> {
	const deadline = Date.now() + timeoutMs;
	let rows: T[] = [];
	while (Date.now() < deadline) {
		rows = (await db.pool.query(query, params)).rows as T[];
		if (done(rows)) return rows;
		await new Promise((r) => setTimeout(r, 1000));
	}
	assert.fail(
		`${what}: not reached in ${timeoutMs} ms; last rows ${JSON.stringify(rows).slice(0, 2000)}\n${n8n.logs().slice(-3000)}`,
	);
}

test('WF10 → WF90 → WF20 → WF30 → WF31 / WF32 → WF33 → WF40: a message with two links and a document becomes tg rows, fetched documents and chunks', async () => {
	const message = messageWithLinks(base);
	const doc = documentMessage();
	botApi.files.set(doc.message.document.file_id, {
		path: 'documents/file_7.pdf',
		body: pdfWithText('Meeting notes on vector indexes'),
		type: 'application/octet-stream',
	});
	await deliver(message);
	await deliver(doc);
	await deliver(message); // Telegram re-sends: stored once
	const jobs = await waitFor<{ job_type: string; status: string; n: number }>(
		'SELECT job_type, status, count(*)::int AS n FROM ops.jobs WHERE tenant_id = $1 GROUP BY 1, 2 ORDER BY 1, 2',
		[bot.tenantId],
		(rows) =>
			rows.every((r) => r.status === 'succeeded') &&
			rows.filter((r) => r.job_type === 'document_chunk').reduce((n, r) => n + r.n, 0) === 3,
		'every job of the chain succeeds',
		200_000,
	);
	assert.deepEqual(jobs, [
		{ job_type: JOB_TYPES.document_chunk, status: 'succeeded', n: 3 },
		{ job_type: JOB_TYPES.document_extract, status: 'succeeded', n: 3 },
		{ job_type: JOB_TYPES.file_download, status: 'succeeded', n: 1 },
		{ job_type: JOB_TYPES.telegram_update, status: 'succeeded', n: 2 },
		{ job_type: JOB_TYPES.url_fetch, status: 'succeeded', n: 2 },
		{ job_type: JOB_TYPES.url_normalize, status: 'succeeded', n: 2 },
	]);
	const urls = await db.pool.query('SELECT normalized_url FROM content.urls WHERE tenant_id = $1 ORDER BY 1', [
		bot.tenantId,
	]);
	assert.deepEqual(
		urls.rows.map((r) => r.normalized_url),
		[`${base}/article`, `${base}/paper.pdf`],
	);
	const docs = await db.pool.query(
		`SELECT d.title, d.status, d.visibility, d.chat_id::bigint AS chat, d.token_count > 0 AS counted, left(d.text, 30) AS head,
		        (SELECT count(*) FROM kg.chunks c WHERE c.document_id = d.id)::int AS chunks
		 FROM content.documents d WHERE d.tenant_id = $1 ORDER BY d.doc_type DESC, d.url_id`,
		[bot.tenantId],
	);
	assert.deepEqual(
		docs.rows.map((r) => [r.title, r.status, r.visibility, r.chat, r.counted, r.head]),
		[
			['Retrieval notes', 'done', 'group', String(message.message.chat.id), true, 'Chunking\n\nParagraph 0 explains'],
			[null, 'done', 'group', String(message.message.chat.id), true, 'Dense passage retrieval'],
			[null, 'done', 'group', String(doc.message.chat.id), true, 'Meeting notes on vector indexe'],
		],
	);
	assert.ok(docs.rows[0].chunks >= Math.floor(ARTICLE.length / 2 / 1200), `article chunks: ${docs.rows[0].chunks}`);
	assert.deepEqual([docs.rows[1].chunks, docs.rows[2].chunks], [1, 1]);
	assert.ok(botApi.requests.includes('/file/bot<token>/documents/file_7.pdf'));
	const facts = await db.pool.query(
		`SELECT (SELECT count(*) FROM tg.messages WHERE tenant_id = $1)::int AS messages,
		(SELECT count(*) FROM tg.message_versions v JOIN tg.messages m ON m.id = v.message_fk WHERE m.tenant_id = $1)::int AS versions,
		(SELECT count(*) FROM tg.message_attachments WHERE tenant_id = $1)::int AS attachments,
		(SELECT count(*) FROM tg.files WHERE tenant_id = $1)::int AS files,
		(SELECT count(*) FROM content.url_fetches f JOIN content.urls u ON u.id = f.url_id WHERE u.tenant_id = $1 AND f.status = 'done')::int AS fetches,
		-- an attempt still running, or ended without its run written (migration 026)
		(SELECT count(*) FROM ops.jobs j WHERE j.tenant_id = $1 AND (j.status = 'running' OR (j.run_id IS NOT NULL
		   AND NOT EXISTS (SELECT 1 FROM ops.job_runs r WHERE r.id = j.run_id AND r.status <> 'running'))))::int AS open_runs,
		(SELECT count(*) FROM ops.errors WHERE tenant_id = $1)::int AS errors`,
		[bot.tenantId],
	);
	assert.deepEqual(facts.rows[0], {
		messages: 2,
		versions: 2,
		attachments: 1,
		files: 1,
		fetches: 2,
		open_runs: 0,
		errors: 0,
	});
	const instance = await db.pool.query('SELECT tg_file_path FROM tg.file_instances WHERE file_id = $1', [
		doc.message.document.file_id,
	]);
	assert.equal(instance.rows[0].tg_file_path, 'documents/file_7.pdf');
}, 300_000);

test('WF90 → WF40: a document_chunk job chunks an extracted document once', async () => {
	const text = Array.from({ length: 600 }, (_, i) => `sentence ${i} about retrieval.`).join(' ');
	const { rows } = await db.pool.query(
		`INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status) VALUES ($1, 'url', 'url:e2e', -100, 'group', $2, 'done') RETURNING id`,
		[bot.tenantId, text],
	);
	const documentId = Number(rows[0].id);
	await db.pool.query(
		"INSERT INTO ops.jobs (tenant_id, job_type, payload, dedup_key) VALUES ($1, 'document_chunk', jsonb_build_object('tenant_id', $3::text, 'document_id', $2::bigint), 'e2e-chunk')",
		[bot.tenantId, documentId, bot.tenantId],
	);
	await waitFor(
		"SELECT status FROM ops.jobs WHERE dedup_key = 'e2e-chunk'",
		[],
		(r) => r[0]?.status === 'succeeded',
		'the chunk job succeeds',
	);
	const chunks = await db.pool.query(
		'SELECT count(*)::int AS n, max(char_end)::int AS end FROM kg.chunks WHERE document_id = $1',
		[documentId],
	);
	assert.ok(chunks.rows[0].n >= Math.ceil(text.length / 1200));
	assert.equal(chunks.rows[0].end, text.length);
}, 120_000);

test('a database failure in WF20: ops.errors names the node, the job is failed with its error, nothing half-written', async () => {
	await db.pool.query(
		`CREATE FUNCTION public.e2e_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`,
	);
	await db.pool.query(
		'CREATE TRIGGER e2e_fail BEFORE INSERT ON tg.message_versions FOR EACH ROW EXECUTE FUNCTION public.e2e_fail()',
	);
	try {
		const update = documentMessage(undefined, 99_001);
		await deliver(update);
		const [job] = await waitFor<{
			id: string;
			status: string;
			last_error: Record<string, unknown>;
			correlation_id: string;
		}>(
			"SELECT j.id, j.status, j.last_error, j.correlation_id FROM ops.jobs j JOIN raw.telegram_updates r ON r.id = (j.payload->>'raw_update_id')::bigint WHERE j.job_type = 'telegram_update' AND r.update->'message'->>'message_id' = '99001'",
			[],
			(r) => r.length === 1 && r[0].status !== 'queued' && r[0].status !== 'running',
			'the failing job is finished',
		);
		assert.equal(job.status, 'failed'); // a raised exception is not retryable (500)
		const errors = await db.pool.query(
			'SELECT node, workflow, status_code, job_id, details FROM ops.errors WHERE job_id = $1',
			[job.id],
		);
		assert.equal(errors.rows.length, 1);
		assert.deepEqual([errors.rows[0].node, errors.rows[0].status_code], ['Process Update', 500]);
		assert.equal(errors.rows[0].details.error_context.table, 'tg.messages');
		// WF90 → WF20 → WF99 carried the attempt's claim token: the Error Pipe applied the error to that attempt
		assert.match(
			String(errors.rows[0].details.ctx.job_claim_token),
			/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
		);
		assert.equal(errors.rows[0].details.job_outcome, 'failed');
		const runs = await db.pool.query('SELECT status FROM ops.job_runs WHERE job_id = $1', [job.id]);
		assert.deepEqual(runs.rows, [{ status: 'failed' }]);
		const messages = await db.pool.query('SELECT count(*)::int AS n FROM tg.messages WHERE message_id = 99001');
		assert.equal(messages.rows[0].n, 0, 'the message row was rolled back with the version');
	} finally {
		await db.pool.query('DROP TRIGGER e2e_fail ON tg.message_versions; DROP FUNCTION public.e2e_fail()');
	}
}, 120_000);

test('a database failure injected in each worker (WF30, WF31, WF32, WF33, WF40): ops.errors names the node and table, the job is failed, no half-written row', async () => {
	const q = (sql: string, params: unknown[] = []) => db.pool.query(sql, params);
	const tenant = bot.tenantId;
	const ctx = { chat_id: -100_777, visibility: 'group', dm_owner_user_id: null, message_version_id: null };
	const url = await q(
		"INSERT INTO content.urls (tenant_id, normalized_url, original_url, host) VALUES ($1, $2, $2, '127.0.0.1') RETURNING id",
		[tenant, `${base}/article?fail=1`],
	);
	const blob = await q(
		"INSERT INTO content.blob_objects (sha256, size_bytes, mime_type, bytes) VALUES (repeat('b', 64), 4, 'text/plain', 'text') RETURNING id",
	);
	const pending = await q(
		"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, blob_object_id, mime_type) VALUES ($1, 'url', 'url:fail-extract', -100777, 'group', $2, 'text/plain') RETURNING id",
		[tenant, blob.rows[0].id],
	);
	const done = await q(
		"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status) VALUES ($1, 'url', 'url:fail-chunk', -100777, 'group', 'some text to chunk', 'done') RETURNING id",
		[tenant],
	);
	botApi.files.set('BQAC-fail', {
		path: 'documents/fail.pdf',
		body: pdfWithText('never stored'),
		type: 'application/pdf',
	});
	await q(
		"INSERT INTO tg.files (tenant_id, file_unique_id) VALUES ($1, 'AgADfail'); INSERT INTO tg.file_instances (tenant_id, file_unique_id, file_id) VALUES ($1, 'AgADfail', 'BQAC-fail')".replaceAll(
			'$1',
			`'${tenant}'`,
		),
	);
	const cases = [
		{
			job_type: JOB_TYPES.url_normalize,
			payload: { tenant_id: tenant, url: `${base}/never-stored`, ctx },
			node: 'Normalize URL',
			table: 'content.urls',
		},
		{
			job_type: JOB_TYPES.url_fetch,
			payload: { tenant_id: tenant, url_id: Number(url.rows[0].id), ctx },
			node: 'Fetch URL',
			table: 'content.url_fetches',
		},
		{
			job_type: JOB_TYPES.file_download,
			payload: { tenant_id: tenant, file_id: 'BQAC-fail', file_unique_id: 'AgADfail', ctx },
			node: 'Download File',
			table: 'content.documents',
		},
		{
			job_type: JOB_TYPES.document_extract,
			payload: { tenant_id: tenant, document_id: Number(pending.rows[0].id) },
			node: 'Extract Text',
			table: 'content.documents',
		},
		{
			job_type: JOB_TYPES.document_chunk,
			payload: { tenant_id: tenant, document_id: Number(done.rows[0].id) },
			node: 'Chunk Document',
			table: 'kg.chunks',
		},
	];
	const before = await q(
		'SELECT (SELECT count(*) FROM content.urls)::int AS urls, (SELECT count(*) FROM content.url_fetches)::int AS fetches, (SELECT count(*) FROM content.blob_objects)::int AS blobs, (SELECT count(*) FROM kg.chunks)::int AS chunks',
	);
	await q(
		"CREATE FUNCTION public.e2e_fail_all() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure on %', TG_TABLE_NAME; END $$",
	);
	const triggers = [
		['content.urls', 'INSERT'],
		['content.blob_objects', 'INSERT'],
		['content.documents', 'UPDATE'],
		['kg.chunks', 'INSERT'],
	];
	for (const [table, event] of triggers)
		await q(
			`CREATE TRIGGER e2e_fail_all BEFORE ${event} ON ${table} FOR EACH ROW EXECUTE FUNCTION public.e2e_fail_all()`,
		);
	try {
		const ids: number[] = [];
		for (const c of cases)
			ids.push(
				Number(
					(
						await q(
							'INSERT INTO ops.jobs (tenant_id, job_type, payload, dedup_key) VALUES ($1, $2, $3::jsonb, $4) RETURNING id',
							[tenant, c.job_type, JSON.stringify(c.payload), `e2e-fail-${c.job_type}`],
						)
					).rows[0].id,
				),
			);
		const jobs = await waitFor<{ id: string; job_type: string; status: string }>(
			'SELECT id, job_type, status FROM ops.jobs WHERE id = ANY($1) ORDER BY id',
			[ids],
			(r) => r.every((j) => j.status === 'failed' || j.status === 'dead'),
			'every failing job is finished',
			90_000,
		);
		assert.deepEqual(
			jobs.map((j) => [j.job_type, j.status]),
			cases.map((c) => [c.job_type, 'failed']),
		);
		const errors = await q(
			"SELECT job_id, node, status_code, details->'error_context'->>'table' AS tbl, message FROM ops.errors WHERE job_id = ANY($1) ORDER BY job_id",
			[ids],
		);
		assert.deepEqual(
			errors.rows.map((e) => [Number(e.job_id), e.node, e.status_code, e.tbl]),
			cases.map((c, i) => [ids[i], c.node, 500, c.table]),
		);
		for (const e of errors.rows) assert.match(e.message, /injected failure/);
		const runs = await q(
			`SELECT count(*)::int AS open FROM ops.jobs j WHERE j.id = ANY($1) AND (j.status = 'running'
			   OR NOT EXISTS (SELECT 1 FROM ops.job_runs r WHERE r.id = j.run_id AND r.status <> 'running'))`,
			[ids],
		);
		assert.equal(runs.rows[0].open, 0);
	} finally {
		for (const [table] of triggers) await q(`DROP TRIGGER e2e_fail_all ON ${table}`);
		await q('DROP FUNCTION public.e2e_fail_all()');
	}
	const after = await q(
		'SELECT (SELECT count(*) FROM content.urls)::int AS urls, (SELECT count(*) FROM content.url_fetches)::int AS fetches, (SELECT count(*) FROM content.blob_objects)::int AS blobs, (SELECT count(*) FROM kg.chunks)::int AS chunks',
	);
	assert.deepEqual(after.rows[0], before.rows[0], 'nothing half-written');
	const docs = await q('SELECT status, text FROM content.documents WHERE id = $1', [pending.rows[0].id]);
	assert.deepEqual(docs.rows[0], { status: 'pending', text: null });
}, 180_000);
