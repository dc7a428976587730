/**
 * The bot rows Telegram Ingest has looked up, cached per pool (issue 14: one round trip per update
 * instead of two), with a bound on staleness and invalidation on change:
 *  - an entry is served for at most `BOT_CACHE_TTL_MS` (5 s) after it was read from core.bots;
 *  - only an enabled bot is cached, and only the accepting path uses the cache: a wrong secret, an
 *    unknown key or a disabled bot is always decided on a fresh row (so a new secret or a re-enabled bot
 *    is accepted at once, and refusing never depends on the cache);
 *  - migration 013's triggers NOTIFY 'contracts_bots_changed' on any change to core.bots or
 *    core.tenants (at COMMIT); one dedicated LISTEN connection per pool (module-level, so per n8n
 *    process — in queue mode each main/webhook/worker process has its own cache and its own listener)
 *    clears the pool's whole cache on each notification and on every (re)connect, since notifications
 *    sent while it was down are lost. It reconnects with capped exponential backoff (0.5 s → 30 s, with
 *    jitter) and stops when the pool ends or after `LISTENER_IDLE_MS` without a lookup.
 * So a disabled bot/tenant or a rotated secret is refused within milliseconds of the COMMIT while the
 * listener is up, and within `BOT_CACHE_TTL_MS` in any case. A lookup started before a change never
 * stores its (possibly older) row after the change's notification (generation check).
 * Cost: one extra idle PostgreSQL connection per pool per n8n process (application_name
 * `n8n-nodes-contracts:bots`), outside the pool's Max Connections.
 */
import { Client, type ClientConfig, type Pool } from 'pg';

/** Longest time (ms) a cached bot row is used after it was read. */
export const BOT_CACHE_TTL_MS = 5_000;
/** The channel of migration 013's triggers. */
export const BOTS_CHANNEL = 'contracts_bots_changed';
/** A listener unused for this long (ms) is closed; the next lookup opens it again. */
export const LISTENER_IDLE_MS = 5 * 60_000;
/** Most keys cached per pool (the oldest entry is dropped beyond it). */
const MAX_ENTRIES = 10_000;

/** A row of LOOKUP_BOT. */
export interface Bot {
	bot_id: string;
	tenant_id: string;
	webhook_secret: string;
	enabled: boolean;
}

interface Entry {
	bot: Bot;
	expires: number;
}

/** The LISTEN connection of one pool: clears the cache on each notification and each (re)connect. */
class BotsListener {
	private client: Client | undefined;
	private stopped = false;
	private attempt = 0;
	private timer: NodeJS.Timeout | undefined;
	/** Backend pid of the live connection (null while down); tests terminate it. */
	backendPid: number | null = null;
	/** Connections made so far. */
	connections = 0;

	constructor(
		private readonly config: ClientConfig,
		private readonly onChange: () => void,
	) {}

	start(): void {
		void this.connect();
	}

	stop(): void {
		this.stopped = true;
		if (this.timer) clearTimeout(this.timer);
		this.timer = undefined;
		const client = this.client;
		this.client = undefined;
		this.backendPid = null;
		if (client) void client.end().catch(() => undefined);
	}

