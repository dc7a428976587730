/**
 * `npm run demo` — the main job: build, find PostgreSQL (DATABASE_URL, else 127.0.0.1:5432, else an
 * embedded server), migrate a fresh `contracts_demo` database, seed a tenant and a bot, start n8n (2.4.8, or CONTRACTS_N8N_VERSION on CONTRACTS_N8N_NODE)
 * with this package, import + publish the knowledge-bot chain (WF10, WF20, WF30–WF33, WF40, WF90, WF99),
 * post realistic Telegram updates to the webhook (a message linking two pages, a document, a photo in a
 * DM, an edit, a channel post, my_chat_member, a duplicate, a wrong secret, a malformed body, a poison update with a NUL that is quarantined), let WF90
 * run the jobs, and print per-stage counts. The linked pages come from a small local web server and the
 * files from a local stand-in of the Bot API (no network needed). It also imports the MaaS pipeline: M00 + M01
 * (the query API, JWT Auth with a secret generated at start) and M10–M16 (Orchestrator, Analyzer, Assembler,
 * Final Responder, Archivist, Sweep, Dispatch; the model stand-in answers their prompts as
 * test/helpers/maasModel.ts `normalModel` does), and shows: no token → 401, a token for "demo-user" → 201 +
 * request_id, its status, another user's token → 404.
 * Then the bot answers: the chunks are embedded by WF41 (embeddings from a local stand-in that hashes words,
 * so a question sharing a document's words finds that document nearest), and a member asks twice — in a DM
 * and as an @mention in the group — as Telegram updates through WF10; WF90 → WF20 → qa_answer → WF51
 * retrieves the chunks the readers of the reply may see (exact route without pgvector, HNSW with it), a
 * local model stand-in answers from source [1] (extractiveAnswer.ts), the reply goes out via the Bot API
 * stand-in, and the demo prints the question, the reply as sent, its citations and the audit.qa_* rows.
 * Then seed 001 step 4, variant B: it prints the push endpoint of M17 (Pipeline Push, ws://127.0.0.1:5681/api/ws,
 * another free port when 5681 is taken) and the metrics scrape URL (GET /webhook/metrics, M18, imported when
 * the checkout has it); a WebSocket client, authenticated as demo-user before the query is posted, subscribes to
 * the demo query's run right after the 201 and receives the answer the pipeline (M10 → M16 → M11 → M12 → M13)
 * wrote; then the demo prints the lines of GET /webhook/metrics that count that run (completed runs, Generate
 * calls per module, LLM requests per model).
 * Every secret (bot token, API keys, JWT secret, push secret, scrape token) is random per run and never printed: the demo checks its
 * own output and n8n's log for them before it ends. n8n keeps running unless `--once`.
 *
 * For a newcomer: n8n's owner account is the demo's OWNER (email DEMO_OWNER_EMAIL or demo@example.com, password
 * DEMO_OWNER_PASSWORD or generated per run): the harness creates it when it publishes the workflows after n8n
 * starts (POST /rest/owner/setup, then POST /rest/workflows/:id/activate per workflow: one n8n start, no
 * publish:workflow process per workflow; issue 27 §3), and the demo prints the login, so the editor opens on a
 * login page instead of the owner form (DEMO_OWNER_* that n8n would refuse stop the demo before n8n starts, exit 2).
 * At the end it prints how an outside client calls this run (issue 27 §3): a JWT for the query API, a push
 * token for M17's WebSocket and M18's scrape token, a curl example each, and "demo ready in N s".
 * Each n8n process writes its log (and the output of the import/publish commands) to a file printed at start:
 * <tmp>/n8n-contracts-demo-<random>/n8n.log, a new folder per run, so two demos on one machine never share a
 * log (queue mode: n8n-main.log, n8n-worker-<i>.log); or in DEMO_LOG_DIR, whose files the next run overwrites.
 * The log files are kept when the demo ends. Ctrl-C, SIGTERM or SIGHUP at any point
 * stops n8n (main and workers) and removes the demo's n8n user folder(s), the packed package and the stand-ins,
 * as `--once` does at its end (scripts/lib/cleanupOnSignals.js; exit code 130/143/129 mid-run, 0 once the demo
 * has finished); a second Ctrl-C exits at once, naming what was left. DEMO_DATABASE names the demo's database
 * (default contracts_demo, dropped and created again each run; kept at exit).
 *
 * `npm run demo -- --queue [--workers N]` runs the same in n8n queue mode (scripts/lib/n8nQueue.js): one
 * main (webhooks, WF90's schedules) and N `n8n worker` processes (default 2, at most 8) on Redis at
 * REDIS_HOST:REDIS_PORT (127.0.0.1:6379), n8n's own database in a scratch PostgreSQL database; WF10 is
 * imported with its successful executions saved (it ships with saving off) so every execution has a record.
 * At the end it prints which worker ran what: the executions each worker started (its log: "Worker started
 * execution <id>") by workflow (n8n's execution_entity), and the jobs each worker's WF90 runs finished by type
 * (ops.job_runs.worker is WF90's "wf90-<execution id>"). Without Redis it says so and exits with code 2.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { detectVectorRoute } from '../nodes/KnowledgeBot/actions/vectorRoute';
import { JOB_REGISTRY, JOB_STATUS, JOB_TYPE_LIST, JOB_TYPES } from '../nodes/shared/jobs';
import { startBotApi } from '../test/helpers/botApiStandIn';
import { pdfWithText } from '../test/helpers/documents';
import { startEmbeddings } from '../test/helpers/embeddingStandIn';
import { demoModel } from '../test/helpers/demoModel';
import { ModelStandIn } from '../test/helpers/modelStandIn';
import { freePort, m17Copy, pushCredential } from '../test/helpers/push';
import { PushClient } from '../test/helpers/pushClient';
import { mintPushToken } from '../nodes/PipelinePush/transport/token';
import { bearer, mint } from '../test/helpers/jwt';
import { messageWithLinks, startPageServer, wf31AllowingPages } from '../test/helpers/pageServer';
import {
	channelPost,
	documentMessage,
	editedMessage,
	myChatMember,
	newUpdateId,
	photoWithCaption,
	textWithUrls,
} from '../test/helpers/updates';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres, withDatabase } = require('./lib/postgres');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrate } = require('./lib/migrate');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('./lib/n8n');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const queue = require('./lib/n8nQueue');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { createCleanup } = require('./lib/cleanupOnSignals');

/** When the demo started (for "demo ready in N s"). */
const DEMO_STARTED = Date.now();
const once = process.argv.includes('--once');
/** `--queue [--workers N]`: queue mode with N workers (null: the single-process demo). */
const queueWorkers = queueArgument(process.argv.slice(2));
const REDIS = { host: process.env.REDIS_HOST || '127.0.0.1', port: Number(process.env.REDIS_PORT || 6379) };
/**
 * What the demo undoes, newest first, at its end with --once, on Ctrl-C / SIGTERM / SIGHUP and when it
 * fails: stop n8n (main and workers in queue mode) and remove its user folder(s), the packed package, the
 * stand-ins, an embedded PostgreSQL. A second Ctrl-C exits at once (n8n killed, folders left, named).
 * n8n's log files and the contracts_demo database are kept.
 */
