/**
 * `node --import tsx bench/wf10.profile.ts [webhook path]`: a V8 CPU profile of the n8n process while it
 * answers BENCH_UPDATES (default 600) Telegram updates from BENCH_CLIENTS (default 8) clients on one
 * webhook ("telegram" = the shipped WF10; "telegram-floor" = Webhook → No Op → Respond; "telegram-floor-errors" = the same with WF10's error branch). n8n runs with
 * bench/cpuProfilePreload.js preloaded (NODE_OPTIONS of the child only), which profiles from start-up and
 * writes the profile on SIGUSR2; only the measured requests are analysed (samples after the warm-up).
 * Prints: the share of the sampled time spent inside this package (inclusive), the top functions of
 * this package by inclusive time, and the top self-time items under this package's frames grouped by
 * library (pg, zod, crypto, n8n-core…). Times are ms of CPU samples over the whole run; divide by the
 * number of updates for ms/update. The .cpuprofile is kept (path printed) for Chrome DevTools.
 * Successful executions are not saved (EXECUTIONS_DATA_SAVE_ON_SUCCESS=none; a workflow setting wins).
 * Before/after: PROFILE_TARBALL=<npm pack of the older commit> PROFILE_WF10=<its WF10 JSON>.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { mapLimit } from '../test/helpers/n8n';
import { seedBot, setupDatabase } from '../test/helpers/db';
import { realisticUpdates } from '../test/helpers/updates';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../scripts/lib/n8n');

const UPDATES = Number(process.env.BENCH_UPDATES || 600);
const CLIENTS = Number(process.env.BENCH_CLIENTS || 8);
const HOOK = process.argv[2] || 'telegram';
const ROOT = path.join(__dirname, '..');
const OURS = 'n8n-nodes-contracts/dist/';

interface ProfileNode {
	id: number;
	callFrame: { functionName: string; url: string; lineNumber: number };
	children?: number[];
}
interface Profile {
	startTime: number;
	endTime: number;
	nodes: ProfileNode[];
	samples: number[];
	timeDeltas: number[];
}

/** A short label of a frame: function @ file:line, with the path cut to what names it. */
function label(frame: ProfileNode['callFrame']): string {
	const url = frame.url.replace(/^file:\/\//, '');
	const short = url.includes(OURS) ? url.slice(url.indexOf(OURS) + OURS.length) : url.replace(/^.*node_modules\//, '');
	return `${frame.functionName || '(anonymous)'} @ ${short || '(native)'}:${frame.lineNumber + 1}`;
}

/** The library a frame belongs to (for the self-time grouping). */
function library(url: string): string {
	if (!url) return '(native/gc/idle)';
	if (url.includes(OURS)) return 'n8n-nodes-contracts';
	const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(
		url.slice(url.lastIndexOf('node_modules/') - 1 >= 0 ? url.lastIndexOf('node_modules/') : 0),
	);
	if (m) return m[1];
	if (url.startsWith('node:')) return url;
	return 'other';
}

/** Analyses the samples of the last `windowMs` of the profile (all of it when 0). */
function analyse(file: string, updates: number, windowMs = 0): void {
	const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
	const byId = new Map(profile.nodes.map((n) => [n.id, n]));
	const parent = new Map<number, number>();
	for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
	const from = windowMs > 0 ? profile.endTime - windowMs * 1000 : -Infinity;
	let clock = profile.startTime;
	let total = 0;
	let idle = 0;
	let ours = 0;
	const inclusive = new Map<string, number>();
	const selfUnderOurs = new Map<string, number>();
	profile.samples.forEach((id, i) => {
		const ms = (profile.timeDeltas[i] ?? 0) / 1000;
		clock += profile.timeDeltas[i] ?? 0;
		if (clock < from) return;
		total += ms;
		const leaf = byId.get(id)!;
		if (leaf.callFrame.functionName === '(idle)') {
			idle += ms;
			return;
		}
		const seen = new Set<string>();
		let inOurs = false;
		for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
			const frame = byId.get(n)!.callFrame;
			if (frame.url.includes(OURS)) {
				inOurs = true;
				const key = label(frame);
				if (!seen.has(key)) {
					seen.add(key);
					inclusive.set(key, (inclusive.get(key) ?? 0) + ms);
				}
			}
		}
		if (inOurs) {
			ours += ms;
			const key = `${library(leaf.callFrame.url)}: ${label(leaf.callFrame)}`;
			selfUnderOurs.set(key, (selfUnderOurs.get(key) ?? 0) + ms);
		}
	});
	const busy = total - idle;
	const per = (ms: number) => `${ms.toFixed(0).padStart(6)} ms  ${(ms / updates).toFixed(3)} ms/update`;
	console.log(`\nprofile ${file}`);
	console.log(`  sampled ${total.toFixed(0)} ms, busy (not idle) ${per(busy)}`);
	console.log(`  inside n8n-nodes-contracts (inclusive) ${per(ours)}  = ${((100 * ours) / busy).toFixed(1)}% of busy`);
	console.log('  top functions of this package, inclusive:');
	for (const [k, v] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`   ${per(v)}  ${k}`);
	console.log('  top self-time items under this package:');
	for (const [k, v] of [...selfUnderOurs].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`   ${per(v)}  ${k}`);
}

async function main() {
	if (process.argv[2] === '--analyse') {
		analyse(process.argv[3], Number(process.argv[4] || UPDATES), Number(process.argv[5] || 0));
		return;
	}
	// PROFILE_TARBALL: profile another build of the package (e.g. `npm pack` of an older commit) instead.
	const tarball = process.env.PROFILE_TARBALL || undefined;
	if (!tarball && spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0)
		throw new Error('build failed');
	const db = await setupDatabase();
	const bot = await seedBot(db.pool, 'bench_bot', 'bench-Secret_1');
	const profFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wf10-prof-')), `${HOOK}.cpuprofile`);
	let windowMs = 0;
	const instance = harness.createInstance({
		tarball, // undefined: packed for this instance and removed once installed
		bin: harness.ensureN8n({ log: console.log }),
	});
	try {
		await instance.importCredentials([harness.postgresCredential(db.url)]);
		await instance.importAndPublish([
			path.join(ROOT, 'workflows-json', 'WF99_global_err_handler.json'),
			// PROFILE_WF10: another WF10 file (e.g. an older commit's, with PROFILE_TARBALL)
			process.env.PROFILE_WF10 || path.join(ROOT, 'workflows-json', 'WF10_telegram_ingest.json'),
			path.join(__dirname, 'workflows', 'BENCH_floor.json'),
			path.join(__dirname, 'workflows', 'BENCH_floor_error_branch.json'),
		]);
		const url = await instance.start({
			env: {
				NODE_OPTIONS: `--require ${path.join(__dirname, 'cpuProfilePreload.js')}`,
				WF10_CPU_PROFILE: profFile,
				EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'none',
				EXECUTIONS_DATA_SAVE_MANUAL_EXECUTIONS: 'false',
			},
		});
		await instance.waitForWebhooks([HOOK]);
		const updates = Array.from({ length: UPDATES + 40 }, (_, i) => realisticUpdates[i % realisticUpdates.length]());
		const send = async (update: Record<string, unknown>) => {
			const res = await fetch(`${url}/webhook/${HOOK}?bot=${bot.botKey}`, {
				method: 'POST',
				headers: { 'content-type': 'application/json', 'X-Telegram-Bot-Api-Secret-Token': bot.secret },
				body: JSON.stringify(update),
			});
			await res.text();
			if (res.status !== 200) throw new Error(`${HOOK}: answered ${res.status}`);
		};
		await mapLimit(updates.slice(0, 40), CLIENTS, send);
		const measuredFrom = Date.now();
		const started = process.hrtime.bigint();
		await mapLimit(updates.slice(40), CLIENTS, send);
		const seconds = Number(process.hrtime.bigint() - started) / 1e9;
		console.log(`${HOOK}: ${(UPDATES / seconds).toFixed(1)} updates/s while profiled (profiling slows n8n down)`);
		windowMs = Date.now() - measuredFrom;
		instance.process.kill('SIGUSR2');
		for (let i = 0; i < 600 && !fs.existsSync(`${profFile}.done`); i++) await new Promise((r) => setTimeout(r, 100));
	} finally {
		await instance.stop();
		instance.remove();
		await db.drop();
	}
	if (!fs.existsSync(profFile)) throw new Error(`no profile written to ${profFile}`);
	analyse(profFile, UPDATES, windowMs);
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
