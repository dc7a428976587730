/**
 * A robust LISTEN on 'pipeline_events' (FACTS: LISTEN/NOTIFY with pg): a dedicated `pg` client (never a
 * pooled one), reconnect with capped exponential backoff and jitter after any error or end, LISTEN again
 * on every connection, and after every (re)connect a catch-up query that emits the runs a lost
 * notification would have announced: every run in a waiting status, and every run changed since the
 * connection was lost. Events may repeat (a notification and its catch-up): consumers capture, which is
 * idempotent, so nothing runs twice and nothing is left behind.
 */
import { Client, type ClientConfig, type QueryResult } from 'pg';
import { CATCH_UP_RUNS } from '../statements/pipelineRuns';

export interface PipelineEvent {
	id: string;
	status: string;
	/** INSERT / UPDATE from the trigger; CATCHUP from the query after a (re)connect. */
	operation: string;
}

export interface ListenerOptions {
	/** Channel of the notify_pipeline_change trigger. */
	channel?: string;
	/** Emit only these statuses (empty: all). */
	statuses?: string[];
	/** Statuses that wait for a worker (caught up on every connect). */
	waitingStatuses?: string[];
	/** First reconnect delay and its cap, ms. */
	initialBackoffMs?: number;
	maxBackoffMs?: number;
	/**
	 * Page size of the catch-up (default 1000): the catch-up reads page after page, oldest change first,
	 * until it has every matching run, and emits one onEvents batch per page.
	 */
	catchUpLimit?: number;
	onEvents(events: PipelineEvent[]): void;
	/** Connection problems (reported, then retried). */
	onError?(error: Error): void;
	/**
	 * After every successful connect (LISTEN done, catch-up emitted); `reconnected` is false for the first
	 * one. Pipeline Push re-checks its pending subscriptions here. Optional: without it nothing changes.
	 */
	onConnect?(reconnected: boolean): void;
}

/** Margin (ms) subtracted from the disconnect time, so a change committed just before it is caught up. */
const CATCH_UP_MARGIN_MS = 5_000;

export class PipelineListener {
	private client: Client | undefined;
	private stopped = false;
	private attempt = 0;
	private timer: NodeJS.Timeout | undefined;
	private lostAt: Date | null = null;
	/** Backend pid of the current connection (tests terminate it). */
	backendPid: number | null = null;
	/** Connections made so far (1 after start). */
	connections = 0;

	constructor(
		private readonly config: ClientConfig,
		private readonly options: ListenerOptions,
	) {}

	/**
	 * Connects, LISTENs and catches up once; later failures reconnect by themselves.
	 * @throws the first connection's error (wrong credentials, unreachable server): nothing keeps running
	 */
	async start(): Promise<void> {
		this.stopped = false;
		await this.connect(true);
	}

	async stop(): Promise<void> {
		this.stopped = true;
		if (this.timer) clearTimeout(this.timer);
		const client = this.client;
		this.client = undefined;
		if (client) await client.end().catch(() => undefined);
	}

	private async connect(first = false): Promise<void> {
		const client = new Client(this.config);
		let dropped = false;
		let connected = false;
		const drop = (error?: Error) => {
			if (dropped) return;
			dropped = true;
			if (this.client === client) this.client = undefined;
			if (connected) this.lostAt ??= new Date();
			if (error) this.options.onError?.(error);
			client.end().catch(() => undefined);
			if (!(first && !connected)) this.scheduleReconnect();
		};
		client.on('error', (error) => drop(error));
		client.on('end', () => drop());
		client.on('notification', (message) => {
			if (!message.payload) return;
			try {
				const event = JSON.parse(message.payload) as PipelineEvent | null;
				// a payload that is not a run event (`null`, a number, no id…) is not ours: ignored
				if (typeof event?.id !== 'string' || typeof event.status !== 'string') return;
				if (this.wanted(event.status)) this.options.onEvents([event]);
			} catch (error) {
				this.options.onError?.(error as Error);
			}
		});
		try {
			await client.connect();
			await client.query(`LISTEN ${client.escapeIdentifier(this.options.channel ?? 'pipeline_events')}`);
			this.backendPid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
			const since = this.lostAt ? new Date(this.lostAt.getTime() - CATCH_UP_MARGIN_MS) : null;
			const pages = await this.catchUp(client, since);
			if (this.stopped) {
				await client.end().catch(() => undefined);
				return;
			}
			this.client = client;
			connected = true;
			this.connections++;
			this.attempt = 0;
			this.lostAt = null;
			for (const page of pages) this.options.onEvents(page);
			this.options.onConnect?.(this.connections > 1);
		} catch (error) {
			drop(error as Error);
			if (first) throw error;
		}
	}

	/** Every run the catch-up must deliver, page by page (see CATCH_UP_RUNS, shared/statements/pipelineRuns.ts). */
	private async catchUp(client: Client, since: Date | null): Promise<PipelineEvent[][]> {
		const limit = this.options.catchUpLimit ?? 1000;
		const pages: PipelineEvent[][] = [];
		// the cursor is updated_at as PostgreSQL prints it (microseconds kept: a JS Date would cut them)
		let after: { cursor: string; id: string } | null = null;
		for (;;) {
			const result: QueryResult<PipelineEvent & { cursor: string }> = await client.query(CATCH_UP_RUNS, [
				this.options.waitingStatuses ?? ['NEW', 'ANALYZED', 'READY'],
				since,
				this.options.statuses ?? [],
				limit,
				after?.cursor ?? null,
				after?.id ?? null,
			]);
			const rows = result.rows;
			if (rows.length) pages.push(rows.map(({ id, status, operation }) => ({ id, status, operation })));
			if (rows.length < limit || this.stopped) return pages;
			after = rows[rows.length - 1];
		}
	}

	private wanted(status: string): boolean {
		const statuses = this.options.statuses ?? [];
		return statuses.length === 0 || statuses.includes(status);
	}

	private scheduleReconnect(): void {
		if (this.stopped || this.timer) return;
		const base = this.options.initialBackoffMs ?? 500;
		const cap = this.options.maxBackoffMs ?? 30_000;
		const delay = Math.min(cap, base * 2 ** this.attempt) * (0.5 + Math.random() * 0.5);
		this.attempt++;
		this.timer = setTimeout(() => {
			this.timer = undefined;
			if (!this.stopped) void this.connect().catch(() => undefined);
		}, delay);
		this.timer.unref?.();
	}
}