const cleanup = createCleanup({ log: (line: string) => console.log(line) });
cleanup.install();
/** The demo's database (dropped and created again each run); DEMO_DATABASE names another one. */
const DATABASE = process.env.DEMO_DATABASE || 'contracts_demo';
/**
 * Where each n8n process's log goes (kept at exit): DEMO_LOG_DIR (overwritten by the next run), else a new
 * <tmp>/n8n-contracts-demo-<random> folder for this run.
 */
function runLogDir(): string {
	return process.env.DEMO_LOG_DIR || fs.mkdtempSync(path.join(os.tmpdir(), 'n8n-contracts-demo-'));
}
/** The n8n owner account the demo sets up (a demo account: password generated per run unless DEMO_OWNER_PASSWORD). */
const OWNER = {
	email: process.env.DEMO_OWNER_EMAIL || 'demo@example.com',
	firstName: 'Demo',
	lastName: 'Owner',
	// n8n's rules: 8 to 64 characters, a digit and an uppercase letter
	password: process.env.DEMO_OWNER_PASSWORD || `Demo-${randomBytes(12).toString('base64url')}-7`,
};
const ROOT = path.join(__dirname, '..');
const SECRET = 'demo-Secret_token';
const WORKFLOWS = [
	'WF99e_catch_all.json',
	'WF99_global_err_handler.json',
	'WF10_telegram_ingest.json',
	'WF20_update_processor.json',
	'WF30_url_normalizer.json',
	'WF31_url_fetcher.json',
	'WF32_file_downloader.json',
	'WF33_document_extractor.json',
	'WF40_chunker.json',
	'WF41_embedder.json',
	'WF50_qa_session_upserter.json',
	'WF51_answerer.json',
	'WF90_job_runner.json',
	'maas/M00_request_handler.json',
	'maas/M01_query_status.json',
	// the MaaS pipeline behind POST /api/query (sub-workflows are published too: n8n runs only published ones)
	'maas/M10_orchestrator.json',
	'maas/M11_analyzer.json',
	'maas/M12_assembler.json',
	'maas/M13_final_responder.json',
	'maas/M14_archivist.json',
	'maas/M15_sweep.json',
	'maas/M16_dispatch.json',
];
/** The JWT Auth secret of M00/M01's webhooks for this demo run (never printed). */
const JWT_SECRET = randomBytes(32).toString('base64url');
/** The stand-ins' bot token and API keys, random per run (never printed; the demo checks). */
const BOT_TOKEN = `${1_000_000 + randomBytes(3).readUIntBE(0, 3)}:${randomBytes(24).toString('base64url')}`;
const EMBEDDINGS_KEY = `demo-emb-${randomBytes(16).toString('hex')}`;
const LLM_KEY = `sk-demo-${randomBytes(16).toString('hex')}`;
/** The Contracts Push API secret of M17 (Pipeline Push tokens) for this demo run (never printed). */
const PUSH_SECRET = randomBytes(32).toString('base64url');
/** The bearer token M18's Header Auth credential (metricsHeaderAuth01) expects, as Prometheus would send it (never printed). */
const SCRAPE_TOKEN = randomBytes(24).toString('base64url');
const SECRETS = [SECRET, JWT_SECRET, BOT_TOKEN, EMBEDDINGS_KEY, LLM_KEY, PUSH_SECRET, SCRAPE_TOKEN];
/** M18 (Prometheus scrape, GET /webhook/metrics), imported when this checkout ships it. */
const METRICS_WORKFLOW = 'maas/M18_metrics.json';
/** Everything the demo prints, to check it for secrets at the end. */
const printed: string[] = [];
const print = console.log.bind(console);
console.log = (...args: unknown[]) => {
	printed.push(args.map(String).join(' '));
	print(...args);
};
const GROUP = { id: -1001234567890, title: 'Research group', type: 'supergroup' };
const ALICE = { id: 111222333, is_bot: false, first_name: 'Alice', username: 'alice', language_code: 'en' };
const BOT_USERNAME = 'demo_kb_bot';
/** Each job type's stage label: its worker workflow, from the job-type registry. */
const STAGE: Record<string, string> = Object.fromEntries(
	JOB_TYPE_LIST.map((t) => [t, `${JOB_REGISTRY[t].workflow_id.slice(0, 4)} ${t}`]),
);

/**
 * Why DEMO_OWNER_EMAIL / DEMO_OWNER_PASSWORD cannot be n8n's owner (n8n's rules: an email address; a password of
 * 8 to 64 characters with a digit and an upper-case letter), or undefined when they can (or are unset). The
 * harness publishes the workflows as that owner, so the demo stops before n8n starts rather than after.
 */
function ownerSettingsProblem(): string | undefined {
	if (process.env.DEMO_OWNER_EMAIL !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(OWNER.email))
		return 'DEMO_OWNER_EMAIL is not an email address';
	const password = process.env.DEMO_OWNER_PASSWORD;
	if (
		password !== undefined &&
		!(password.length >= 8 && password.length <= 64 && /\d/.test(password) && /[A-Z]/.test(password))
	)
		return 'DEMO_OWNER_PASSWORD must have 8 to 64 characters, a digit and an upper-case letter (n8n refuses it otherwise)';
	return undefined;
}

