/**
 * `npm run bench:wf10`: Telegram updates/s through the n8n 2.4.8 webhook, in one run, one n8n and one database:
 *   ours     — the shipped WF10: Webhook → Telegram Ingest, which answers the webhook itself (Options →
 *              Respond to Webhook; the error branch keeps its Respond to Webhook node);
 *   ours+respond — the same with a Respond to Webhook node on the success path instead
 *              (bench/workflows/WF10_respond_node.json: WF10's earlier shape, the floor's shape);
 *   builtin  — the same contract from n8n's built-in nodes (bench/workflows/WF10_builtin_baseline.json:
 *              Webhook → Postgres → Code → Postgres → Respond, the same SQL), as users build it today;
 *   floor    — n8n's own cost of this shape (bench/workflows/BENCH_floor.json: Webhook → No Op → Respond
 *              to Webhook, no database), the ceiling any node in the middle can reach;
 *   floor+errors — the floor with WF10's error branch (seed 002 §2.3, mandatory: ERR — Source → Prepare DB
 *              Error → Call WF99 → Respond Error) wired to the No Op's error output and never taken
 *              (bench/workflows/BENCH_floor_error_branch.json): what n8n charges for carrying it;
 * each twice: "saving off" — the workflow as shipped, settings saveDataSuccessExecution "none" and
 * saveDataErrorExecution "all" (issue 14) — and "default saving" — a copy written at run time with those
 * two settings removed, its own id, webhook id and path (<path>-saved), so n8n's defaults apply (n8n is
 * started without EXECUTIONS_DATA_SAVE_* overrides: every execution saved). The copies are checked to have
 * really saved one execution per update, and the shipped ones none (n8n's SQLite, execution_entity).
 * Prints the median of BENCH_ROUNDS (default 5) interleaved rounds per variant, ours/floor+errors (issue 29 P1:
 * goal ≥ 1.0×, bar ≥ 0.95×), ours/floor (for information) and ours/builtin, then the CPU ms per update of n8n (main + task runner),
 * of the PostgreSQL backends of the bench database and of the client (bench/cpu.ts, from /proc): the rates
 * move ±10 % with whatever else the 2 cores run, the CPU per update much less. Refuses to report when an answer is not 200, or when any update was lost or duplicated
 * (raw rows, keys and jobs each grow by exactly the updates sent, one distinct job per update).
 * The builtin's Code node needs NODE_FUNCTION_ALLOW_BUILTIN=crypto (without it n8n answers an empty 200).
 * BENCH_UPDATES (default 1000) distinct updates per variant, BENCH_CLIENTS (default 8) concurrent senders, after
 * BENCH_WARMUP (default 300) per variant, with a pause of BENCH_SETTLE_MS (default 250) after each variant.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { mapLimit } from '../test/helpers/n8n';
import { backendPids, ms, perRequest, processTree, readCpu, type CpuReading } from './cpu';
import { seedBot, setupDatabase } from '../test/helpers/db';
import { realisticUpdates } from '../test/helpers/updates';
import { recordGoal } from './goals';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../scripts/lib/n8n');

const UPDATES = Number(process.env.BENCH_UPDATES || 1000);
const CLIENTS = Number(process.env.BENCH_CLIENTS || 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
/**
 * Warm-up updates per variant before the measured rounds (default 300). n8n's own code keeps getting faster over
 * the first thousand or so requests (JIT): with 40 per variant, the first measured rounds ran at 100 updates/s and
 * the ninth at 140–170 on this machine, and the variant with more code to compile (ours) lost more in them.
 */
const WARMUP = Number(process.env.BENCH_WARMUP || 300);
/** Pause after each variant (ms, default 250), so the executions a variant left finishing are not the next one's cost. */
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS || 250);
const ROOT = path.join(__dirname, '..');

interface Variant {
	name: 'ours' | 'ours+respond' | 'builtin' | 'floor' | 'floor+errors';
	saving: 'off' | 'default';
	hook: string;
	workflowId: string;
	/** whether it writes raw.telegram_updates / ops.jobs (the floor writes nothing) */
	stores: boolean;
}

const SHIPPED = [
	{ name: 'ours', file: path.join(ROOT, 'workflows-json', 'WF10_telegram_ingest.json'), stores: true },
	{ name: 'ours+respond', file: path.join(__dirname, 'workflows', 'WF10_respond_node.json'), stores: true },
	{ name: 'builtin', file: path.join(__dirname, 'workflows', 'WF10_builtin_baseline.json'), stores: true },
	{ name: 'floor', file: path.join(__dirname, 'workflows', 'BENCH_floor.json'), stores: false },
	{ name: 'floor+errors', file: path.join(__dirname, 'workflows', 'BENCH_floor_error_branch.json'), stores: false },
] as const;

