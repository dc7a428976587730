/**
 * Boots n8n 2.4.8 in queue mode for end-to-end tests (scripts/lib/n8nQueue.js): 1 main + `workers`
 * workers on the machine's Redis, n8n's own database in a scratch PostgreSQL database, the packed
 * package in every process, credentials pointing at `databaseUrl`, the workflows imported and published.
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
	/** main's URL (webhooks). */
	url: string;
	main: QueueProcess;
	workers: QueueProcess[];
	/** postgres:// URL of n8n's own database. */
	n8nDatabaseUrl: string;
	killWorker(index: number): Promise<void>;
	startWorker(index: number): Promise<string>;
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
	{ workers = 2, concurrency = 10, extraCredentials = [] as unknown[] } = {},
): Promise<RunningQueueN8n> {
	const bin = harness.ensureN8n({ log: console.log });
	const tarball = harness.packPackage();
	const server = await resolvePostgres();
	const cluster = await queue.createQueueCluster({ tarball, bin, serverUrl: server.url, workers, concurrency, redis: REDIS });
	const logs = () => [cluster.main, ...cluster.workers].map((p: QueueProcess) => `--- ${p.role} ---\n${p.logs().slice(-3000)}`).join('\n');
	try {
		await cluster.importCredentials([harness.postgresCredential(databaseUrl), ...extraCredentials]);
		await cluster.importAndPublish(workflowFiles);
		await cluster.start();
		await cluster.main.waitForWebhooks(webhookPaths);
	} catch (error) {
		await cluster.stop();
		await server.stop();
		throw error;
	}
	return {
		url: cluster.main.url,
		main: cluster.main,
		workers: cluster.workers,
		n8nDatabaseUrl: cluster.n8nDatabaseUrl,
		killWorker: (i) => cluster.killWorker(i),
		startWorker: (i) => cluster.startWorker(i),
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