async function main() {
	const ownerProblem = ownerSettingsProblem();
	if (ownerProblem) {
		console.error(`npm run demo: ${ownerProblem}; unset it to get a generated one.`);
		process.exitCode = 2;
		return;
	}
	if (queueWorkers !== null) {
		const reason = await queue.redisUnavailable(REDIS);
		if (reason) {
			console.error(
				`npm run demo -- --queue needs Redis: ${reason}.\nStart Redis (e.g. \`redis-server\`, or \`docker run -p 6379:6379 redis:7\`) or point REDIS_HOST / REDIS_PORT at one; \`npm run demo\` without --queue needs no Redis.`,
			);
			process.exitCode = 2;
			return;
		}
	}
	const LOG_DIR = runLogDir();
	const logFiles =
		queueWorkers === null
			? [path.join(LOG_DIR, 'n8n.log')]
			: ['main', ...Array.from({ length: queueWorkers }, (_, i) => `worker-${i + 1}`)].map((role) =>
					path.join(LOG_DIR, `n8n-${role}.log`),
				);
	console.log(`n8n's log: ${logFiles.join(', ')} (written as n8n runs, kept when the demo ends)`);
	if (spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0)
		throw new Error('build failed');
	interrupted();
	const server = await resolvePostgres({ log: console.log });
	if (server.source === 'embedded') cleanup.add('stop the embedded PostgreSQL, remove its folder', () => server.stop());
	console.log(`PostgreSQL: ${server.source}`);
	const admin = new Client({ connectionString: withDatabase(server.url, 'postgres') });
	await admin.connect();
	await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
	await admin.query(`CREATE DATABASE ${DATABASE}`);
	await admin.end();
	const url = withDatabase(server.url, DATABASE);
	const { applied, missing } = await migrate(url);
	console.log(`migrated ${DATABASE}: ${applied.join(', ')}`);
	for (const m of missing) console.log(`  not applied here: ${m.reason}`);
	const db = new Client({ connectionString: url });
	await db.connect();
	const dbClosed = cleanup.add('close the demo database connection', () => db.end().catch(() => undefined));
	await db.query(
		`WITH t AS (INSERT INTO core.tenants (name) VALUES ('Demo tenant') RETURNING tenant_id)
		 INSERT INTO core.bots (tenant_id, bot_key, webhook_secret, username) SELECT tenant_id, 'demo_bot', $1, $2 FROM t`,
		[SECRET, BOT_USERNAME],
	);
	// what an admin sets up for the bot to answer: Alice may ask, the group is registered, an embedding model is active
	await db.query(
		`WITH t AS (SELECT tenant_id FROM core.tenants WHERE name = 'Demo tenant'), u AS (INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) SELECT tenant_id, $1, 'user' FROM t)
		 INSERT INTO core.tenant_chats (tenant_id, chat_id, chat_type, title) SELECT tenant_id, $2, $3, $4 FROM t`,
		[ALICE.id, GROUP.id, GROUP.type, GROUP.title],
	);
	await db.query(
		"INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536)",
	);
	const route = await detectVectorRoute(db);
	console.log(
		`vector route: ${route.route} (${route.table}${route.pgvector_version ? `, pgvector ${route.pgvector_version}` : ', no pgvector'})`,
	);

	const pages = await startPageServer();
	cleanup.add('stop the page server', () => pages.close());
	const botApi = await startBotApi(BOT_TOKEN);
	cleanup.add('stop the Bot API stand-in', () => botApi.close());
	const embeddings = await startEmbeddings();
	cleanup.add('stop the embeddings stand-in', () => embeddings.close());
	const model = new ModelStandIn();
	// WF51's questions get the extractive answer, the MaaS steps (M11–M14) maasModel.ts's normalModel
	model.respond = demoModel;
	await model.up();
	cleanup.add('stop the model stand-in', () => model.down());
	interrupted();
	const tarball = harness.packPackage();
	// removed as soon as n8n's user folder has it installed (below); this step covers a stop before that
	cleanup.add(`remove the packed package ${path.dirname(tarball)}`, () => harness.removePackage(tarball));
	const bin = harness.ensureN8n({ log: console.log });
	interrupted();
	// queue mode: the cluster's main takes the single instance's place for imports, webhooks and the log
	let cluster: Awaited<ReturnType<typeof queue.createQueueCluster>> | null = null;
	if (queueWorkers !== null) {
		// registered before the cluster is ready (it creates n8n's database): a signal meanwhile still disposes of it
		const pending = queue.createQueueCluster({
			tarball,
			bin,
			serverUrl: server.url,
			workers: queueWorkers,
			concurrency: 10,
			redis: REDIS,
			log: console.log,
			owner: OWNER,
		});
		cleanup.add(
			`stop n8n (main + ${queueWorkers} workers), drop its database, remove its user folders`,
			async () => (await pending.catch(() => null))?.dispose(),
			{ force: () => cluster?.killNow() },
		);
		cluster = await pending;
		cluster.logTo(LOG_DIR);
	}
	// the harness publishes the workflows as n8n's owner: the demo's OWNER, so n8n has one account, the printed one
	const instance = cluster ? cluster.main : harness.createInstance({ tarball, bin, log: console.log, owner: OWNER });
	harness.removePackage(tarball);
	console.log(
		`n8n user folder${cluster ? 's' : ''}: ${cluster ? cluster.folders.join(', ') : instance.folder} (removed when the demo ends or is stopped)`,
	);
	if (!cluster) {
		instance.logTo(logFiles[0]);
		cleanup.add(`stop n8n, remove its user folder ${instance.folder}`, () => instance.dispose(), {
			force: () => instance.killNow(),
		});
	}
	interrupted();
	await instance.importCredentials([
		harness.postgresCredential(url),
		harness.telegramCredential(botApi.baseUrl, botApi.token),
		harness.jwtCredential(JWT_SECRET),
		pushCredential(PUSH_SECRET),
		{
			id: 'metricsHeaderAuth01',
			name: 'Contracts Metrics Scrape',
			type: 'httpHeaderAuth',
			data: { name: 'Authorization', value: `Bearer ${SCRAPE_TOKEN}` },
		},
		// the shipped WF41/WF51 reference these ids; point baseUrl/apiKey (and model) at a real endpoint instead (README)
		{
			id: 'embContracts01',
			name: 'Contracts Embeddings',
			type: 'contractsEmbeddingsApi',
			data: { api: 'gemini', baseUrl: embeddings.baseUrl, apiKey: EMBEDDINGS_KEY },
		},
		{
			id: 'llmContracts01',
			name: 'Contracts LLM',
			type: 'contractsLlmApi',
			data: { api: 'openai', baseUrl: model.url, apiKey: LLM_KEY, model: 'demo-extractive' },
		},
	]);
	// M17 (Pipeline Push) on 5681 as shipped, or on a free port when 5681 is taken
	const pushPort = (await portFree(5681)) ? 5681 : await freePort();
	const pushFile = m17Copy(pushPort);
	cleanup.add('remove the M17 copy', () => fs.rmSync(path.dirname(pushFile), { recursive: true, force: true }));
	const metrics = fs.existsSync(path.join(ROOT, 'workflows-json', METRICS_WORKFLOW));
	const files = [...WORKFLOWS, ...(metrics ? [METRICS_WORKFLOW] : [])]
		.map((f) => path.join(ROOT, 'workflows-json', f))
		.concat(pushFile);
	const savingCopy = cluster ? wf10SavingCopy() : null;
	// the page server is on 127.0.0.1, which the shipped WF31 refuses: this copy allowlists it (issue 25)
	const fetcherCopy = wf31AllowingPages(pages.base);
	cleanup.add('remove the WF31 copy', () => fs.rmSync(path.dirname(fetcherCopy), { recursive: true, force: true }));
	const importStarted = Date.now();
	await instance.importAndPublish(
		files
			.map((f) => (savingCopy && path.basename(f) === 'WF10_telegram_ingest.json' ? savingCopy : f))
			.map((f) => (path.basename(f) === 'WF31_url_fetcher.json' ? fetcherCopy : f)),
	);
	if (savingCopy) fs.rmSync(path.dirname(savingCopy), { recursive: true, force: true });
	console.log(
		`imported ${files.length} workflows in ${((Date.now() - importStarted) / 1000).toFixed(0)} s (one n8n import:workflow; n8n's REST API publishes them once n8n is up)`,
	);
	interrupted();
	const startStarted = Date.now();
	const n8nUrl = cluster ? await cluster.start() : await instance.start();
	console.log(
		`n8n up with the ${files.length} workflows published in ${((Date.now() - startStarted) / 1000).toFixed(0)} s`,
	);
	const login = await setUpOwner(instance);
	await instance.waitForWebhooks(['telegram', 'api/query']);
	if (cluster) {
		console.log(
			`n8n ${harness.N8N_VERSION} (Node ${harness.nodeVersionOf(instance.node)}) in queue mode: main at ${n8nUrl} + ${cluster.workers.length} worker(s) (${cluster.workers.map((w: { role: string }) => w.role).join(', ')}), Redis ${REDIS.host}:${REDIS.port} (Bull prefix ${cluster.prefix}), n8n's database ${new URL(cluster.n8nDatabaseUrl).pathname.slice(1)}, user folders ${cluster.folders.join(', ')}`,
		);
	} else {
		console.log(
			`n8n ${harness.N8N_VERSION} (Node ${harness.nodeVersionOf(instance.node)}) running at ${n8nUrl} (user folder ${instance.folder})`,
		);
	}
	console.log(`${login}\n`);
	console.log(`${demoJwtSecretFile(instance.folder)}\n`);

	const hook = `${n8nUrl}/webhook/telegram?bot=demo_bot`;
	const text = messageWithLinks(pages.base);
	const doc = documentMessage();
	botApi.files.set(doc.message.document.file_id, {
		path: 'documents/notes.pdf',
		body: pdfWithText('Meeting notes on vector indexes'),
		type: 'application/pdf',
	});
	// offline: the photo's caption and the edit link to local pages only; the photo is served by the stand-in
	const photo = photoWithCaption();
	photo.message.caption = 'whiteboard photo';
	photo.message.caption_entities = [];
	botApi.files.set(photo.message.photo[1].file_id, {
		path: 'photos/whiteboard.jpg',
		body: Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
		type: 'image/jpeg',
	});
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
		['chat_member: Alice joins', aliceJoins(), SECRET],
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
	console.log('\nWF90 (every 10 s) runs the jobs: WF20 → WF30 → WF31 / WF32 → WF33 → WF40 → WF41 …');
	const deadline = Date.now() + 150_000;
	while (Date.now() < deadline) {
		const { rows } = await db.query(
			'SELECT count(*)::int AS open FROM ops.jobs WHERE status IN ($1, $2) AND job_type <> $3',
			[JOB_STATUS.queued, JOB_STATUS.running, JOB_TYPES.qa_answer],
		);
		if (rows[0].open === 0) break;
		await new Promise((r) => setTimeout(r, 2000));
	}
	console.log(
		'\nMaaS query API (M00 + M01, JWT Auth; token minted with the demo secret) and the pipeline behind it (M10–M16):',
	);
	const query = (auth: string | null) =>
		fetch(`${n8nUrl}/webhook/api/query`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...(auth ? bearer(auth) : {}) },
			body: JSON.stringify({ query: 'What is compare-and-swap?' }),
		});
	const status = (id: string, auth: string) =>
		fetch(`${n8nUrl}/webhook/api/query/status?id=${encodeURIComponent(id)}`, { headers: bearer(auth) });
	// the path form: /webhook/<webhookId of M01's "Webhook (Path ID)" node>/api/query/<request_id>/status
	const pathHook = pathFormWebhookId();
	const statusByPath = (id: string, auth: string) =>
		fetch(`${n8nUrl}/webhook/${pathHook}/api/query/${encodeURIComponent(id)}/status`, { headers: bearer(auth) });
	const line = (label: string, res: Response, body: string) =>
		console.log(`  ${label.padEnd(40)} → HTTP ${res.status} ${body.slice(0, 160)}`);
	const anonymous = await query(null);
	line('POST /api/query without a token', anonymous, await anonymous.text());
	// the ws client is authenticated before the query is posted, so it subscribes while the run is in flight
	const push = await openPush(n8nUrl, pushPort, metrics);
	try {
		const demoToken = mint('demo-user', { secret: JWT_SECRET, expiresIn: '1h' });
		const created = await query(demoToken);
		const postedAt = Date.now();
		const createdText = await created.text();
		line('POST /api/query as demo-user', created, createdText);
		const requestId = String((JSON.parse(createdText) as { request_id?: unknown }).request_id ?? '');
		if (push) await subscribe(db, push, requestId);
		const own = await status(requestId, demoToken);
		line('GET status as demo-user', own, await own.text());
		const ownByPath = await statusByPath(requestId, demoToken);
		line('GET status (path form) as demo-user', ownByPath, await ownByPath.text());
		const other = await status(requestId, mint('other-user', { secret: JWT_SECRET, expiresIn: '1h' }));
		const otherText = await other.text();
		line(
			'GET status as other-user',
			other,
			other.ok ? otherText : `${(JSON.parse(otherText) as { message?: string }).message ?? otherText}`,
		);
		if (push) await showPushed(db, push, requestId, postedAt);
	} finally {
		push?.close();
	}
	interrupted();
	if (metrics) await showMetrics(n8nUrl);
	interrupted();

	const stages = await db.query(`SELECT job_type, count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
		count(*) FILTER (WHERE status IN ('failed', 'dead'))::int AS failed, count(*) FILTER (WHERE status IN ('queued', 'running'))::int AS waiting
		FROM ops.jobs GROUP BY 1 ORDER BY min(id)`);
	console.log('\nper stage (ops.jobs):            succeeded  failed  waiting');
	for (const r of stages.rows)
		console.log(
			`  ${String(STAGE[r.job_type] ?? r.job_type).padEnd(30)} ${String(r.succeeded).padStart(9)} ${String(r.failed).padStart(7)} ${String(r.waiting).padStart(8)}`,
		);
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
	const docs =
		await db.query(`SELECT d.id, d.doc_type, coalesce(d.title, u.normalized_url, d.source_key) AS name, d.status, d.token_count,
		(SELECT count(*) FROM kg.chunks c WHERE c.document_id = d.id)::int AS chunks FROM content.documents d LEFT JOIN content.urls u ON u.id = d.url_id ORDER BY d.id`);
	console.log('\ncontent.documents:');
	for (const d of docs.rows)
		console.log(`  #${d.id} ${d.doc_type} ${d.name} — ${d.status}, ${d.token_count ?? '?'} tokens, ${d.chunks} chunks`);
	const errors = await db.query(
		`SELECT id, status_code, kind, node, message, correlation_id FROM ops.errors ORDER BY id`,
	);
	console.log('\nops.errors:');
	for (const e of errors.rows)
		console.log(`  #${e.id} ${e.status_code} ${e.kind} [${e.node}] ${e.message} correlation ${e.correlation_id}`);

	await askTheBot(db, hook, botApi.sent);
	if (cluster) await whichWorkerRanWhat(cluster, db);
	await db.end();
	dbClosed();
	const transcripts = cluster
		? [cluster.main, ...cluster.workers].map((p: { transcript(): string }) => p.transcript()).join('\n')
		: instance.transcript();
	const leaks = leakedSecrets(
		[transcripts, ...logFiles.map((f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : ''))].join('\n'),
	);
	if (leaks.length > 0) throw new Error(`a secret of this run appeared in ${leaks.join(' and ')}`);
	console.log(
		"\nsecrets (webhook secret, bot token, API keys, JWT secret, push secret, scrape token): in none of the lines above, nor in n8n's log",
	);
	printOutsideClient(n8nUrl, pushPort, metrics, instance.folder);
	console.log(`\ndemo ready in ${Math.round((Date.now() - DEMO_STARTED) / 1000)} s`);

	if (once) {
		const failed = await cleanup.run();
		cleanup.uninstall();
		if (failed.length) process.exitCode = 1;
		console.log(`\nn8n stopped, its user folder(s) removed; n8n's log kept in ${logFiles.join(', ')}`);
		return;
	}
	// from here on a signal is the normal end of the demo: exit code 0 after the cleanup
	cleanup.exitCode = 0;
	console.log(
		`\nn8n keeps running at ${n8nUrl} — open it to see the workflows on the canvas.\n${login}\nCtrl+C stops n8n and removes its user folder(s); n8n's log stays in ${logFiles.join(', ')}.`,
	);
}