/** The webhook path of a workflow JSON (its first Webhook node). */
function hookOf(workflow: { nodes: { type: string; parameters: { path?: string } }[] }): string {
	return workflow.nodes.find((n) => n.type === 'n8n-nodes-base.webhook')!.parameters.path!;
}

/**
 * A copy of `file` with n8n's default execution saving: saveDataSuccessExecution/saveDataErrorExecution
 * removed, id + "Save", webhook ids and path changed. Written into `dir`; returns its path, id and hook.
 */
function defaultSavingCopy(file: string, dir: string): { file: string; id: string; hook: string } {
	const workflow = JSON.parse(fs.readFileSync(file, 'utf8'));
	workflow.id = `${String(workflow.id).slice(0, 12)}Save`;
	workflow.name = `${workflow.name} (default saving)`;
	delete workflow.settings.saveDataSuccessExecution;
	delete workflow.settings.saveDataErrorExecution;
	for (const node of workflow.nodes) {
		if (node.type !== 'n8n-nodes-base.webhook') continue;
		node.parameters.path = `${node.parameters.path}-saved`;
		node.webhookId = `${String(node.webhookId).slice(0, -4)}5a7e`;
	}
	const out = path.join(dir, path.basename(file).replace(/\.json$/, '.default-saving.json'));
	fs.writeFileSync(out, JSON.stringify(workflow, null, 2));
	return { file: out, id: workflow.id, hook: hookOf(workflow) };
}

/** Executions n8n saved per workflow id (its SQLite database; rows of unsaved executions are deleted). */
async function savedExecutions(folder: string, bin: string): Promise<Map<string, number>> {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const sqlite3 = require(require.resolve('sqlite3', { paths: [path.dirname(bin)] }));
	const db = new sqlite3.Database(path.join(folder, '.n8n', 'database.sqlite'), sqlite3.OPEN_READONLY);
	try {
		const rows: { workflowId: string; n: number }[] = await new Promise((resolve, reject) =>
			db.all(
				'SELECT workflowId, count(*) AS n FROM execution_entity GROUP BY workflowId',
				(error: Error | null, r: never[]) => (error ? reject(error) : resolve(r)),
			),
		);
		return new Map(rows.map((r) => [r.workflowId, Number(r.n)]));
	} finally {
		db.close();
	}
}

