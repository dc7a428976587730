'use strict';
/**
 * The n8n queue-mode harness (the n8n version and Node of ./n8n.js: CONTRACTS_N8N_VERSION, CONTRACTS_N8N_NODE) (issue 15): one main (`n8n start`: webhooks, triggers, schedules) and N
 * `n8n worker` processes that run the executions main puts on a Redis (Bull) queue, optionally M `n8n webhook`
 * processes that serve the production webhooks instead of main (they enqueue, workers run). Built on ./n8n.js:
 *  - redisUnavailable({ host, port }): null when Redis answers PING, else the reason (tests skip with it);
 *  - createQueueCluster({ tarball, bin, serverUrl, workers, webhooks, concurrency, redis, log }): installs the packed
 *    package once, creates a scratch PostgreSQL database for n8n's own tables, and prepares the processes;
 *  - cluster.importCredentials / importAndPublish (n8n CLI against that database: one call each), start()
 *    (main, then its REST API publishes the imported workflows while the workers and webhook processes
 *    start; see N8nInstance.publishPending), stop(); cluster.owner: n8n's owner the harness publishes as;
 *  - cluster.killWorker(i) (SIGKILL), cluster.startWorker(i) (again), cluster.workerOfExecutions();
 *  - cluster.webhooks[i] (`n8n webhook`, role `webhook-<i>`): cluster.webhookUrl (the first one's URL, main's
 *    when there is none), killWebhook(i), startWebhook(i), stopWebhook(i);
 *  - a transcript per process (cluster.main.transcript(), cluster.workers[i].transcript(),
 *    cluster.webhooks[i].transcript(), saveTranscripts(dir)).
 *
 * Every process gets the same: EXECUTIONS_MODE=queue, QUEUE_BULL_REDIS_HOST/PORT, QUEUE_BULL_PREFIX and
 * N8N_REDIS_KEY_PREFIX (both unique per cluster: the Bull queue uses the first, n8n's pub/sub channels and
 * its Redis cache use the second, so two clusters on one Redis never share anything), DB_TYPE=postgresdb +
 * DB_POSTGRESDB_*, N8N_ENCRYPTION_KEY, OFFLOAD_MANUAL_EXECUTIONS_TO_WORKERS=true. Each process has its own N8N_USER_FOLDER whose `.n8n/nodes` is a
 * symlink to the one folder the package was installed into (like a shared volume), and its own
 * N8N_RUNNERS_BROKER_PORT (the task-runner broker listens in every process). A worker also gets
 * QUEUE_HEALTH_CHECK_ACTIVE=true, its own QUEUE_HEALTH_CHECK_PORT and N8N_WORKER_SERVER_ADDRESS=127.0.0.1:
 * the harness waits for its /healthz/readiness (200 once its database and Redis connections are up).
 * A webhook process gets its own N8N_PORT (127.0.0.1), WEBHOOK_URL and broker port; it is ready when its
 * /healthz/readiness answers 200 and it printed "Webhook listener waiting for requests.". With webhook
 * processes, main gets N8N_DISABLE_PRODUCTION_MAIN_PROCESS=true (unless `disableProductionMain: false`): it
 * still activates the published workflows (registers their webhooks in n8n's database, runs triggers and
 * schedules) but no longer answers /webhook/… itself, as in n8n's documented layout.
 */
const { spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { createInstance, N8nInstance, TRANSCRIPT_MAX } = require('./n8n');
const { createDatabase, freePort } = require('./postgres');

/** Resolves null when Redis at host:port answers PING within `timeoutMs`, else a sentence saying why not. */
function redisUnavailable({ host = '127.0.0.1', port = 6379, timeoutMs = 1500 } = {}) {
	return new Promise((resolve) => {
		const socket = net.connect({ host, port });
		let answer = '';
		const done = (reason) => {
			socket.destroy();
			resolve(reason);
		};
		socket.setTimeout(timeoutMs, () => done(`Redis at ${host}:${port} did not answer PING within ${timeoutMs} ms`));
		socket.on('error', (error) => done(`Redis at ${host}:${port} is not reachable (${error.code || error.message})`));
		socket.on('connect', () => socket.write('PING\r\n'));
		socket.on('data', (chunk) => {
			answer += chunk.toString();
			if (answer.includes('\r\n'))
				done(
					answer.startsWith('+PONG')
						? null
						: `Redis at ${host}:${port} answered ${JSON.stringify(answer.trim())} to PING`,
				);
		});
	});
}

/** One n8n process of a queue-mode cluster: `main` (n8n start) or `worker-<i>` (n8n worker). */
class QueueProcess extends N8nInstance {
	constructor(folder, bin, log, role, clusterEnv) {
		super(folder, bin, log);
		this.role = role;
		this.clusterEnv = clusterEnv;
	}

	env(extra = {}) {
		return super.env({ ...this.clusterEnv, ...extra });
	}

	keep(text) {
		this.writeLog(text);
		this.output.push(text);
		if (this.output.length > 500) this.output.shift();
		if (this.transcriptLength < TRANSCRIPT_MAX) {
			this.transcriptChunks.push(text);
			this.transcriptLength += text.length;
		}
	}

	/** Starts `n8n worker --concurrency=N`; resolves when its /healthz/readiness answers 200. */
	async startWorker({ concurrency = 10, timeoutMs = 120_000 } = {}) {
		if (this.process && this.process.exitCode === null && this.process.signalCode === null)
			throw new Error(`${this.role} is running`);
		const healthPort = await freePort();
		const brokerPort = await freePort();
		this.url = `http://127.0.0.1:${healthPort}`;
		this.assertOpen('n8n worker');
		this.keep(`\n--- harness: starting ${this.role} (n8n worker --concurrency=${concurrency}) ---\n`);
		this.process = spawn(this.node, [this.bin, 'worker', `--concurrency=${concurrency}`], {
			cwd: this.folder,
			env: this.env({
				QUEUE_HEALTH_CHECK_ACTIVE: 'true',
				QUEUE_HEALTH_CHECK_PORT: String(healthPort),
				N8N_WORKER_SERVER_ADDRESS: '127.0.0.1',
				N8N_RUNNERS_BROKER_PORT: String(brokerPort),
			}),
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		this.process.stdout.on('data', (c) => this.keep(c.toString()));
		this.process.stderr.on('data', (c) => this.keep(c.toString()));
		const child = this.process;
		const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(`${code ?? signal}`)));
		const deadline = Date.now() + timeoutMs;
		while (Date.now() < deadline) {
			const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('tick'), 500))]);
			if (code !== 'tick') throw new Error(`${this.role} exited (${code}) before it was ready:\n${this.logs()}`);
			try {
				if ((await fetch(`${this.url}/healthz/readiness`)).ok) return this.url;
			} catch {
				// not listening yet
			}
		}
		await this.stop();
		throw new Error(`${this.role} was not ready after ${timeoutMs} ms:\n${this.logs()}`);
	}

	/**
	 * Starts `n8n webhook` on a free port of 127.0.0.1 (production webhooks only; executions go to the queue);
	 * resolves with its URL when /healthz/readiness answers 200 and it logged "Webhook listener waiting for requests.".
	 * Throws (with its log) when it exits first or is not ready within `timeoutMs`.
	 */
	async startWebhook({ timeoutMs = 120_000 } = {}) {
		if (this.process && this.process.exitCode === null && this.process.signalCode === null)
			throw new Error(`${this.role} is running`);
		const port = await freePort();
		const brokerPort = await freePort();
		this.url = `http://127.0.0.1:${port}`;
		this.assertOpen('n8n webhook');
		this.keep(`\n--- harness: starting ${this.role} (n8n webhook) ---\n`);
		const startedAt = this.transcriptLength;
		this.process = spawn(this.node, [this.bin, 'webhook'], {
			cwd: this.folder,
			env: this.env({
				N8N_PORT: String(port),
				N8N_LISTEN_ADDRESS: '127.0.0.1',
				N8N_HOST: '127.0.0.1',
				WEBHOOK_URL: `${this.url}/`,
				N8N_RUNNERS_BROKER_PORT: String(brokerPort),
			}),
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		this.process.stdout.on('data', (c) => this.keep(c.toString()));
		this.process.stderr.on('data', (c) => this.keep(c.toString()));
		const child = this.process;
		const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(`${code ?? signal}`)));
		const deadline = Date.now() + timeoutMs;
		while (Date.now() < deadline) {
			const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('tick'), 500))]);
			if (code !== 'tick') throw new Error(`${this.role} exited (${code}) before it was ready:\n${this.logs()}`);
			try {
				const listening = /Webhook listener waiting for requests/.test(this.transcriptChunks.join('').slice(startedAt));
				if (listening && (await fetch(`${this.url}/healthz/readiness`)).ok) return this.url;
			} catch {
				// not listening yet
			}
		}
		await this.stop();
		throw new Error(`${this.role} was not ready after ${timeoutMs} ms:\n${this.logs()}`);
	}

	async stop() {
		// after a SIGKILL exitCode stays null (signalCode is set): nothing left to stop
		if (!this.process || this.process.exitCode !== null || this.process.signalCode !== null) return;
		await super.stop();
	}

	/**
	 * SIGKILL (no graceful shutdown: running executions die with the process, as in a crash or OOM kill).
	 * Then removes n8n's crash journal (`<folder>/.n8n/crash.journal`): with NODE_ENV=production n8n 2.4.8
	 * finds it at the next start in the same folder, logs "Last session crashed" and sleeps 10 s
	 * (n8n/dist/crash-journal.js); the tests restart a killed process to see the recovery at once.
	 */
	async kill() {
		if (!this.process || this.process.exitCode !== null || this.process.signalCode !== null) return;
		const exited = new Promise((resolve) => this.process.once('exit', resolve));
		this.process.kill('SIGKILL');
		await exited;
		fs.rmSync(path.join(this.folder, '.n8n', 'crash.journal'), { force: true });
		this.keep(`\n--- harness: ${this.role} killed with SIGKILL (crash journal removed) ---\n`);
	}

	/** The n8n execution ids this worker logged as started ("Worker started execution <id> (job <n>)"). */
	startedExecutions() {
		return [...this.transcript().matchAll(/Worker started execution (\d+) \(job/g)].map((m) => m[1]);
	}
}

