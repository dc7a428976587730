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
 *    Release Stale's grace period covers that gap; each (re)acquire forgets the lease's recorded absence
 *    (LEASE_LOCK), so short drops are never added up.
 *  - A half-open connection (the server's session, and the lock, gone while this end sees nothing): every
 *    LEASE_PROBE_MS the lease connection asks the server whether THIS session still holds the lock
 *    (LEASE_PROBE, pid-checked: also catches a pooler that moved the session), with a LEASE_PROBE_TIMEOUT_MS
 *    timeout; a failure, a timeout or "not held" drops the connection and reconnects. The claim statement
 *    also checks the lock (CLAIM_JOBS' lease gate). Client-side TCP keepalive (LEASE_KEEPALIVE_S idle; the
 *    probe interval/count are the OS's) is a second net; no server settings are sent (a pooler refuses them).
 *  - Needs a direct (session) connection to PostgreSQL: through a transaction-pooling PgBouncer the lock
 *    would belong to a server backend, not to this process (docs/scaling-out.md). The probe detects a lock
 *    that vanished; the claim then answers 503.
 *  - The cause of the last failure (SQLSTATE or errno, no message text) is kept and put in the 503's details.
 *  - One lease per process and credential (database, user…): module-level state, found through
 *    `globalThis` so that two copies of this module in one process share it. In queue mode every worker
 *    process has its own (main and webhook processes, which run no execution, open none).
 * Cost: one PostgreSQL connection per process that claims jobs, idle but for a probe every 5 s; it is closed
 * only when unused for LEASE_IDLE_CLOSE_MS with no claim in flight and no running job under it (a credential
 * no longer used; the next claim opens a new lease), or by `closeJobLeases` (tests, shutdown).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { Client, type ClientConfig, type Pool, type QueryConfig } from 'pg';
import { ContractError } from '../errors';
import { LEASE_LOCK, LEASE_PROBE, LEASE_RUNNING_JOBS } from '../statements/jobs';

/** First and longest wait (ms) between two attempts to connect and take the lease again. */
export const LEASE_RECONNECT_MIN_MS = 250;
export const LEASE_RECONNECT_MAX_MS = 5_000;
/** How long (ms) a claim waits for its process's lease before failing with a retryable 503. */
export const LEASE_READY_TIMEOUT_MS = 10_000;
/** TCP keepalive idle time (s) on the lease connection (client side only). */
export const LEASE_KEEPALIVE_S = 10;
/** How often (ms) a held lease asks the server whether its session still holds the lock. */
export const LEASE_PROBE_MS = 5_000;
/** A lease unused this long (ms) and holding no running job is closed (a credential no longer used). */
export const LEASE_IDLE_CLOSE_MS = 600_000;
/** How long (ms) a probe may take before the connection is taken for dead (half-open) and replaced. */
export const LEASE_PROBE_TIMEOUT_MS = 3_000;

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
	private probeTimer?: NodeJS.Timeout;
	private probing = false;
	private failures = 0;
	/** SQLSTATE or errno (or one of this file's codes) of the last failure; never a message text. */
	lastCause?: string;
	private closed = false;
	private waiting = new Set<() => void>();
	/** Times the lock was taken (1 after the first connect; +1 after each reconnect). */
	acquired = 0;

	private inFlight = 0;
	private lastUsed = Date.now();
	private readonly probeMs: number;
	private readonly idleCloseMs: number;

	/**
	 * @param options.probeMs how often (ms) a held lease probes its lock (default LEASE_PROBE_MS)
	 * @param options.idleCloseMs a lease unused this long (ms) and holding no running job is closed at its next
	 *   probe (default LEASE_IDLE_CLOSE_MS; e.g. the lease of a credential no longer used)
	 */
	constructor(
		private readonly config: ClientConfig,
		options: { probeMs?: number; idleCloseMs?: number } = {},
	) {
		this.probeMs = options.probeMs ?? LEASE_PROBE_MS;
		this.idleCloseMs = options.idleCloseMs ?? LEASE_IDLE_CLOSE_MS;
	}

	/**
	 * Runs `claim` with the lease id once the lock is held (see ready()); while it runs the lease is in use
	 * (never closed as idle). @throws ContractError 503 as ready(), or what `claim` throws
	 */
	async use<T>(claim: (leaseId: string) => Promise<T>, timeoutMs = LEASE_READY_TIMEOUT_MS): Promise<T> {
		this.inFlight++;
		try {
			return await claim(await this.ready(timeoutMs));
		} finally {
			this.inFlight--;
			this.lastUsed = Date.now();
		}
	}

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
		this.lastUsed = Date.now();
		if (this.client) return this.id;
		if (this.closed) throw unavailable('the lease is closed', 'LEASE_CLOSED');
		this.start();
		await new Promise<void>((resolve, reject) => {
			const wake = () => {
				clearTimeout(timer);
				this.waiting.delete(wake);
				resolve();
			};
			const timer = setTimeout(() => {
				this.waiting.delete(wake);
				reject(unavailable(`the job lease was not held within ${timeoutMs} ms`, this.lastCause));
			}, timeoutMs);
			this.waiting.add(wake);
		});
		return this.id;
	}

	/** Ends the lease (its lock goes with the session): jobs it holds become releasable. */
	async close(): Promise<void> {
		this.closed = true;
		clearTimeout(this.timer);
		clearInterval(this.probeTimer);
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
		// no `options` (server settings): PgBouncer refuses them and the lease would never connect
		const client = new Client({
			...this.config,
			keepAlive: true,
			keepAliveInitialDelayMillis: LEASE_KEEPALIVE_S * 1000,
			application_name: 'n8n-nodes-contracts job lease',
		});
		client.on('error', (error) => this.lost(client, causeOf(error)));
		client.on('end', () => this.lost(client, 'CONNECTION_ENDED'));
		try {
			await client.connect();
			const { rows } = await client.query<{ held: boolean }>({
				text: LEASE_LOCK,
				values: [this.id],
				query_timeout: LEASE_PROBE_TIMEOUT_MS,
			} as QueryConfig);
			// false: the session that held it before a network cut is not gone yet; try again shortly
			if (!rows[0]?.held) throw Object.assign(new Error('lease lock held elsewhere'), { code: 'LOCK_HELD_ELSEWHERE' });
			if (this.closed) throw new Error('closed');
		} catch (error) {
			if (!this.closed) this.lastCause = causeOf(error);
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
		clearInterval(this.probeTimer);
		this.probeTimer = setInterval(() => void this.probe(), this.probeMs);
		this.probeTimer.unref();
		for (const wake of [...this.waiting]) wake();
	}

	/**
	 * Asks the server whether this session still holds the lock (LEASE_PROBE); a failure, a timeout (a
	 * half-open connection) or "not held" drops the connection and reconnects. Resolves to whether it held.
	 */
	async probe(): Promise<boolean> {
		const client = this.client;
		if (!client || this.probing) return client !== undefined;
		this.probing = true;
		try {
			const { rows } = await client.query<{ held: boolean }>({
				text: LEASE_PROBE,
				values: [this.id],
				query_timeout: LEASE_PROBE_TIMEOUT_MS,
			} as QueryConfig);
			if (rows[0]?.held) {
				await this.closeIfIdle(client);
				return true;
			}
			this.lost(client, 'LOCK_NOT_HELD');
		} catch (error) {
			this.lost(client, causeOf(error));
		} finally {
			this.probing = false;
		}
		return false;
	}

	/** Closes the lease when unused for idleCloseMs, no claim in flight and no running job under it. */
	private async closeIfIdle(client: Client): Promise<void> {
		const since = this.lastUsed;
		if (this.inFlight > 0 || Date.now() - since < this.idleCloseMs) return;
		const { rows } = await client.query<{ busy: boolean }>({
			text: LEASE_RUNNING_JOBS,
			values: [this.id],
			query_timeout: LEASE_PROBE_TIMEOUT_MS,
		} as QueryConfig);
		// nothing may have used it meanwhile (a claim starts with inFlight++, synchronously)
		if (rows[0]?.busy !== false || this.inFlight > 0 || this.lastUsed !== since || this.client !== client) return;
		this.lastCause = 'IDLE_CLOSED';
		void this.close();
	}

	/** The claim statement found the lock not held on the server: drop this connection and take it again. */
	notHeld(): void {
		if (this.client) this.lost(this.client, 'LOCK_NOT_HELD');
	}

	private lost(client: Client, cause: string): void {
		if (client !== this.client) return;
		this.client = undefined;
		this.lastCause = cause;
		clearInterval(this.probeTimer);
		this.probeTimer = undefined;
		client.on('error', () => undefined);
		// a half-open socket: end() would wait for a FIN that never comes
		socketOf(client)?.destroy();
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

/**
 * The SQLSTATE (pg), errno code (ECONNREFUSED…) or a code of this file, of a lease failure; never the
 * message (it may name hosts or users). "query timeout" (pg's query_timeout) → PROBE_TIMEOUT.
 */
function causeOf(error: unknown): string {
	const code = (error as { code?: unknown } | undefined)?.code;
	if (typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code)) return code;
	if (error instanceof Error && /query read timeout|timeout/i.test(error.message)) return 'PROBE_TIMEOUT';
	return 'UNKNOWN';
}

function unavailable(message: string, cause?: string): ContractError {
	return ContractError.unavailable(
		message,
		{ code: 'JOB_LEASE_UNAVAILABLE', ...(cause ? { cause } : {}) },
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
	for (const [k, l] of leases) if (l.isClosed) leases.delete(k);
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