/** Thrown by interrupted() once a signal arrived: the demo starts nothing new while it cleans up. */
class Interrupted extends Error {}

/** Throws Interrupted when a signal arrived (called between the demo's long steps). */
function interrupted(): void {
	if (cleanup.stopping) throw new Interrupted('interrupted');
}

/**
 * Writes this run's JWT Auth secret (M00/M01's webhooks) into `<folder>/demo-jwt-secret` (mode 0600; the user
 * folder and the file are removed when the demo ends) so a user can mint tokens for their own calls
 * (docs/webhook-authentication.md: the copy-paste example). Returns the line to print: the path, never the secret.
 */
function demoJwtSecretFile(folder: string): string {
	const file = path.join(folder, 'demo-jwt-secret');
	fs.writeFileSync(file, `${JWT_SECRET}\n`, { mode: 0o600 });
	return `JWT secret of the query API (for your own calls, removed when the demo ends): ${file}\n  TOKEN=$(node scripts/mint-token.js --secret-file ${file} --sub demo-user --expires-in 1h)  (docs/webhook-authentication.md)`;
}

/** The `webhookId` of M01's "Webhook (Path ID)" node: the first segment of the status URL's path form. */
function pathFormWebhookId(): string {
	const m01 = JSON.parse(
		fs.readFileSync(path.join(ROOT, 'workflows-json', 'maas', 'M01_query_status.json'), 'utf8'),
	) as {
		nodes: { name: string; webhookId?: string }[];
	};
	const node = m01.nodes.find((n) => n.name === 'Webhook (Path ID)');
	if (!node?.webhookId) throw new Error('M01 has no "Webhook (Path ID)" node with a webhookId');
	return node.webhookId;
}