class QueueCluster {
	constructor({ main, workers, webhooks = [], n8nDatabase, prefix, redis, bin, concurrency, folders, log }) {
		this.main = main;
		this.workers = workers;
		/** `n8n webhook` processes (none unless createQueueCluster({ webhooks })). */
		this.webhooks = webhooks;
		/** Extra environment of main (N8N_DISABLE_PRODUCTION_MAIN_PROCESS when webhook processes serve the webhooks). */
		this.mainEnv = {};
		this.n8nDatabase = n8nDatabase;
		this.prefix = prefix;
		this.redis = redis;
		this.bin = bin;
		this.concurrency = concurrency;
		this.folders = folders;
		this.log = log;
	}

	/** postgres:// URL of n8n's own database (execution_entity, workflow_entity, …). */
	get n8nDatabaseUrl() {
		return this.n8nDatabase.url;
	}

	/** Where production webhooks are served: the first webhook process's URL, else main's (set once started). */
	get webhookUrl() {
		return this.webhooks.length ? this.webhooks[0].url : this.main.url;
	}

	importCredentials(credentials) {
		return this.main.importCredentials(credentials);
	}

	/** One `n8n import:workflow` (main's folder, n8n's PostgreSQL database); start() publishes them. */
	importAndPublish(files) {
		return this.main.importAndPublish(files);
	}

	/** n8n's owner account the harness publishes as (main's `owner`; unset: a generated one). */
	get owner() {
		return this.main.owner;
	}

	set owner(owner) {
		this.main.owner = owner;
	}

	/**
	 * Starts main (n8n's migrations run there), then every worker and webhook process while main publishes what
	 * importAndPublish() imported (through its REST API: main is the leader that registers the webhooks and
	 * runs the triggers); resolves with main's URL once all of that is done. Throws with n8n's message when
	 * publishing fails (the processes keep running: stop() the cluster).
	 */
	async start({ timeoutMs = 180_000 } = {}) {
		const url = await this.main.start({ timeoutMs, env: this.mainEnv || {}, publish: false });
		// allSettled: a publishing failure must not return while a worker is still between its port and its spawn
		// (the caller's stop() would miss it and leave it running)
		const results = await Promise.allSettled([
			this.main.publishPending(),
			...this.workers.map((w) => w.startWorker({ concurrency: this.concurrency, timeoutMs })),
			...this.webhooks.map((w) => w.startWebhook({ timeoutMs })),
		]);
		const failed = results.find((r) => r.status === 'rejected');
		if (failed) throw failed.reason;
		return url;
	}

