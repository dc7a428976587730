/**
 * Boots n8n (2.4.8, or CONTRACTS_N8N_VERSION on CONTRACTS_N8N_NODE) in queue mode for end-to-end tests (scripts/lib/n8nQueue.js): 1 main + `workers`
 * workers (+ `webhooks` `n8n webhook` processes, which then serve the production webhooks) on the
 * machine's Redis, n8n's own database in a scratch PostgreSQL database, the packed package in every
 * process, credentials pointing at `databaseUrl`, the workflows imported (one CLI call) and published through
 * main's REST API while the workers start.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const queue = require('../../scripts/lib/n8nQueue');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres } = require('../../scripts/lib/postgres');

export interface QueueProcess {
	role: string;
	url: string;
	logs(): string;
	transcript(): string;
	startedExecutions(): string[];
}

export interface RunningQueueN8n {
	/** main's URL (webhooks, when there is no webhook process). */
	url: string;
	/** Where production webhooks are served: the first webhook process's URL, else main's (`url`). Changes when that process is restarted. */
	readonly webhookUrl: string;
	main: QueueProcess;
	workers: QueueProcess[];
	/** The `n8n webhook` processes (role `webhook-<i>`); empty unless started with `webhooks`. */
	webhooks: QueueProcess[];
	/** postgres:// URL of n8n's own database. */
	n8nDatabaseUrl: string;
	killWorker(index: number): Promise<void>;
	startWorker(index: number): Promise<string>;
	/** SIGKILL / start again (a new port: read webhookUrl after) / SIGTERM of webhook process `index`. */
	killWebhook(index: number): Promise<void>;
	startWebhook(index: number): Promise<string>;
	stopWebhook(index: number): Promise<void>;
	/** execution id → the worker roles whose transcript says they started it (one each, when all is well). */
	workerOfExecutions(): Map<string, string[]>;
	/** The last lines of every process (for failure messages). */
	logs(): string;
	stop(): Promise<void>;
}

export const REDIS = { host: process.env.REDIS_HOST || '127.0.0.1', port: Number(process.env.REDIS_PORT || 6379) };

/** null when Redis answers PING, else why not (the queue tests skip with it). */
export function redisUnavailable(): Promise<string | null> {
	return queue.redisUnavailable(REDIS);
}

export async function startQueueN8n(
	databaseUrl: string,
	workflowFiles: string[],
	webhookPaths: string[],
	{ workers = 2, webhooks = 0, concurrency = 10, extraCredentials = [] as unknown[] } = {},
): Promise<RunningQueueN8n> {
	const bin = harness.ensureN8n({ log: console.log });
	const server = await resolvePostgres();
	// packs the package and removes the tarball once installed (main's .n8n/nodes, shared by the other processes)
	const cluster = await queue.createQueueCluster({
		bin,
		serverUrl: server.url,
		workers,
		webhooks,
		concurrency,
		redis: REDIS,
	});
	const logs = () =>
		[cluster.main, ...cluster.workers, ...cluster.webhooks]
			.map((p: QueueProcess) => `--- ${p.role} ---\n${p.logs().slice(-3000)}`)
			.join('\n');
	try {
		await cluster.importCredentials([harness.postgresCredential(databaseUrl), ...extraCredentials]);
		await cluster.importAndPublish(workflowFiles);
		await cluster.start();
		// with webhook processes main does not serve production webhooks: probe where they are served
		await (webhooks > 0 ? cluster.webhooks[0] : cluster.main).waitForWebhooks(webhookPaths);
	} catch (error) {
		await cluster.stop();
		await server.stop();
		throw error;
	}
	return {
		url: cluster.main.url,
		get webhookUrl() {
			return cluster.webhookUrl;
		},
		main: cluster.main,
		workers: cluster.workers,
		webhooks: cluster.webhooks,
		n8nDatabaseUrl: cluster.n8nDatabaseUrl,
		killWorker: (i) => cluster.killWorker(i),
		startWorker: (i) => cluster.startWorker(i),
		killWebhook: (i) => cluster.killWebhook(i),
		startWebhook: (i) => cluster.startWebhook(i),
		stopWebhook: (i) => cluster.stopWebhook(i),
		workerOfExecutions: () => cluster.workerOfExecutions(),
		logs,
		async stop() {
			if (process.env.N8N_QUEUE_TRANSCRIPTS) cluster.saveTranscripts(process.env.N8N_QUEUE_TRANSCRIPTS);
			await cluster.stop();
			await server.stop();
		},
	};
}

/** Writes `workflow` as JSON into a temp folder (for import); returns the file path. */
export function writeWorkflow(workflow: { id: string }): string {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-wf-'));
	const file = path.join(dir, `${workflow.id}.json`);
	fs.writeFileSync(file, JSON.stringify(workflow));
	return file;
}