/**
 * n8n's owner account, so the first visit to the editor is a login, not the owner form: the harness set OWNER up
 * (or logged in as it) when it published the workflows (`ownerStatus`); otherwise the demo sets it up itself
 * (POST /rest/owner/setup on main). Returns the line to print: the login, or n8n's answer when it refused
 * (the demo goes on: the editor then asks for an owner as usual).
 */
async function setUpOwner(instance: {
	owner?: typeof OWNER;
	ownerStatus?: 'created' | 'existing';
	setupOwner(o: typeof OWNER): Promise<{ ok: boolean; status: number; body: string }>;
}): Promise<string> {
	try {
		if (!(instance.ownerStatus && instance.owner === OWNER)) {
			const res = await instance.setupOwner(OWNER);
			if (!res.ok)
				return `n8n owner account not set up: POST /rest/owner/setup answered HTTP ${res.status} ${res.body.slice(0, 300)} — the editor asks for an owner on the first visit`;
		}
		const password = process.env.DEMO_OWNER_PASSWORD
			? 'the password in DEMO_OWNER_PASSWORD'
			: `password ${OWNER.password}`;
		return `n8n login (a demo account of this run, n8n's owner): email ${OWNER.email}, ${password}`;
	} catch (error) {
		return `n8n owner account not set up (${error instanceof Error ? error.message : String(error)}) — the editor asks for an owner on the first visit`;
	}
}

/**
 * Prints how an outside client calls this run: for each of the JWT (M00/M01's webhooks), the push token (M17) and
 * the metrics scrape token (M18), the file it was written to (mode 0600, in n8n's user folder, removed when the
 * demo ends) and a curl (or node) example that reads it. The tokens themselves are never printed (the demo's
 * output is kept in CI logs); the JWT and push token are for user demo-user and valid 1 h.
 */
