/**
 * `npm run demo` — the main job: build, find PostgreSQL (DATABASE_URL, else 127.0.0.1:5432, else an
 * embedded server), migrate a fresh `contracts_demo` database, seed a tenant and a bot, start n8n 2.4.8
 * with this package, import + publish the knowledge-bot chain (WF10, WF20, WF30–WF33, WF40, WF90, WF99),
 * post realistic Telegram updates to the webhook (a message linking two pages, a document, a photo in a
 * DM, an edit, a channel post, my_chat_member, a duplicate, a wrong secret, a malformed body, a poison update with a NUL that is quarantined), let WF90
 * run the jobs, and print per-stage counts. The linked pages come from a small local web server and the
 * files from a local stand-in of the Bot API (no network needed). It also imports M00 + M01 (the MaaS
 * query API, JWT Auth with a secret generated at start) and shows: no token → 401, a token for
 * "demo-user" → 201 + request_id, its status → 200 processing (the demo does not run M10+, so the run
 * stays processing), another user's token → 404. n8n keeps running unless `--once`.
 */
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { startBotApi } from '../test/helpers/botApiStandIn';
import { pdfWithText } from '../test/helpers/documents';
import { bearer, mint } from '../test/helpers/jwt';
import { messageWithLinks, startPageServer } from '../test/helpers/pageServer';
import { channelPost, documentMessage, editedMessage, myChatMember, photoWithCaption, textWithUrls } from '../test/helpers/updates';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres, withDatabase } = require('./lib/postgres');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrate } = require('./lib/migrate');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('./lib/n8n');

const once = process.argv.includes('--once');
const ROOT = path.join(__dirname, '..');
const SECRET = 'demo-Secret_token';
const WORKFLOWS = ['WF99_global_err_handler.json', 'WF10_telegram_ingest.json', 'WF20_update_processor.json', 'WF30_url_normalizer.json', 'WF31_url_fetcher.json', 'WF32_file_downloader.json', 'WF33_document_extractor.json', 'WF40_chunker.json', 'WF90_job_runner.json', 'maas/M00_request_handler.json', 'maas/M01_query_status.json'];
/** The JWT Auth secret of M00/M01's webhooks for this demo run (never printed). */
const JWT_SECRET = randomBytes(32).toString('base64url');
const STAGE: Record<string, string> = {
	telegram_update: 'WF20 update processor',
	url_normalize: 'WF30 URL normalizer',
	url_fetch: 'WF31 URL fetcher',
	file_download: 'WF32 file downloader',
	document_extract: 'WF33 extractor',
	document_chunk: 'WF40 chunker',
	document_embed: 'WF41 embedder',
	qa_answer: 'WF51 answerer',
};

