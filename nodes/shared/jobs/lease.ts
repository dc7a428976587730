/**
 * Job leases (issue 26 item 3; docs/retry-safety.md "Jobs: claims and leases"): every n8n process that claims
 * jobs holds one **lease** per database it claims from — a uuid (`lease_id`, written on every job it
 * claims) and a session-level advisory lock on `ops.job_lease_key(lease_id)` (migration 020), held on a
 * dedicated connection (a `pg` Client of its own, never a pooled one) for as long as the process lives.
 *  - A process that dies (SIGKILL, OOM, crash) closes its sockets; PostgreSQL ends the session and drops its
 *    advisory locks at once. Release Stale (ops.job_lease_held, a read of pg_locks) then sees the lease not
 *    held and, after its grace period, gives the jobs back. No heartbeat writes: a process that is alive
 *    keeps its lease however long a step runs (a 10-minute step keeps its jobs).
 *  - A dropped lease connection (network cut, PostgreSQL restart, a terminated backend) reconnects with
 *    capped exponential backoff and jitter (LEASE_RECONNECT_MIN_MS → LEASE_RECONNECT_MAX_MS) and takes the
 *    same lock again (pg_try_advisory_lock: never waits; while the old session still holds it, it retries);
 *    Release Stale's grace period covers that gap. TCP keepalives (client and server side, LEASE_KEEPALIVE_S)
 *    end a session whose peer vanished without closing its socket.
 *  - One lease per process and credential (database, user…): module-level state, found through
 *    `globalThis` so that two copies of this module in one process share it. In queue mode every worker
 *    process has its own (main and webhook processes, which run no execution, open none).
 * Cost: one PostgreSQL connection per process that claims jobs, idle; it is never closed while the process
 * lives (its jobs may still be running), except by `closeJobLeases` (tests, shutdown).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { Client, type ClientConfig, type Pool } from 'pg';
import { ContractError } from '../errors';

/** First and longest wait (ms) between two attempts to connect and take the lease again. */
export const LEASE_RECONNECT_MIN_MS = 250;
export const LEASE_RECONNECT_MAX_MS = 5_000;
/** How long (ms) a claim waits for its process's lease before failing with a retryable 503. */
export const LEASE_READY_TIMEOUT_MS = 10_000;
/** TCP keepalive idle time (s) on the lease connection, both ends (server: tcp_keepalives_idle). */
export const LEASE_KEEPALIVE_S = 10;

/** The fields of a pool's options that name the database and how to reach it. */
const CONNECTION_FIELDS = [
	'connectionString',
	'host',
	'port',
	'database',
	'user',
	'password',
	'ssl',
	'connectionTimeoutMillis',
] as const;

/** One process's lease on one database (see the file header). */
export class JobLease {
	/** The lease id written on the jobs this process claims. */
	readonly id = randomUUID();
	private client?: Client;
	private pending?: Promise<void>;
	private timer?: NodeJS.Timeout;
	private failures = 0;
	private closed = false;
	private waiting = new Set<() => void>();
	/** Times the lock was taken (1 after the first connect; +1 after each reconnect). */
	acquired = 0;

	constructor(private readonly config: ClientConfig) {}

	/** True once close() was called (jobLeaseFor then makes a new lease). */
	get isClosed(): boolean {
		return this.closed;
	}

	/** Whether this process holds the lease's lock right now (as far as it knows). */
	get held(): boolean {
		return this.client !== undefined;
	}

	/**
	 * The lease id, once the lock is held (connects on first use).
	 * @throws ContractError 503 (retryable) when it is not held within `timeoutMs`
	 */
	async ready(timeoutMs = LEASE_READY_TIMEOUT_MS): Promise<string> {
		if (this.client) return this.id;
		if (this.closed) throw unavailable('the lease is closed');
		this.start();
		await new Promise<void>((resolve, reject) => {
			const wake = () => {
				clearTimeout(timer);
				this.waiting.delete(wake);
				resolve();
			};
			const timer = setTimeout(() => {
				this.waiting.delete(wake);
				reject(unavailable(`the job lease was not held within ${timeoutMs} ms`));
			}, timeoutMs);
			this.waiting.add(wake);
		});
		return this.id;
	}