function printOutsideClient(n8nUrl: string, pushPort: number, metrics: boolean, folder: string) {
	const write = (name: string, value: string) => {
		const file = path.join(folder, name);
		fs.writeFileSync(file, `${value}\n`, { mode: 0o600 });
		return file;
	};
	const jwt = write('demo-client-jwt', mint('demo-user', { secret: JWT_SECRET, expiresIn: '1h' }));
	const push = write('demo-client-push-token', mintPushToken('demo-user', PUSH_SECRET, { expiresInSeconds: 3600 }));
	const scrape = write('demo-client-scrape-token', SCRAPE_TOKEN);
	const ws = `ws://127.0.0.1:${pushPort}/api/ws`;
	console.log(
		[
			'\nCall this run from outside (tokens of this run in files, mode 0600, removed when the demo ends; user demo-user, valid 1 h):',
			`  JWT (webhook auth of M00/M01; mint more: node scripts/mint-token.js --secret-file ${folder}/demo-jwt-secret --sub demo-user):`,
			`    JWT=$(cat ${jwt})`,
			`    curl -s -X POST ${n8nUrl}/webhook/api/query -H "Authorization: Bearer $JWT" -H 'content-type: application/json' -d '{"query":"What is compare-and-swap?"}'`,
			`    curl -s "${n8nUrl}/webhook/api/query/status?id=<request_id>" -H "Authorization: Bearer $JWT"`,
			'  push token (M17 Pipeline Push; node scripts/mint-push-token.js mints more from the push secret):',
			`    PUSH_TOKEN=$(cat ${push})`,
			`    curl -si --max-time 3 --http1.1 -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: ZGVtby1jbGllbnQtMDAwMQ==' http://127.0.0.1:${pushPort}/api/ws | head -1   # HTTP/1.1 101 Switching Protocols`,
			`    node -e "const w=new (require('ws'))('${ws}');w.on('open',()=>w.send(JSON.stringify({type:'auth',user_id:'demo-user',token:process.argv[1]})));w.on('message',(m)=>console.log(String(m)))" "$PUSH_TOKEN"   # from this folder (the ws package); then send {"type":"subscribe","request_ids":["<request_id>"]}`,
			`  metrics scrape token (M18${metrics ? '' : ', not in this checkout'}):`,
			`    SCRAPE_TOKEN=$(cat ${scrape})`,
			`    curl -s ${n8nUrl}/webhook/metrics -H "Authorization: Bearer $SCRAPE_TOKEN" | grep contracts_pipeline`,
		].join('\n'),
	);
}

/** Alice joins the group (a chat_member update): WF20 records her membership, which lets her ask about its documents. */
function aliceJoins() {
	return {
		update_id: newUpdateId(),
		chat_member: {
			chat: GROUP,
			from: ALICE,
			date: 1_763_800_050,
			old_chat_member: { user: ALICE, status: 'left' },
			new_chat_member: { user: ALICE, status: 'member' },
		},
	};
}

/** A text message from Alice, in her DM with the bot or in the group with an @mention of the bot. */
function question(where: 'dm' | 'group', messageId: number, text: string) {
	const mention = `@${BOT_USERNAME}`;
	const body = where === 'group' ? `${mention} ${text}` : text;
	return {
		update_id: newUpdateId(),
		message: {
			message_id: messageId,
			from: ALICE,
			chat:
				where === 'group'
					? GROUP
					: { id: ALICE.id, first_name: ALICE.first_name, username: ALICE.username, type: 'private' },
			date: Math.floor(Date.now() / 1000),
			text: body,
			...(where === 'group' ? { entities: [{ type: 'mention', offset: 0, length: mention.length }] } : {}),
		},
	};
}

/** Where a secret of this run appears: the demo's own output, n8n's log (names only, never the secret). */
/** True when nothing listens on 127.0.0.1:`port`. */
async function portFree(port: number): Promise<boolean> {
	const net = await import('node:net');
	return new Promise((resolve) => {
		const probe = net.createServer();
		probe.once('error', () => resolve(false));
		probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
	});
}

/**
 * Seed 001 step 4, variant B: prints the push endpoint (M17) and the metrics scrape URL (M18), then opens a
 * WebSocket client on the push endpoint and authenticates it as demo-user (a push token minted with the
 * demo's secret). Returns the client, or null (after printing why) when the endpoint does not answer.
 */
async function openPush(n8nUrl: string, port: number, metrics: boolean): Promise<PushClient | null> {
	const endpoint = `ws://127.0.0.1:${port}/api/ws`;
	console.log(`\n  Push (M17 Pipeline Push, seed 001 step 4 variant B): ${endpoint}`);
	console.log(
		`  Metrics (M18, Prometheus text format): ${n8nUrl.replace('127.0.0.1', 'localhost')}/webhook/metrics${metrics ? '' : ' (M18_metrics.json is not in this checkout)'}`,
	);
	let client: PushClient | undefined;
	try {
		client = await connectWhenUp(endpoint);
		// a day, the node's default Max Token Lifetime: the demo's client stays connected while the demo runs
		// (a real backend mints short-lived tokens, 1 h by default, and the client re-authenticates)
		client.auth('demo-user', mintPushToken('demo-user', PUSH_SECRET, { expiresInSeconds: 86_400 }));
		const authed = await client.next((m) => m.type === 'authenticated' || m.type === 'error', 10_000);
		console.log(`  ws client connected → ${JSON.stringify(authed)}\n`);
		if (authed.type !== 'authenticated') throw new Error('not authenticated');
		return client;
	} catch (error) {
		console.log(`  push: ${(error as Error).message}\n`);
		client?.close();
		return null;
	}
}

/** Subscribes the push client to `requestId` and prints the acknowledgement and the run's status at that moment. */
async function subscribe(db: Client, client: PushClient, requestId: string) {
	client.subscribe(requestId);
	try {
		const ack = await client.next((m) => m.type === 'subscribed' || m.type === 'error', 10_000);
		const run = await db.query('SELECT status FROM maas.pipeline_runs WHERE id = $1', [requestId]);
		console.log(
			`  ${'ws subscribe as demo-user'.padEnd(40)} → ${JSON.stringify(ack)} (the run is ${run.rows[0]?.status ?? 'not found'} now)`,
		);
	} catch (error) {
		console.log(`  push: ${(error as Error).message}`);
	}
}

/**
 * Waits for the answer pushed for `requestId` (the MaaS pipeline completes the run: M10 → M16 → M11 Analyzer →
 * M12 Assembler → M13 Final Responder), prints it, and whether it is the final_answer M13 wrote.
 */
async function showPushed(db: Client, client: PushClient, requestId: string, postedAt: number) {
	try {
		const pushed = await client.answerFor(requestId, 120_000);
		const seconds = ((Date.now() - postedAt) / 1000).toFixed(1);
		console.log(`  pushed over ws (${seconds} s after the 201) → ${JSON.stringify(pushed)}`);
		const run = await db.query('SELECT status, final_answer FROM maas.pipeline_runs WHERE id = $1', [requestId]);
		const same = run.rows[0]?.final_answer === pushed.answer;
		console.log(
			`  maas.pipeline_runs: ${run.rows[0]?.status}, final_answer ${same ? 'is the pushed answer (written by M13 Final Responder)' : 'differs from the pushed answer'}`,
		);
	} catch (error) {
		const run = await db.query('SELECT status, error FROM maas.pipeline_runs WHERE id = $1', [requestId]);
		console.log(`  push: ${(error as Error).message}; the run is ${JSON.stringify(run.rows[0] ?? null)}`);
	}
}

