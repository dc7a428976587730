/**
 * n8n in the demo: packs this package, installs n8n (scripts/lib/n8n.js; queue mode: main + workers on Redis,
 * scripts/lib/n8nQueue.js), imports the credentials and the workflows (M17 on a free port when 5681 is taken,
 * M18 when the checkout ships it, WF31 allowing the local page server, WF10 saving its executions in queue mode),
 * starts n8n, which publishes them as the demo's owner, and prints where it runs, the login and the JWT secret file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { freePort, m17Copy } from '../../test/helpers/push';
import { wf31AllowingPages } from '../../test/helpers/pageServer';
import { demoCredentials } from './credentials';
import { demoJwtSecretFile } from './outsideClient';
import { setUpOwner } from './owner';
import { portFree } from './push';
import { wf10SavingCopy } from './queueMode';
import { METRICS_WORKFLOW, OWNER, REDIS, ROOT, WORKFLOWS } from './settings';
import { cleanup, interrupted } from './state';
import type { startStandIns } from './standIns';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../lib/n8n');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const queue = require('../lib/n8nQueue');

/**
 * Starts n8n for the demo with `queueWorkers` workers (null: one n8n process) on the PostgreSQL server at
 * `serverUrl` (queue mode creates n8n's own database there), the demo database at `databaseUrl`, the stand-ins,
 * and its log in `logFiles[0]` (queue mode: a file per process in `logDir`). Every process and temp folder is
 * registered with the cleanup. Returns the instance (queue mode: the cluster's main) and the cluster (or null),
 * n8n's URL, M17's push port, whether M18 is imported and the login line. Throws Interrupted after a signal.
 */
export async function startN8n(o: {
	queueWorkers: number | null;
	serverUrl: string;
	databaseUrl: string;
	logDir: string;
	logFiles: string[];
	standIns: Awaited<ReturnType<typeof startStandIns>>;
}) {
	const { queueWorkers, standIns } = o;
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
			serverUrl: o.serverUrl,
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
		cluster.logTo(o.logDir);
	}
	// the harness publishes the workflows as n8n's owner: the demo's OWNER, so n8n has one account, the printed one
	const instance = cluster ? cluster.main : harness.createInstance({ tarball, bin, log: console.log, owner: OWNER });
	harness.removePackage(tarball);
	console.log(
		`n8n user folder${cluster ? 's' : ''}: ${cluster ? cluster.folders.join(', ') : instance.folder} (removed when the demo ends or is stopped)`,
	);
	if (!cluster) {
		instance.logTo(o.logFiles[0]);
		cleanup.add(`stop n8n, remove its user folder ${instance.folder}`, () => instance.dispose(), {
			force: () => instance.killNow(),
		});
	}
	interrupted();
	await instance.importCredentials(
		demoCredentials({
			databaseUrl: o.databaseUrl,
			botApi: standIns.botApi,
			embeddingsUrl: standIns.embeddings.baseUrl,
			modelUrl: standIns.model.url,
		}),
	);
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
	const fetcherCopy = wf31AllowingPages(standIns.pages.base);
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
	const n8nUrl: string = cluster ? await cluster.start() : await instance.start();
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
	return { instance, cluster, n8nUrl, pushPort, metrics, login };
}