	/** Ends the lease (its lock goes with the session): jobs it holds become releasable. */
	async close(): Promise<void> {
		this.closed = true;
		clearTimeout(this.timer);
		const client = this.client;
		this.client = undefined;
		await this.pending?.catch(() => undefined);
		await client?.end().catch(() => undefined);
	}

	private start(): void {
		if (this.pending || this.timer || this.client || this.closed) return;
		this.pending = this.connect().finally(() => (this.pending = undefined));
	}

	private async connect(): Promise<void> {
		const client = new Client({
			...this.config,
			keepAlive: true,
			keepAliveInitialDelayMillis: LEASE_KEEPALIVE_S * 1000,
			// the server ends the session (and drops the lock) when this end vanished without closing its socket
			options: `-c tcp_keepalives_idle=${LEASE_KEEPALIVE_S} -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3`,
			application_name: 'n8n-nodes-contracts job lease',
		});
		client.on('error', () => this.lost(client));
		client.on('end', () => this.lost(client));
		try {
			await client.connect();
			const { rows } = await client.query<{ held: boolean }>(
				'SELECT pg_try_advisory_lock(ops.job_lease_key($1::uuid)) AS held',
				[this.id],
			);
			// false: the session that held it before a network cut is not gone yet; try again shortly
			if (!rows[0]?.held) throw new Error('the lease lock is still held by an earlier session');
			if (this.closed) throw new Error('closed');
		} catch {
			client.removeAllListeners('end');
			client.on('error', () => undefined);
			await client.end().catch(() => undefined);
			this.retry();
			return;
		}
		this.client = client;
		this.failures = 0;
		this.acquired++;
		// an idle lease must not keep a process (or a test run) alive on its own
		socketOf(client)?.unref();
		for (const wake of [...this.waiting]) wake();
	}

	private lost(client: Client): void {
		if (client !== this.client) return;
		this.client = undefined;
		client.on('error', () => undefined);
		void client.end().catch(() => undefined);
		this.retry();
	}

	private retry(): void {
		if (this.closed || this.timer) return;
		const cap = Math.min(LEASE_RECONNECT_MAX_MS, LEASE_RECONNECT_MIN_MS * 2 ** this.failures);
		this.failures++;
		this.timer = setTimeout(
			() => {
				this.timer = undefined;
				this.start();
			},
			cap / 2 + Math.random() * (cap / 2),
		);
		this.timer.unref();
	}
}

function socketOf(client: Client | undefined): Socket | undefined {
	return (client as unknown as { connection?: { stream?: Socket } } | undefined)?.connection?.stream;
}

function unavailable(message: string): ContractError {
	return ContractError.unavailable(
		message,
		{ code: 'JOB_LEASE_UNAVAILABLE' },
		{ operation: 'connect', table: 'ops.jobs' },
	);
}

const REGISTRY = Symbol.for('n8n-nodes-contracts.jobLeases');
type Registry = Map<string, JobLease>;

function registry(): Registry {
	const holder = globalThis as unknown as Record<symbol, Registry | undefined>;
	return (holder[REGISTRY] ??= new Map());
}

/** The connection settings of `pool` (pg keeps the password as a non-enumerable option). */
function connectionOf(pool: Pool): ClientConfig {
	const options = pool.options as unknown as Record<string, unknown>;
	const config: Record<string, unknown> = {};
	for (const field of CONNECTION_FIELDS) if (options[field] !== undefined) config[field] = options[field];
	return config as ClientConfig;
}

/**
 * This process's lease on the database of `pool` (created on first use, one per credential: same host,
 * port, database, user, password and TLS settings → same lease).
 */
export function jobLeaseFor(pool: Pool): JobLease {
	const config = connectionOf(pool);
	const key = createHash('sha256').update(JSON.stringify(config)).digest('hex');
	const leases = registry();
	let lease = leases.get(key);
	if (!lease || lease.isClosed) {
		lease = new JobLease(config);
		leases.set(key, lease);
	}
	return lease;
}

/** Ends every lease of this process (tests, shutdown). */
export async function closeJobLeases(): Promise<void> {
	const leases = [...registry().values()];
	registry().clear();
	await Promise.all(leases.map((lease) => lease.close()));
}
