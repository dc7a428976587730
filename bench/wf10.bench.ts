/**
 * `npm run bench`: Telegram updates/s through the n8n 2.4.8 webhook, in one run and on one database:
 *   contracts — the shipped WF10 (Webhook → Telegram Ingest → Respond), and
 *   baseline  — the same contract built from n8n's built-in nodes (Webhook → Postgres → Code → Postgres → Respond,
 *               the same SQL), as users build it today.
 * Prints both rates and their ratio (contracts / baseline; higher is better for us). Executions are not
 * saved (EXECUTIONS_DATA_SAVE_ON_SUCCESS=none) so the database of n8n itself does not dominate; the
 * baseline's Code node needs NODE_FUNCTION_ALLOW_BUILTIN=crypto (without it n8n answers an empty 200).
 * BENCH_UPDATES (default 600) distinct updates per variant, BENCH_CLIENTS (default 8) concurrent senders.
 */
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { mapLimit } from '../test/helpers/n8n';
import { seedBot, setupDatabase } from '../test/helpers/db';
import { realisticUpdates } from '../test/helpers/updates';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../scripts/lib/n8n');

const UPDATES = Number(process.env.BENCH_UPDATES || 600);
const CLIENTS = Number(process.env.BENCH_CLIENTS || 8);
const ROOT = path.join(__dirname, '..');

async function main() {
	if (spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) throw new Error('build failed');
	const db = await setupDatabase();
	const bot = await seedBot(db.pool, 'bench_bot', 'bench-Secret_1');
	const instance = harness.createInstance({ tarball: harness.packPackage(), bin: harness.ensureN8n({ log: console.log }) });
	try {
		const ours = harness.postgresCredential(db.url);
		await instance.importCredentials([ours, { id: 'pgBuiltin01', name: 'Built-in PostgreSQL', type: 'postgres', data: { ...ours.data, allowUnauthorizedCerts: false } }]);
		await instance.importAndPublish([
			path.join(ROOT, 'workflows-json', 'WF99_global_err_handler.json'),
			path.join(ROOT, 'workflows-json', 'WF10_telegram_ingest.json'),
			path.join(__dirname, 'workflows', 'WF10_builtin_baseline.json'),
		]);
		const url = await instance.start({ env: { NODE_FUNCTION_ALLOW_BUILTIN: 'crypto', EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'none', EXECUTIONS_DATA_SAVE_MANUAL_EXECUTIONS: 'false', N8N_LOG_LEVEL: 'info' } });
		await instance.waitForWebhooks(['telegram', 'telegram-builtin']);

		const run = async (hookPath: string, n: number) => {
			const updates = Array.from({ length: n }, (_, i) => realisticUpdates[i % realisticUpdates.length]());
			const count = async () => (await db.pool.query('SELECT count(*)::int AS n FROM raw.telegram_updates')).rows[0].n as number;
			const before = await count();
			const started = process.hrtime.bigint();
			const statuses = await mapLimit(updates, CLIENTS, async (update) => {
				const res = await fetch(`${url}/webhook/${hookPath}?bot=${bot.botKey}`, {
					method: 'POST',
					headers: { 'content-type': 'application/json', 'X-Telegram-Bot-Api-Secret-Token': bot.secret },
					body: JSON.stringify(update),
				});
				const text = await res.text();
				if (process.env.BENCH_DEBUG) console.log(hookPath, res.status, text.slice(0, 300));
				return res.status;
			});
			const seconds = Number(process.hrtime.bigint() - started) / 1e9;
			const failed = statuses.filter((s) => s !== 200).length;
			if (failed) throw new Error(`${hookPath}: ${failed} of ${n} answers were not 200`);
			const stored = (await count()) - before;
			// A rate means nothing unless every answered update was stored: refuse to report otherwise.
			if (stored !== n) throw new Error(`${hookPath}: ${n} answered 200 but ${stored} rows stored`);
			return n / seconds;
		};
		// Warm-up of both paths (JIT, pools, task runner), then alternate measured rounds.
		await run('telegram', 40);
		await run('telegram-builtin', 40);
		const rates = { contracts: [] as number[], baseline: [] as number[] };
		for (let round = 0; round < 3; round++) {
			rates.contracts.push(await run('telegram', UPDATES / 3));
			rates.baseline.push(await run('telegram-builtin', UPDATES / 3));
		}
		const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
		const c = median(rates.contracts);
		const b = median(rates.baseline);
		console.log(`\nWF10 updates/s through the n8n 2.4.8 webhook, ${CLIENTS} concurrent clients, median of 3 rounds of ${UPDATES / 3}:`);
		console.log(`  contracts (Telegram Ingest node)          ${c.toFixed(1)} updates/s`);
		console.log(`  baseline (built-in Postgres + Code nodes)  ${b.toFixed(1)} updates/s`);
		console.log(`  ratio contracts / baseline                 ${(c / b).toFixed(2)}x`);
	} finally {
		await instance.stop();
		instance.remove();
		await db.drop();
	}
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
