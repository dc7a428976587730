/**
 * The demo's settings (scripts/demo.ts, `npm run demo`): the DEMO_* and REDIS_* environment variables, the
 * workflows it imports, the Telegram group and member of its scenario, and the secrets of this run (random per
 * run, never printed: scripts/demo/leaks.ts checks the demo's output and n8n's log for them before it ends).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { JOB_REGISTRY, JOB_TYPE_LIST } from '../../nodes/shared/jobs';

/** When the demo started (for "demo ready in N s"). */
export const DEMO_STARTED = Date.now();
/** The Redis of queue mode (`--queue`): REDIS_HOST:REDIS_PORT, default 127.0.0.1:6379. */
export const REDIS = { host: process.env.REDIS_HOST || '127.0.0.1', port: Number(process.env.REDIS_PORT || 6379) };
/** The demo's database (dropped and created again each run); DEMO_DATABASE names another one. */
export const DATABASE = process.env.DEMO_DATABASE || 'contracts_demo';
/**
 * Where each n8n process's log goes (kept at exit): DEMO_LOG_DIR (overwritten by the next run), else a new
 * <tmp>/n8n-contracts-demo-<random> folder for this run.
 */
export function runLogDir(): string {
	return process.env.DEMO_LOG_DIR || fs.mkdtempSync(path.join(os.tmpdir(), 'n8n-contracts-demo-'));
}
/** The n8n owner account the demo sets up (a demo account: password generated per run unless DEMO_OWNER_PASSWORD). */
export const OWNER = {
	email: process.env.DEMO_OWNER_EMAIL || 'demo@example.com',
	firstName: 'Demo',
	lastName: 'Owner',
	// n8n's rules: 8 to 64 characters, a digit and an uppercase letter
	password: process.env.DEMO_OWNER_PASSWORD || `Demo-${randomBytes(12).toString('base64url')}-7`,
};
/** The checkout's root folder (workflows-json/, the package that is packed for n8n). */
export const ROOT = path.join(__dirname, '..', '..');
/** The demo bot's webhook secret (core.bots.webhook_secret, sent as X-Telegram-Bot-Api-Secret-Token). */
export const SECRET = 'demo-Secret_token';
/** The workflows the demo imports and publishes, under workflows-json/ (M17 and M18 are added by scripts/demo/n8n.ts). */
export const WORKFLOWS = [
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
export const JWT_SECRET = randomBytes(32).toString('base64url');
/** The stand-ins' bot token and API keys, random per run (never printed; the demo checks). */
export const BOT_TOKEN = `${1_000_000 + randomBytes(3).readUIntBE(0, 3)}:${randomBytes(24).toString('base64url')}`;
export const EMBEDDINGS_KEY = `demo-emb-${randomBytes(16).toString('hex')}`;
export const LLM_KEY = `sk-demo-${randomBytes(16).toString('hex')}`;
/** The Contracts Push API secret of M17 (Pipeline Push tokens) for this demo run (never printed). */
export const PUSH_SECRET = randomBytes(32).toString('base64url');
/** The bearer token M18's Header Auth credential (metricsHeaderAuth01) expects, as Prometheus would send it (never printed). */
export const SCRAPE_TOKEN = randomBytes(24).toString('base64url');
/** Every secret of this run: none may appear in the demo's output or n8n's log (scripts/demo/leaks.ts). */
export const SECRETS = [SECRET, JWT_SECRET, BOT_TOKEN, EMBEDDINGS_KEY, LLM_KEY, PUSH_SECRET, SCRAPE_TOKEN];
/** M18 (Prometheus scrape, GET /webhook/metrics), imported when this checkout ships it. */
export const METRICS_WORKFLOW = 'maas/M18_metrics.json';
/** The Telegram group of the scenario (registered in core.tenant_chats) and Alice, the member who asks the bot. */
export const GROUP = { id: -1001234567890, title: 'Research group', type: 'supergroup' };
export const ALICE = { id: 111222333, is_bot: false, first_name: 'Alice', username: 'alice', language_code: 'en' };
/** The demo bot's username (core.bots.username): the @mention in the group. */
export const BOT_USERNAME = 'demo_kb_bot';
/** Each job type's stage label: its worker workflow, from the job-type registry. */
export const STAGE: Record<string, string> = Object.fromEntries(
	JOB_TYPE_LIST.map((t) => [t, `${JOB_REGISTRY[t].workflow_id.slice(0, 4)} ${t}`]),
);