	killWorker(index) {
		return this.workers[index].kill();
	}

	startWorker(index) {
		return this.workers[index].startWorker({ concurrency: this.concurrency });
	}

	/** SIGKILL of webhook process `index`. */
	killWebhook(index) {
		return this.webhooks[index].kill();
	}

	/** Starts webhook process `index` (again); resolves with its URL (a new port each start). */
	startWebhook(index) {
		return this.webhooks[index].startWebhook();
	}

	/** SIGTERM of webhook process `index` (SIGKILL after 20 s). */
	stopWebhook(index) {
		return this.webhooks[index].stop();
	}

	/** Map execution id → worker role, from the worker transcripts. */
	workerOfExecutions() {
		const map = new Map();
		for (const worker of this.workers)
			for (const id of worker.startedExecutions()) map.set(id, [...(map.get(id) || []), worker.role]);
		return map;
	}

	/** Writes each process's transcript to `<dir>/<role>.log`. */
	saveTranscripts(dir) {
		fs.mkdirSync(dir, { recursive: true });
		for (const p of [this.main, ...this.workers, ...this.webhooks])
			fs.writeFileSync(path.join(dir, `${p.role}.log`), p.transcript());
	}

	/** Every process of the cluster: main, the workers, the webhook processes. */
	processes() {
		return [this.main, ...this.workers, ...this.webhooks];
	}

	/**
	 * Each process writes its log to `<dir>/<prefix><role>.log` (e.g. n8n-main.log, n8n-worker-1.log; see
	 * N8nInstance.logTo). Returns the files, in processes() order.
	 */
	logTo(dir, prefix = 'n8n-') {
		return this.processes().map((p) => {
			const file = path.join(dir, `${prefix}${p.role}.log`);
			p.logTo(file);
			return file;
		});
	}

	/** SIGKILL of every running process, synchronously (for a caller that exits at once). */
	killNow() {
		for (const p of this.processes()) p.killNow();
	}

	/** For good: no process of the cluster starts any more (they throw), then stop() (which removes the folders); the log files are closed and kept. */
	async dispose() {
		for (const p of this.processes()) p.closed = true;
		await this.stop();
		for (const p of this.processes()) p.closeLog();
	}

	/** Stops the webhook processes and workers, then main (SIGTERM, SIGKILL after 20 s), drops n8n's database, deletes this cluster's Redis keys and folders. */
	async stop() {
		await Promise.all([...this.webhooks, ...this.workers].map((w) => w.stop()));
		await this.main.stop();
		await this.n8nDatabase.drop().catch((error) => this.log(`dropping ${this.n8nDatabase.name}: ${error.message}`));
		await this.deleteRedisKeys().catch((error) => this.log(`deleting Redis keys ${this.prefix}*: ${error.message}`));
		for (const folder of this.folders) fs.rmSync(folder, { recursive: true, force: true });
	}

	async deleteRedisKeys() {
		// ioredis comes with n8n (resolved from its install, not a dependency of this package)
		const Redis = require(require.resolve('ioredis', { paths: [path.dirname(this.bin)] }));
		const client = new Redis({
			host: this.redis.host,
			port: this.redis.port,
			lazyConnect: true,
			maxRetriesPerRequest: 1,
		});
		await client.connect();
		try {
			let cursor = '0';
			do {
				const [next, keys] = await client.scan(cursor, 'MATCH', `*${this.prefix}*`, 'COUNT', 1000);
				if (keys.length) await client.del(...keys);
				cursor = next;
			} while (cursor !== '0');
		} finally {
			client.disconnect();
		}
	}
}

