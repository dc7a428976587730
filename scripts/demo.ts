/**
 * `npm run demo` — the main job: build, find PostgreSQL (DATABASE_URL, else 127.0.0.1:5432, else an
 * embedded server), migrate a fresh `contracts_demo` database, seed a tenant and a bot, start n8n 2.4.8
 * with this package, import + publish WF10 and WF99, post realistic Telegram updates to the webhook
 * (text with urls, photo with caption, edit, channel post, my_chat_member, a duplicate, a wrong secret,
 * a malformed body) and print what happened. n8n keeps running for the canvas unless `--once`.
 */
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Client } from 'pg';
import { channelPost, editedMessage, myChatMember, photoWithCaption, textWithUrls } from '../test/helpers/updates';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres, withDatabase } = require('./lib/postgres');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrate } = require('./lib/migrate');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('./lib/n8n');

const once = process.argv.includes('--once');
const ROOT = path.join(__dirname, '..');
const SECRET = 'demo-Secret_token';

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
	const { applied } = await migrate(url);
	console.log(`migrated contracts_demo: ${applied.join(', ')}`);
	const db = new Client({ connectionString: url });
	await db.connect();
	await db.query(
		`WITH t AS (INSERT INTO core.tenants (name) VALUES ('Demo tenant') RETURNING tenant_id)
		 INSERT INTO core.bots (tenant_id, bot_key, webhook_secret, username) SELECT tenant_id, 'demo_bot', $1, 'demo_kb_bot' FROM t`,
		[SECRET],
	);

	const instance = harness.createInstance({ tarball: harness.packPackage(), bin: harness.ensureN8n({ log: console.log }), log: console.log });
	await instance.importCredentials([harness.postgresCredential(url)]);
	await instance.importAndPublish([
		path.join(ROOT, 'workflows-json', 'WF99_global_err_handler.json'),
		path.join(ROOT, 'workflows-json', 'WF10_telegram_ingest.json'),
	]);
	const n8nUrl = await instance.start();
	await instance.waitForWebhooks(['telegram']);
	console.log(`n8n 2.4.8 running at ${n8nUrl} (user folder ${instance.folder})\n`);

	const hook = `${n8nUrl}/webhook/telegram?bot=demo_bot`;
	const text = textWithUrls();
	const sends: Array<[string, unknown, string | null]> = [
		['text with url entities', text, SECRET],
		['photo with caption_entities', photoWithCaption(), SECRET],
		['edited message', editedMessage(), SECRET],
		['channel post', channelPost(), SECRET],
		['my_chat_member', myChatMember(), SECRET],
		['duplicate of the first', text, SECRET],
		['wrong secret', textWithUrls(), 'not-the-secret'],
		['malformed body', { update_id: 'x', message: {} }, SECRET],
	];
	for (const [label, body, secret] of sends) {
		const res = await fetch(hook, {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...(secret ? { 'X-Telegram-Bot-Api-Secret-Token': secret } : {}) },
			body: JSON.stringify(body),
		});
		console.log(`${label.padEnd(30)} → HTTP ${res.status} ${await res.text()}`);
	}
	const counts = await db.query(`SELECT 'raw.telegram_updates' AS t, count(*) FROM raw.telegram_updates
		UNION ALL SELECT 'raw.telegram_update_keys', count(*) FROM raw.telegram_update_keys
		UNION ALL SELECT 'ops.jobs', count(*) FROM ops.jobs UNION ALL SELECT 'ops.errors', count(*) FROM ops.errors`);
	console.log('\nrows per table:');
	for (const r of counts.rows) console.log(`  ${r.t.padEnd(26)} ${r.count}`);
	const jobs = await db.query(`SELECT id, job_type, status, payload->>'update_type' AS update_type, correlation_id FROM ops.jobs ORDER BY id`);
	console.log('\nops.jobs:');
	for (const j of jobs.rows) console.log(`  #${j.id} ${j.job_type} ${j.status} ${j.update_type} correlation ${j.correlation_id}`);
	const errors = await db.query(`SELECT id, status_code, kind, node, message, correlation_id FROM ops.errors ORDER BY id`);
	console.log('\nops.errors:');
	for (const e of errors.rows) console.log(`  #${e.id} ${e.status_code} ${e.kind} [${e.node}] ${e.message} correlation ${e.correlation_id}`);
	await db.end();

	if (once) {
		await instance.stop();
		instance.remove();
		await server.stop();
		return;
	}
	console.log(`\nn8n keeps running at ${n8nUrl} — open it to see WF10 and WF99 on the canvas. Ctrl+C stops it.`);
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
