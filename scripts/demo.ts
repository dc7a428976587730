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
 * retrieves the chunks the readers of the reply may see (exact route without pgvector, HNSW with it), keeps
 * those above the relevance floors (issue 30), a local model stand-in quotes the sources holding the
 * question's words and cites them [n] (extractiveAnswer.ts), the reply goes out via the Bot API stand-in with
 * one Sources line per cited document, and the demo prints the question, the reply as sent, its citations and
 * the audit.qa_* rows, and checks each reply cites the one document its question is about.
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
 * (default contracts_demo, dropped and created again each run; kept at exit). DEMO_SKIP_BUILD=1 uses the dist/
 * that is there instead of building (the e2e tests set it: `npm run build` empties dist/ first, which the other
 * e2e files running beside them read).
 *
 * `npm run demo -- --queue [--workers N]` runs the same in n8n queue mode (scripts/lib/n8nQueue.js): one
 * main (webhooks, WF90's schedules) and N `n8n worker` processes (default 2, at most 8) on Redis at
 * REDIS_HOST:REDIS_PORT (127.0.0.1:6379), n8n's own database in a scratch PostgreSQL database; WF10 is
 * imported with its successful executions saved (it ships with saving off) so every execution has a record.
 * At the end it prints which worker ran what: the executions each worker started (its log: "Worker started
 * execution <id>") by workflow (n8n's execution_entity), and the jobs each worker's WF90 runs finished by type
 * (ops.job_runs.worker is WF90's "wf90-<execution id>"). Without Redis it says so and exits with code 2.
 *
 * This file is the entry point (main()); the parts are under scripts/demo/: settings.ts (DEMO_* settings, the
 * workflows, this run's secrets), state.ts (the cleanup, the printed lines, interrupted()), owner.ts (n8n's owner
 * account), database.ts (create, migrate, seed), standIns.ts (pages, Bot API, embeddings, model), n8n.ts and
 * credentials.ts (start n8n, import and publish), telegram.ts (the updates posted to WF10), queryApi.ts (the MaaS
 * query API), push.ts (the push scenario, M17), metrics.ts (M18's scrape), report.ts (counts per stage and
 * table), bot.ts (Alice asks the bot), queueMode.ts (--queue: arguments, which worker ran what), leaks.ts (the
 * secret-leak check) and outsideClient.ts (how an outside client calls the run).
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { cleanup, interrupted } from './demo/state';
import { DEMO_STARTED, REDIS, ROOT, runLogDir } from './demo/settings';
import { ownerSettingsProblem } from './demo/owner';
import { prepareDatabase } from './demo/database';
import { startStandIns } from './demo/standIns';
import { startN8n } from './demo/n8n';
import { postUpdates, waitForJobs } from './demo/telegram';
import { showQueryApi } from './demo/queryApi';
import { showMetrics } from './demo/metrics';
import { printCounts } from './demo/report';
import { askTheBot } from './demo/bot';
import { queueArgument, whichWorkerRanWhat } from './demo/queueMode';
import { leakedSecrets } from './demo/leaks';
import { printOutsideClient } from './demo/outsideClient';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const queue = require('./lib/n8nQueue');

const once = process.argv.includes('--once');
/** `--queue [--workers N]`: queue mode with N workers (null: the single-process demo). */
const queueWorkers = queueArgument(process.argv.slice(2));

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
	if (process.env.DEMO_SKIP_BUILD === '1' && fs.existsSync(path.join(ROOT, 'dist', 'nodes')))
		console.log('build skipped (DEMO_SKIP_BUILD=1): the dist/ that is there is packed');
	else if (spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0)
		throw new Error('build failed');
	interrupted();
	const { server, url, db, dbClosed } = await prepareDatabase();
	const standIns = await startStandIns();
	interrupted();
	const { instance, cluster, n8nUrl, pushPort, metrics, login } = await startN8n({
		queueWorkers,
		serverUrl: server.url,
		databaseUrl: url,
		logDir: LOG_DIR,
		logFiles,
		standIns,
	});

	const hook = `${n8nUrl}/webhook/telegram?bot=demo_bot`;
	await postUpdates(hook, standIns.pages.base, standIns.botApi);
	await waitForJobs(db);
	await showQueryApi(n8nUrl, db, pushPort, metrics);
	interrupted();
	if (metrics) await showMetrics(n8nUrl);
	interrupted();

	await printCounts(db);
	await askTheBot(db, hook, standIns.botApi.sent);
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

main().catch(async (error) => {
	// after a signal the step that was running fails (n8n stopped under it): the signal's cleanup exits
	if (cleanup.signal !== null) return;
	console.error(error);
	await cleanup.run();
	process.exit(1);
});