/**
 * Prepares (does not start) a queue-mode cluster: 1 main + `workers` workers + `webhooks` webhook processes.
 * @param {object} o
 * @param {string} [o.tarball] `npm pack` of this repository (packPackage(); the caller removes it); omitted:
 *                             createInstance() packs one and removes it once installed
 * @param {string} o.bin       n8n's CLI script (ensureN8n())
 * @param {string} o.serverUrl postgres:// URL of a server where a scratch database for n8n is created (dropped by stop())
 * @param {number} [o.workers=2]      worker processes
 * @param {number} [o.webhooks=0]     `n8n webhook` processes (production webhooks are then served by them)
 * @param {boolean} [o.disableProductionMain=webhooks > 0] N8N_DISABLE_PRODUCTION_MAIN_PROCESS on main
 * @param {number} [o.concurrency=10] executions per worker at once (`--concurrency`; n8n warns below 5)
 * @param {{host: string, port: number}} [o.redis] default 127.0.0.1:6379
 * @param {{email: string, firstName: string, lastName: string, password: string}} [o.owner] n8n's owner the
 *                             harness publishes as (default: a generated one; cluster.owner)
 */
async function createQueueCluster({
	tarball,
	bin,
	serverUrl,
	workers = 2,
	webhooks = 0,
	disableProductionMain = webhooks > 0,
	concurrency = 10,
	redis = { host: '127.0.0.1', port: 6379 },
	log = () => {},
	owner,
}) {
	const base = createInstance({ tarball, bin, log });
	const n8nDatabase = await createDatabase(serverUrl, 'contracts_n8n');
	const prefix = `contracts-q-${crypto.randomBytes(4).toString('hex')}`;
	const db = new URL(n8nDatabase.url);
	const clusterEnv = {
		EXECUTIONS_MODE: 'queue',
		QUEUE_BULL_REDIS_HOST: redis.host,
		QUEUE_BULL_REDIS_PORT: String(redis.port),
		QUEUE_BULL_PREFIX: prefix,
		N8N_REDIS_KEY_PREFIX: prefix,
		QUEUE_BULL_GRACEFUL_SHUTDOWN_TIMEOUT: '10',
		// manual executions run on workers too (n8n 2.4.8 warns at start that the default, main, is deprecated)
		OFFLOAD_MANUAL_EXECUTIONS_TO_WORKERS: 'true',
		DB_TYPE: 'postgresdb',
		DB_POSTGRESDB_HOST: db.hostname,
		DB_POSTGRESDB_PORT: db.port || '5432',
		DB_POSTGRESDB_DATABASE: n8nDatabase.name,
		DB_POSTGRESDB_USER: decodeURIComponent(db.username || 'postgres'),
		DB_POSTGRESDB_PASSWORD: decodeURIComponent(db.password || ''),
		N8N_ENCRYPTION_KEY: crypto.randomBytes(24).toString('base64url'),
	};
	const main = new QueueProcess(base.folder, bin, log, 'main', clusterEnv);
	if (owner) main.owner = owner;
	const folders = [base.folder];
	// each process its own user folder whose .n8n/nodes is the one main's package was installed into
	const sharing = (kind, i) => {
		const folder = fs.mkdtempSync(path.join(os.tmpdir(), `contracts-n8n-${kind}${i + 1}-`));
		fs.mkdirSync(path.join(folder, '.n8n'));
		fs.symlinkSync(path.join(base.folder, '.n8n', 'nodes'), path.join(folder, '.n8n', 'nodes'), 'dir');
		folders.push(folder);
		return new QueueProcess(folder, bin, log, `${kind}-${i + 1}`, clusterEnv);
	};
	const workerProcesses = Array.from({ length: workers }, (_, i) => sharing('worker', i));
	const webhookProcesses = Array.from({ length: webhooks }, (_, i) => sharing('webhook', i));
	const cluster = new QueueCluster({
		main,
		workers: workerProcesses,
		webhooks: webhookProcesses,
		n8nDatabase,
		prefix,
		redis,
		bin,
		concurrency,
		folders,
		log,
	});
	if (disableProductionMain) cluster.mainEnv = { N8N_DISABLE_PRODUCTION_MAIN_PROCESS: 'true' };
	return cluster;
}

module.exports = { redisUnavailable, createQueueCluster, QueueCluster, QueueProcess };