async function main() {
	if (spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) throw new Error('build failed');
	const server = await resolvePostgres({ log: console.log });
	console.log(`PostgreSQL: ${server.source}`);
	const admin = new Client({ connectionString: withDatabase(server.url, 'postgres') });
	await admin.connect();
	await admin.query('DROP DATABASE IF EXISTS contracts_demo WITH (FORCE)');
	await admin.query('CREATE DATABASE contracts_demo');
	await admin.end();
	const url = withDatabase(server.url, 'contracts_demo');
	const { applied, missing } = await migrate(url);
	console.log(`migrated contracts_demo: ${applied.join(', ')}`);
	for (const m of missing) console.log(`  not applied here: ${m.reason}`);
	const db = new Client({ connectionString: url });
	await db.connect();
	await db.query(
		`WITH t AS (INSERT INTO core.tenants (name) VALUES ('Demo tenant') RETURNING tenant_id)
		 INSERT INTO core.bots (tenant_id, bot_key, webhook_secret, username) SELECT tenant_id, 'demo_bot', $1, 'demo_kb_bot' FROM t`,
		[SECRET],
	);

	const pages = await startPageServer();
	const botApi = await startBotApi();
	const instance = harness.createInstance({ tarball: harness.packPackage(), bin: harness.ensureN8n({ log: console.log }), log: console.log });
	await instance.importCredentials([harness.postgresCredential(url), harness.telegramCredential(botApi.baseUrl, botApi.token), harness.jwtCredential(JWT_SECRET)]);
	await instance.importAndPublish(WORKFLOWS.map((f) => path.join(ROOT, 'workflows-json', f)));
	const n8nUrl = await instance.start();
	await instance.waitForWebhooks(['telegram', 'api/query']);
	console.log(`n8n 2.4.8 running at ${n8nUrl} (user folder ${instance.folder})\n`);

	const hook = `${n8nUrl}/webhook/telegram?bot=demo_bot`;
	const text = messageWithLinks(pages.base);
	const doc = documentMessage();
	botApi.files.set(doc.message.document.file_id, { path: 'documents/notes.pdf', body: pdfWithText('Meeting notes on vector indexes'), type: 'application/pdf' });
	// offline: the photo's caption and the edit link to local pages only; the photo is served by the stand-in
	const photo = photoWithCaption();
	photo.message.caption = 'whiteboard photo';
	photo.message.caption_entities = [];
	botApi.files.set(photo.message.photo[1].file_id, { path: 'photos/whiteboard.jpg', body: Buffer.from([0xff, 0xd8, 0xff, 0xe0]), type: 'image/jpeg' });
	const edit = editedMessage();
	edit.edited_message.entities = [{ type: 'text_link', offset: 4, length: 8, url: `${pages.base}/article` }];
	// an update PostgreSQL cannot store (jsonb refuses U+0000): kept byte for byte in raw.telegram_quarantine, answered 200
	const poison = textWithUrls();
	poison.message.text = 'null byte \u0000 here';
	const sends: Array<[string, unknown, string | null]> = [
		['message linking two pages', text, SECRET],
		['PDF document', doc, SECRET],
		['photo in a DM', photo, SECRET],
		['edited message with a link', edit, SECRET],
		['channel post', channelPost(), SECRET],
		['my_chat_member', myChatMember(), SECRET],
		['duplicate of the first', text, SECRET],
		['wrong secret', textWithUrls(), 'not-the-secret'],
		['malformed body', { update_id: 'x', message: {} }, SECRET],
		['poison: NUL in a text', poison, SECRET],
		['the poison again', poison, SECRET],
	];
	for (const [label, body, secret] of sends) {
		const res = await fetch(hook, {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...(secret ? { 'X-Telegram-Bot-Api-Secret-Token': secret } : {}) },
			body: JSON.stringify(body),
		});
		console.log(`${label.padEnd(30)} → HTTP ${res.status} ${await res.text()}`);
	}
	console.log('\nWF90 (every 10 s) runs the jobs: WF20 → WF30 → WF31 / WF32 → WF33 → WF40 …');
	const deadline = Date.now() + 150_000;
	while (Date.now() < deadline) {
		const { rows } = await db.query("SELECT count(*)::int AS open FROM ops.jobs WHERE status IN ('queued', 'running') AND job_type <> 'qa_answer'");
		if (rows[0].open === 0) break;
		await new Promise((r) => setTimeout(r, 2000));
	}
	console.log('\nMaaS query API (M00 + M01, JWT Auth; token minted with the demo secret):');
	const query = (auth: string | null) =>
		fetch(`${n8nUrl}/webhook/api/query`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...(auth ? bearer(auth) : {}) },
			body: JSON.stringify({ query: 'What is compare-and-swap?' }),
		});
	const status = (id: string, auth: string) => fetch(`${n8nUrl}/webhook/api/query/status?id=${encodeURIComponent(id)}`, { headers: bearer(auth) });
	const line = (label: string, res: Response, body: string) => console.log(`  ${label.padEnd(40)} → HTTP ${res.status} ${body.slice(0, 160)}`);
	const anonymous = await query(null);
	line('POST /api/query without a token', anonymous, await anonymous.text());
	const demoToken = mint('demo-user', { secret: JWT_SECRET, expiresIn: '1h' });
	const created = await query(demoToken);
	const createdText = await created.text();
	line('POST /api/query as demo-user', created, createdText);
	const requestId = String((JSON.parse(createdText) as { request_id?: unknown }).request_id ?? '');
	const own = await status(requestId, demoToken);
	line('GET status as demo-user', own, `${await own.text()} (stays processing: the demo does not run M10+)`);
	const other = await status(requestId, mint('other-user', { secret: JWT_SECRET, expiresIn: '1h' }));
	const otherText = await other.text();
	line('GET status as other-user', other, other.ok ? otherText : `${(JSON.parse(otherText) as { error?: { message?: string } }).error?.message ?? otherText}`);

	const stages = await db.query(`SELECT job_type, count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
		count(*) FILTER (WHERE status IN ('failed', 'dead'))::int AS failed, count(*) FILTER (WHERE status IN ('queued', 'running'))::int AS waiting
		FROM ops.jobs GROUP BY 1 ORDER BY min(id)`);
	console.log('\nper stage (ops.jobs):            succeeded  failed  waiting');
	for (const r of stages.rows) console.log(`  ${String(STAGE[r.job_type] ?? r.job_type).padEnd(30)} ${String(r.succeeded).padStart(9)} ${String(r.failed).padStart(7)} ${String(r.waiting).padStart(8)}`);
	const counts = await db.query(`SELECT 'raw.telegram_updates' AS t, count(*) FROM raw.telegram_updates
		UNION ALL SELECT 'tg.messages', count(*) FROM tg.messages
		UNION ALL SELECT 'tg.message_versions', count(*) FROM tg.message_versions
		UNION ALL SELECT 'tg.files', count(*) FROM tg.files
		UNION ALL SELECT 'tg.chat_member_events', count(*) FROM tg.chat_member_events
		UNION ALL SELECT 'content.urls', count(*) FROM content.urls
		UNION ALL SELECT 'content.documents (done)', count(*) FROM content.documents WHERE status = 'done'
		UNION ALL SELECT 'kg.chunks', count(*) FROM kg.chunks
		UNION ALL SELECT 'raw.telegram_quarantine', count(*) FROM raw.telegram_quarantine
		UNION ALL SELECT 'ops.errors', count(*) FROM ops.errors`);
	console.log('\nrows per table:');
	for (const r of counts.rows) console.log(`  ${r.t.padEnd(26)} ${r.count}`);
	const docs = await db.query(`SELECT d.id, d.doc_type, coalesce(d.title, u.normalized_url, d.source_key) AS name, d.status, d.token_count,
		(SELECT count(*) FROM kg.chunks c WHERE c.document_id = d.id)::int AS chunks FROM content.documents d LEFT JOIN content.urls u ON u.id = d.url_id ORDER BY d.id`);
	console.log('\ncontent.documents:');
	for (const d of docs.rows) console.log(`  #${d.id} ${d.doc_type} ${d.name} — ${d.status}, ${d.token_count ?? '?'} tokens, ${d.chunks} chunks`);
	const errors = await db.query(`SELECT id, status_code, kind, node, message, correlation_id FROM ops.errors ORDER BY id`);
	console.log('\nops.errors:');
	for (const e of errors.rows) console.log(`  #${e.id} ${e.status_code} ${e.kind} [${e.node}] ${e.message} correlation ${e.correlation_id}`);
	await db.end();

	if (once) {
		await instance.stop();
		instance.remove();
		await pages.close();
		await botApi.close();
		await server.stop();
		return;
	}
	console.log(`\nn8n keeps running at ${n8nUrl} — open it to see the workflows on the canvas. Ctrl+C stops it.`);
	const stop = async () => {
		await instance.stop();
		await server.stop();
		process.exit(0);
	};
	process.on('SIGINT', stop);
	process.on('SIGTERM', stop);
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