	private async connect(): Promise<void> {
		// keepAlive: a half-open connection (NAT, firewall) is noticed and reconnected; the TTL bounds staleness meanwhile
		const client = new Client({ ...this.config, application_name: 'n8n-nodes-contracts:bots', keepAlive: true });
		let dropped = false;
		const drop = () => {
			if (dropped) return;
			dropped = true;
			if (this.client === client) {
				this.client = undefined;
				this.backendPid = null;
			}
			void client.end().catch(() => undefined);
			this.scheduleReconnect();
		};
		client.on('error', drop);
		client.on('end', drop);
		client.on('notification', () => this.onChange());
		try {
			await client.connect();
			// The listener alone must never keep a process alive (tests, CLI): n8n's server does that.
			(client as unknown as { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.();
			await client.query(`LISTEN ${BOTS_CHANNEL}`);
			const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
			if (this.stopped || dropped) {
				void client.end().catch(() => undefined);
				return;
			}
			this.client = client;
			this.backendPid = pid;
			this.connections++;
			this.attempt = 0;
			this.onChange(); // whatever changed while no one listened
		} catch {
			drop();
		}
	}

	private scheduleReconnect(): void {
		if (this.stopped || this.timer) return;
		const delay = Math.min(30_000, 500 * 2 ** this.attempt) * (0.5 + Math.random() * 0.5);
		this.attempt++;
		this.timer = setTimeout(() => {
			this.timer = undefined;
			if (!this.stopped) void this.connect();
		}, delay);
		this.timer.unref();
	}
}

/** The cache of one pool. */
export class BotCache {
	private readonly entries = new Map<string, Entry>();
	private readonly loading = new Map<string, Promise<Bot | undefined>>();
	/** Bumped by every invalidation; a load stores its row only when it is unchanged. */
	private generation = 0;
	/** Invalidations so far (notifications and (re)connects). */
	invalidations = 0;
	private lastUsed = Date.now();
	private idleTimer: NodeJS.Timeout | undefined;
	listener: BotsListener | undefined;

	constructor(private readonly pool: Pool) {}

	/** The cached, enabled bot of `botKey`, if read less than BOT_CACHE_TTL_MS ago. */
	get(botKey: string, now = Date.now()): Bot | undefined {
		this.touch(now);
		const entry = this.entries.get(botKey);
		if (!entry) return undefined;
		if (entry.expires > now) return entry.bot;
		this.entries.delete(botKey);
		return undefined;
	}

	/**
	 * Reads the bot with `read` (one concurrent read per key) and caches it when enabled.
	 * @throws whatever `read` throws (nothing is cached)
	 */
	async load(botKey: string, read: () => Promise<Bot | undefined>): Promise<Bot | undefined> {
		this.touch(Date.now());
		let pending = this.loading.get(botKey);
		if (!pending) {
			const generation = this.generation;
			pending = read().then((bot) => {
				if (bot?.enabled && generation === this.generation) {
					this.entries.delete(botKey);
					this.entries.set(botKey, { bot, expires: Date.now() + BOT_CACHE_TTL_MS });
					if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
				}
				return bot;
			});
			this.loading.set(botKey, pending);
			const clear = () => {
				if (this.loading.get(botKey) === pending) this.loading.delete(botKey);
			};
			pending.then(clear, clear);
		}
		return pending;
	}

	/** Drops every entry (a notification, a (re)connect of the listener). */
	invalidate(): void {
		this.generation++;
		this.invalidations++;
		this.entries.clear();
		this.loading.clear();
	}

	/** Closes the listener and empties the cache. */
	close(): void {
		this.listener?.stop();
		this.listener = undefined;
		if (this.idleTimer) clearInterval(this.idleTimer);
		this.idleTimer = undefined;
		this.invalidate();
	}

	private touch(now: number): void {
		this.lastUsed = now;
		if (this.listener) return;
		this.listener = new BotsListener((this.pool as unknown as { options: ClientConfig }).options, () =>
			this.invalidate(),
		);
		this.listener.start();
		this.idleTimer = setInterval(
			() => {
				const ended = (this.pool as unknown as { ending?: boolean }).ending === true;
				if (ended || Date.now() - this.lastUsed > LISTENER_IDLE_MS) this.close();
			},
			Math.min(LISTENER_IDLE_MS, 10_000),
		);
		this.idleTimer.unref();
	}
}

const caches = new WeakMap<Pool, BotCache>();

/** The bot cache of a pool (created on first use; its listener starts then). */
export function botCacheOf(pool: Pool): BotCache {
	let cache = caches.get(pool);
	if (!cache) {
		cache = new BotCache(pool);
		caches.set(pool, cache);
	}
	return cache;
}