async function main() {
	if (spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0)
		throw new Error('build failed');
	const db = await setupDatabase();
	const bot = await seedBot(db.pool, 'bench_bot', 'bench-Secret_1');
	const bin = harness.ensureN8n({ log: console.log });
	const instance = harness.createInstance({ bin });
	try {
		const ours = harness.postgresCredential(db.url);
		await instance.importCredentials([
			ours,
			{
				id: 'pgBuiltin01',
				name: 'Built-in PostgreSQL',
				type: 'postgres',
				data: { ...ours.data, allowUnauthorizedCerts: false },
			},
		]);
		const copies = fs.mkdtempSync(path.join(instance.folder, 'bench-'));
		const variants: Variant[] = [];
		const files = [path.join(ROOT, 'workflows-json', 'WF99_global_err_handler.json')];
		for (const s of SHIPPED) {
			const shipped = JSON.parse(fs.readFileSync(s.file, 'utf8'));
			if (shipped.settings?.saveDataSuccessExecution !== 'none')
				throw new Error(`${s.file}: settings.saveDataSuccessExecution is not "none"`);
			const copy = defaultSavingCopy(s.file, copies);
			files.push(s.file, copy.file);
			variants.push({ name: s.name, saving: 'off', hook: hookOf(shipped), workflowId: shipped.id, stores: s.stores });
			variants.push({ name: s.name, saving: 'default', hook: copy.hook, workflowId: copy.id, stores: s.stores });
		}
		await instance.importAndPublish(files);
		const url = await instance.start({
			env: {
				NODE_FUNCTION_ALLOW_BUILTIN: 'crypto',
				EXECUTIONS_DATA_SAVE_MANUAL_EXECUTIONS: 'false',
				N8N_LOG_LEVEL: 'info',
			},
		});
		await instance.waitForWebhooks(variants.map((v) => v.hook));

		const counts = async () =>
			(
				await db.pool
					.query(`SELECT (SELECT count(*) FROM raw.telegram_updates)::int AS raw, (SELECT count(*) FROM raw.telegram_update_keys)::int AS keys,
				(SELECT count(*) FROM ops.jobs)::int AS jobs, (SELECT count(DISTINCT dedup_key) FROM ops.jobs)::int AS distinct_jobs`)
			).rows[0] as Record<string, number>;
		const sent = new Map<string, number>();
		const dbName = new URL(db.url).pathname.slice(1);
		const cpuOf = new Map<Variant, CpuReading[]>();
		// CPU ms per update of n8n (main + task runner), the PostgreSQL backends of this database, and this client
		const cpuGroups = async () => ({
			n8n: processTree(instance.process.pid),
			postgres: await backendPids(db.pool, dbName),
			client: [process.pid],
		});
		const run = async (v: Variant, n: number) => {
			const updates = Array.from({ length: n }, (_, i) => realisticUpdates[i % realisticUpdates.length]());
			const before = await counts();
			const groups = await cpuGroups();
			const cpuBefore = readCpu(groups);
			const started = process.hrtime.bigint();
			const statuses = await mapLimit(updates, CLIENTS, async (update) => {
				const res = await fetch(`${url}/webhook/${v.hook}?bot=${bot.botKey}`, {
					method: 'POST',
					headers: { 'content-type': 'application/json', 'X-Telegram-Bot-Api-Secret-Token': bot.secret },
					body: JSON.stringify(update),
				});
				const text = await res.text();
				if (process.env.BENCH_DEBUG) console.log(v.hook, res.status, text.slice(0, 300));
				if (res.status === 200 && v.stores && JSON.parse(text).duplicate !== false)
					throw new Error(`${v.hook}: a new update answered as a duplicate: ${text}`);
				return res.status;
			});
			const seconds = Number(process.hrtime.bigint() - started) / 1e9;
			cpuOf.set(v, [...(cpuOf.get(v) ?? []), perRequest(cpuBefore, readCpu(groups), n)]);
			const failed = statuses.filter((s) => s !== 200).length;
			if (failed) throw new Error(`${v.hook}: ${failed} of ${n} answers were not 200`);
			// A rate means nothing unless every answered update was stored exactly once: refuse to report otherwise.
			const after = await counts();
			const want = v.stores ? n : 0;
			for (const k of ['raw', 'keys', 'jobs', 'distinct_jobs']) {
				if (after[k] - before[k] !== want)
					throw new Error(
						`${v.hook}: ${n} updates answered 200 but ${k} grew by ${after[k] - before[k]} (want ${want})`,
					);
			}
			sent.set(v.workflowId, (sent.get(v.workflowId) ?? 0) + n);
			return n / seconds;
		};
		// Warm-up of every path (JIT, pools, task runner), then interleaved measured rounds, each variant after a pause.
		const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
		for (const v of variants) {
			await run(v, WARMUP);
			await settle();
		}
		cpuOf.clear();
		const rates = new Map<Variant, number[]>(variants.map((v) => [v, []]));
		for (let round = 0; round < ROUNDS; round++)
			for (const v of variants) {
				rates.get(v)!.push(await run(v, Math.round(UPDATES / ROUNDS)));
				await settle();
			}

		// Each "default saving" copy saved every execution; each shipped workflow saved none (all succeeded).
		const saved = await savedExecutions(instance.folder, bin);
		for (const v of variants) {
			const got = saved.get(v.workflowId) ?? 0;
			const want = v.saving === 'default' ? sent.get(v.workflowId)! : 0;
			if (got !== want)
				throw new Error(`${v.hook} (${v.saving} saving): n8n saved ${got} executions, expected ${want}`);
		}

		const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
		const rate = (name: Variant['name'], saving: Variant['saving']) =>
			median(rates.get(variants.find((v) => v.name === name && v.saving === saving)!)!);
		console.log(
			`\nWF10 updates/s through the n8n ${harness.N8N_VERSION} webhook, ${CLIENTS} concurrent clients, median of ${ROUNDS} interleaved rounds of ${Math.round(UPDATES / ROUNDS)}:`,
		);
		console.log('                                                   saving off   default saving');
		const row = (label: string, name: Variant['name']) =>
			console.log(
				`  ${label.padEnd(48)} ${rate(name, 'off').toFixed(1).padStart(9)}  ${rate(name, 'default').toFixed(1).padStart(15)}`,
			);
		row('ours (Webhook → Telegram Ingest, answering)', 'ours');
		row('ours+respond (… → Respond to Webhook)', 'ours+respond');
		row('builtin (Postgres + Code + Postgres nodes)', 'builtin');
		row('floor (Webhook → No Op → Respond)', 'floor');
		row('floor+errors (… + the seed-002 error branch)', 'floor+errors');
		const ratio = (a: Variant['name'], b: Variant['name'], saving: Variant['saving']) =>
			(rate(a, saving) / rate(b, saving)).toFixed(2);
		console.log(
			`  ${'ratio ours / floor+errors (P1 ≥ 1.0, bar 0.95)'.padEnd(48)} ${ratio('ours', 'floor+errors', 'off').padStart(8)}x  ${ratio('ours', 'floor+errors', 'default').padStart(14)}x`,
		);
		console.log(
			`  ${'ratio ours / floor (for information)'.padEnd(48)} ${ratio('ours', 'floor', 'off').padStart(8)}x  ${ratio('ours', 'floor', 'default').padStart(14)}x`,
		);
		console.log(
			`  ${'ratio ours+respond / floor (same shape)'.padEnd(48)} ${ratio('ours+respond', 'floor', 'off').padStart(8)}x  ${ratio('ours+respond', 'floor', 'default').padStart(14)}x`,
		);
		console.log(
			`  ${'ratio ours / builtin'.padEnd(48)} ${ratio('ours', 'builtin', 'off').padStart(8)}x  ${ratio('ours', 'builtin', 'default').padStart(14)}x`,
		);
		console.log(
			'\nCPU ms per update (median of the rounds; n8n = main + task runner, postgres = the backends of the bench database):',
		);
		console.log(
			'                                                   saving off: n8n  postgres  client   default: n8n  postgres  client',
		);
		const cpuMedian = (v: Variant, k: string) => {
			const xs = (cpuOf.get(v) ?? []).map((r) => r[k]).filter((x): x is number => typeof x === 'number');
			return xs.length ? median(xs) : null;
		};
		for (const name of ['ours', 'ours+respond', 'builtin', 'floor', 'floor+errors'] as const) {
			const cells = (['off', 'default'] as const).flatMap((saving) => {
				const v = variants.find((x) => x.name === name && x.saving === saving)!;
				return [
					ms(cpuMedian(v, 'n8n')).padStart(9),
					ms(cpuMedian(v, 'postgres')).padStart(9),
					ms(cpuMedian(v, 'client')).padStart(7),
				];
			});
			console.log(`  ${name.padEnd(47)} ${cells.slice(0, 3).join(' ')}   ${cells.slice(3).join(' ')}`);
		}
		console.log(
			`  (every update stored once with one job; saving checked: ${[...sent.values()].reduce((a, b) => a + b, 0)} requests)`,
		);
		const savingLabel = { off: 'successful executions not saved', default: "n8n's default saving" } as const;
		const updatesPerS = (x: number) => `${x.toFixed(1)} updates/s`;
		// P1 (issue 29, decided): WF10's baseline is the floor of its own shape, the error branch of seed 002 §2.3
		// attached and never taken (it is mandatory, so n8n's cost of carrying it is part of the limit). Goal: ≥ 1.0×
		// that floor, i.e. our node costs no more than a No Op; the bar is ≥ 0.95× as the median of the interleaved rounds.
		for (const saving of ['off', 'default'] as const) {
			const cpu = (name: Variant['name']) =>
				cpuMedian(variants.find((x) => x.name === name && x.saving === saving)!, 'n8n');
			const [oursCpu, floorCpu] = [cpu('ours'), cpu('floor+errors')];
			recordGoal({
				goal: 'P1',
				what: `WF10 vs the floor of its shape (with the seed-002 §2.3 error branch), ${savingLabel[saving]}, median of ${ROUNDS} interleaved rounds${oursCpu && floorCpu ? ` (n8n CPU ${ms(oursCpu)} vs ${ms(floorCpu)} ms/update)` : ''}`,
				measured: updatesPerS(rate('ours', saving)),
				baseline: `floor + error branch ${updatesPerS(rate('floor+errors', saving))}`,
				ratio: rate('ours', saving) / rate('floor+errors', saving),
				atLeast: 0.95,
				bound: 'goal ≥ 1.00×, bar ≥ 0.95×',
			});
		}
		// The plain floor (no error branch), for information.
		for (const saving of ['off', 'default'] as const)
			recordGoal({
				goal: 'P1',
				what: `WF10 vs the plain floor (Webhook → No Op → Respond, no error branch), ${savingLabel[saving]}`,
				measured: updatesPerS(rate('ours', saving)),
				baseline: `Webhook → No Op → Respond ${updatesPerS(rate('floor', saving))}`,
				ratio: rate('ours', saving) / rate('floor', saving),
				atLeast: null,
			});
		// The ceiling of P1 for any WF10 that carries the mandatory branch: a middle node that cost no more than
		// No Op + Respond to Webhook would still run at floor+errors / floor.
		for (const saving of ['off', 'default'] as const)
			recordGoal({
				goal: 'P1',
				what: `ceiling with the error branch: the floor carrying it vs the floor, ${savingLabel[saving]}`,
				measured: `floor + error branch ${updatesPerS(rate('floor+errors', saving))}`,
				baseline: `floor ${updatesPerS(rate('floor', saving))}`,
				ratio: rate('floor+errors', saving) / rate('floor', saving),
				atLeast: null,
			});
		recordGoal({
			goal: 'P1',
			what: 'WF10 vs the same contract from built-in nodes, successful executions not saved',
			measured: updatesPerS(rate('ours', 'off')),
			baseline: `Postgres + Code + Postgres ${updatesPerS(rate('builtin', 'off'))}`,
			ratio: rate('ours', 'off') / rate('builtin', 'off'),
			atLeast: null,
		});
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