/** The metric families the demo shows from the scrape: runs per status, requests, completions, Generate calls, LLM requests. */
const SHOWN_METRICS =
	/^contracts_(pipeline_finished_runs_total\{status="(COMPLETED|FAILED)"\}|(pipeline_requests_total|pipeline_completion_duration_seconds_count|pipeline_module_calls_total|llm_requests_total)[{ ])/;

/** GET /webhook/metrics (M18) and prints the lines that count the demo's run (and how many lines the scrape had). */
async function showMetrics(n8nUrl: string) {
	try {
		const res = await fetch(`${n8nUrl}/webhook/metrics`, { headers: { authorization: `Bearer ${SCRAPE_TOKEN}` } });
		const text = await res.text();
		const lines = text.split('\n');
		console.log(
			`\n  GET /webhook/metrics (Authorization: Bearer <the scrape token>) → HTTP ${res.status} ${res.headers.get('content-type') ?? ''}, ${lines.filter((l) => l && !l.startsWith('#')).length} samples; those counting the run:`,
		);
		for (const l of lines.filter((x) => SHOWN_METRICS.test(x))) console.log(`    ${l}`);
	} catch (error) {
		console.log(`  metrics: ${(error as Error).message}`);
	}
}

/** A PushClient on `url`, retrying while the trigger is still being activated (up to 30 s). */
async function connectWhenUp(url: string): Promise<PushClient> {
	const end = Date.now() + 30_000;
	for (;;) {
		try {
			return await PushClient.connect(url);
		} catch (error) {
			if (Date.now() > end) throw error;
			await new Promise((r) => setTimeout(r, 500));
		}
	}
}

function leakedSecrets(n8nLog: string): string[] {
	const where: string[] = [];
	const out = printed.join('\n');
	if (SECRETS.some((s) => out.includes(s))) where.push("the demo's output");
	if (SECRETS.some((s) => n8nLog.includes(s))) where.push("n8n's log");
	return where;
}

/**
 * The bot answers: Alice asks in her DM and with an @mention in the group, through WF10; WF90 runs WF20,
 * then the qa_answer jobs (WF51). Prints each question, the reply as sent to Telegram, its citations from
 * audit.qa_citations (document, score, snippet) and the audit.qa_* rows.
 */
async function askTheBot(db: Client, hook: string, sent: { chat_id: number; text: string }[]) {
	const started = Date.now();
	const asks: Array<['dm' | 'group', number, string]> = [
		['dm', 5201, 'What do the meeting notes say about vector indexes?'],
		['group', 5202, 'what is dense passage retrieval?'],
	];
	console.log('\nThe bot answers (Alice asks as Telegram updates through WF10; WF90 → WF20 → qa_answer → WF51):');
	const before = (
		await db.query('SELECT coalesce(max(id), 0) AS id FROM ops.jobs WHERE job_type = $1', [JOB_TYPES.qa_answer])
	).rows[0].id;
	for (const [where, messageId, text] of asks) {
		const update = question(where, messageId, text);
		const res = await fetch(hook, {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'X-Telegram-Bot-Api-Secret-Token': SECRET },
			body: JSON.stringify(update),
		});
		console.log(
			`  ${(where === 'dm' ? 'question in a DM' : 'question in the group').padEnd(22)} → HTTP ${res.status} ${await res.text()}`,
		);
	}
	const deadline = Date.now() + 90_000;
	let jobs: { id: string; status: string; attempts: number }[] = [];
	while (Date.now() < deadline) {
		jobs = (
			await db.query('SELECT id, status, attempts FROM ops.jobs WHERE job_type = $2 AND id > $1 ORDER BY id', [
				before,
				JOB_TYPES.qa_answer,
			])
		).rows;
		const open = (await db.query("SELECT count(*)::int AS n FROM ops.jobs WHERE status IN ('queued', 'running')"))
			.rows[0].n;
		if (jobs.length === asks.length && open === 0) break;
		await new Promise((r) => setTimeout(r, 1000));
	}
	console.log(
		`  WF51 answerer jobs: ${jobs.map((j) => `#${j.id} ${j.status}`).join(', ') || 'none'} (${((Date.now() - started) / 1000).toFixed(0)} s after the questions)`,
	);
	const turns =
		await db.query(`SELECT t.id, s.channel, s.chat_id, t.question, t.answer_text, t.model, t.telegram_message_id
		FROM audit.qa_turns t JOIN audit.qa_sessions s ON s.session_id = t.session_id ORDER BY t.id`);
	for (const t of turns.rows) {
		const reply = sent.find((m) => String(m.chat_id) === String(t.chat_id) && m.text.startsWith(t.answer_text));
		console.log(`\n  Q (${t.channel}, chat ${t.chat_id}): ${t.question}`);
		console.log(`  reply sent to Telegram (message ${t.telegram_message_id ?? 'not sent'}):`);
		for (const l of (reply?.text ?? '(no sendMessage seen)').split('\n')) console.log(`    | ${l}`);
		const cites = await db.query(
			`SELECT c.rank, c.score, c.snippet, d.id AS document_id, d.doc_type, k.chunk_no,
			        coalesce(d.title, f.file_name, u.normalized_url, d.source_key, 'chunk ' || c.chunk_id) AS document
			 FROM audit.qa_citations c LEFT JOIN kg.chunks k ON k.id = c.chunk_id LEFT JOIN content.documents d ON d.id = k.document_id
			 LEFT JOIN content.urls u ON u.id = d.url_id LEFT JOIN tg.files f ON f.tenant_id = d.tenant_id AND 'file:' || f.file_unique_id = d.source_key
			 WHERE c.turn_id = $1 ORDER BY c.rank`,
			[t.id],
		);
		console.log('  citations (audit.qa_citations):');
		for (const c of cites.rows) {
			const snippet = String(c.snippet).replace(/\s+/g, ' ');
			console.log(
				`    [${c.rank}] document ${c.document_id ?? '?'} ${c.document} (${c.doc_type ?? '?'}, chunk ${c.chunk_no ?? '?'}) score ${Number(c.score).toFixed(4)} "${snippet.length > 60 ? `${snippet.slice(0, 59)}…` : snippet}"`,
			);
		}
	}
	const audit =
		await db.query(`SELECT 'audit.qa_sessions' AS t, count(*)::int AS n, string_agg(channel || ' chat ' || chat_id || ' user ' || tg_user_id, '; ' ORDER BY started_at) AS rows FROM audit.qa_sessions
		UNION ALL SELECT 'audit.qa_turns', count(*)::int, string_agg('#' || id || ' model ' || coalesce(model, '-') || ' telegram message ' || coalesce(telegram_message_id::text, '-'), '; ' ORDER BY id) FROM audit.qa_turns
		UNION ALL SELECT 'audit.qa_citations', count(*)::int, string_agg(DISTINCT 'turn #' || turn_id || ': ' || (SELECT count(*) FROM audit.qa_citations x WHERE x.turn_id = c.turn_id), '; ') FROM audit.qa_citations c`);
	console.log('\n  audit.qa_* rows:');
	for (const r of audit.rows) console.log(`    ${r.t.padEnd(19)} ${String(r.n).padStart(2)}  ${r.rows ?? ''}`);
	const failed = await db.query(
		'SELECT e.job_id, e.status_code, e.node, e.message FROM ops.errors e JOIN ops.jobs j ON j.id = e.job_id WHERE j.job_type = $1 ORDER BY e.id',
		[JOB_TYPES.qa_answer],
	);
	for (const e of failed.rows)
		console.log(`  ops.errors for job #${e.job_id}: ${e.status_code} [${e.node}] ${e.message}`);
}

/**
 * Parses `--queue [--workers N]` (also `--workers=N`): N workers (default 2), or null without --queue.
 * Exits with code 2 and a message for a bad N or --workers without --queue.
 */
function queueArgument(args: string[]): number | null {
	const at = args.findIndex((a) => a === '--workers' || a.startsWith('--workers='));
	const raw = at < 0 ? undefined : args[at].includes('=') ? args[at].slice('--workers='.length) : args[at + 1];
	const usage = (why: string) => {
		console.error(`${why}\nusage: npm run demo -- [--once] [--queue [--workers N]]   (N from 1 to 8, default 2)`);
		process.exit(2);
	};
	if (!args.includes('--queue')) {
		if (at >= 0) usage('--workers needs --queue');
		return null;
	}
	if (at < 0) return 2;
	const n = Number(raw);
	if (!Number.isInteger(n) || n < 1 || n > 8)
		usage(`--workers must be a whole number from 1 to 8, got ${raw ?? 'nothing'}`);
	return n;
}

/** The shipped WF10 with its successful executions saved (it ships with saving off), in a temp folder; returns the file. */
function wf10SavingCopy(): string {
	const workflow = JSON.parse(fs.readFileSync(path.join(ROOT, 'workflows-json', 'WF10_telegram_ingest.json'), 'utf8'));
	workflow.settings = { ...workflow.settings, saveDataSuccessExecution: 'all' };
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-demo-wf10-'));
	const file = path.join(dir, 'WF10_telegram_ingest.json');
	fs.writeFileSync(file, JSON.stringify(workflow));
	return file;
}

interface QueueRole {
	role: string;
	startedExecutions(): string[];
}

/**
 * Queue mode: prints, per worker, the executions it started (its log) by workflow (n8n's execution_entity)
 * and the jobs its WF90 runs finished by job type (ops.job_runs), then the executions no worker started
 * (sub-workflows: they run inside their caller's execution on the caller's worker) and what main ran itself.
 */
async function whichWorkerRanWhat(
	cluster: {
		main: { transcript(): string };
		workers: QueueRole[];
		n8nDatabaseUrl: string;
		workerOfExecutions(): Map<string, string[]>;
	},
	db: Client,
) {
	const n8nDb = new Client({ connectionString: cluster.n8nDatabaseUrl });
	await n8nDb.connect();
	let executions: { id: string; workflow: string; mode: string }[];
	try {
		executions = (
			await n8nDb.query(`SELECT e.id::text, coalesce(w.name, e."workflowId") AS workflow, e.mode FROM execution_entity e
			LEFT JOIN workflow_entity w ON w.id = e."workflowId" ORDER BY e.id`)
		).rows;
	} finally {
		await n8nDb.end();
	}
	const workflowOf = new Map(executions.map((e) => [e.id, e.workflow]));
	const started = cluster.workerOfExecutions();
	const runs = (
		await db.query(`SELECT r.worker, j.job_type, count(*)::int AS n FROM ops.job_runs r JOIN ops.jobs j ON j.id = r.job_id
		WHERE r.worker LIKE 'wf90-%' GROUP BY 1, 2`)
	).rows as { worker: string; job_type: string; n: number }[];
	const tally = (counts: Map<string, number>) =>
		[...counts]
			.sort((a, b) => b[1] - a[1])
			.map(([k, n]) => `${k} ×${n}`)
			.join(', ') || 'none';
	console.log(
		"\nWhich worker ran what (queue mode; main received the webhooks and fired WF90's schedule, workers ran the executions):",
	);
	for (const worker of cluster.workers) {
		const ids = worker.startedExecutions();
		const byWorkflow = new Map<string, number>();
		for (const id of ids)
			byWorkflow.set(
				workflowOf.get(id) ?? `execution ${id} (no record)`,
				(byWorkflow.get(workflowOf.get(id) ?? `execution ${id} (no record)`) ?? 0) + 1,
			);
		const mine = new Set(ids.map((id) => `wf90-${id}`));
		const byJobType = new Map<string, number>();
		for (const r of runs)
			if (mine.has(r.worker))
				byJobType.set(STAGE[r.job_type] ?? r.job_type, (byJobType.get(STAGE[r.job_type] ?? r.job_type) ?? 0) + r.n);
		console.log(`  ${worker.role}: ${ids.length} executions — ${tally(byWorkflow)}`);
		console.log(`  ${' '.repeat(worker.role.length)}  job runs in its WF90 executions — ${tally(byJobType)}`);
	}
	const twice = [...started].filter(([, by]) => by.length > 1).map(([id]) => id);
	if (twice.length) console.log(`  started by more than one worker: executions ${twice.join(', ')}`);
	const inline = new Map<string, number>();
	for (const e of executions) if (!started.has(e.id)) inline.set(e.workflow, (inline.get(e.workflow) ?? 0) + 1);
	console.log(`  not queued (sub-workflows, run inside their caller on the caller's worker): ${tally(inline)}`);
	console.log(
		`  main ran ${(cluster.main.transcript().match(/Worker started execution/g) ?? []).length} executions itself`,
	);
}

main().catch(async (error) => {
	// after a signal the step that was running fails (n8n stopped under it): the signal's cleanup exits
	if (cleanup.signal !== null) return;
	console.error(error);
	await cleanup.run();
	process.exit(1);
});
