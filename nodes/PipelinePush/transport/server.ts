/**
 * The Pipeline Push WebSocket server (seed 001 §3 step 4, variant B) on `ws://<host>:<port>/api/ws`,
 * built on the `ws` library. One instance per active Pipeline Push trigger; all state (connections,
 * subscriptions) lives in the instance, none at module level, and the truth is always the database: a
 * run is pushed only after it is read back COMPLETED or FAILED with the subscriber's own user_id.
 *
 * Subscription lifecycle: registered at once (so a notification during the ownership check is not lost),
 * then checked in one statement; refused ids are dropped, owned ids acknowledged (`subscribed`) and any
 * already finished run pushed at once (catch-up). A subscription ends when its answer is sent (each
 * answer once per subscription) or its connection closes. `check(ids)` (notifications) and `recheckAll()`
 * (after a LISTEN reconnect, and periodically) read the finished runs among the pending ids and push them.
 */
import type { IncomingMessage } from 'node:http';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import {
	parseClientMessage,
	parseQueryString,
	refuse,
	type ClientMessage,
	type ProtocolLimits,
	type Refusal,
} from './protocol';
import { answerOf, type PushedAnswer, type RunRow, type RunStore } from './runs';
import { verifyPushToken } from './token';

export interface PushLogger {
	info(message: string): void;
	warn(message: string): void;
}

export interface PushServerOptions extends ProtocolLimits {
	port: number;
	host: string;
	/** The Contracts Push API credential's secret (verifies tokens; never logged). */
	secret: string;
	/** Most subscriptions pending on one connection. */
	maxSubscriptions: number;
	/** Most open connections; more are closed at once with TOO_MANY_CONNECTIONS (close code 1013). */
	maxConnections: number;
	/** A connection that has not authenticated after this many ms is closed (4408). */
	authTimeoutMs: number;
	/** Ping interval (ms); a peer that missed the previous pong is dropped. */
	heartbeatMs: number;
	store: RunStore;
	logger: PushLogger;
	/** Called after each answer is sent (the node emits it in manual mode or when asked to). */
	onDelivered?(answer: PushedAnswer, userId: string): void;
}

/** The WebSocket path the server answers on. */
export const PUSH_PATH = '/api/ws';
/** Hard cap of a frame at the ws layer (bytes): beyond it ws closes the connection with 1009. */
export const HARD_MAX_PAYLOAD = 1024 * 1024;
/** Close codes: bad token, no authentication in time. */
export const CLOSE_UNAUTHORIZED = 4401;
export const CLOSE_AUTH_TIMEOUT = 4408;

interface Session {
	ws: WebSocket;
	userId: string | null;
	/** Pending subscriptions (request ids) of this connection. */
	pending: Set<string>;
	alive: boolean;
	authTimer?: NodeJS.Timeout;
	remote: string;
	/** Refusals logged for this connection (at most MAX_LOGGED_REFUSALS, so a hostile client cannot flood the log). */
	logged: number;
}

/** Refusals logged per connection; later ones are still answered, and counted in one last log line. */
export const MAX_LOGGED_REFUSALS = 20;

/** Log-safe rendering of a client-chosen string (quoted, cut, escapes visible). */
function shown(value: string): string {
	return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

export class PushServer {
	private wss?: WebSocketServer;
	private readonly sessions = new Set<Session>();
	/** request id → the sessions waiting for it. */
	private readonly waiting = new Map<string, Set<Session>>();
	private heartbeat?: NodeJS.Timeout;

	constructor(private readonly options: PushServerOptions) {}

	/** Listening address (port resolved when 0 was asked for). */
	get port(): number {
		const address = this.wss?.address();
		return typeof address === 'object' && address ? address.port : this.options.port;
	}

	/** Number of pending subscriptions over all connections. */
	get pendingCount(): number {
		let n = 0;
		for (const s of this.sessions) n += s.pending.size;
		return n;
	}

	/**
	 * Starts listening.
	 * @throws Error "port <p> on <host> is in use …" (EADDRINUSE) or the listen error
	 */
	async start(): Promise<void> {
		const wss = new WebSocketServer({
			host: this.options.host,
			port: this.options.port,
			path: PUSH_PATH,
			maxPayload: HARD_MAX_PAYLOAD,
			clientTracking: false,
			perMessageDeflate: false,
		});
		await new Promise<void>((resolve, reject) => {
			wss.once('listening', resolve);
			wss.once('error', (error: NodeJS.ErrnoException) =>
				reject(
					error.code === 'EADDRINUSE'
						? new Error(
								`Pipeline Push: port ${this.options.port} on ${this.options.host} is in use (another active Pipeline Push, or another server); choose another Port`,
							)
						: error,
				),
			);
		}).catch(async (error) => {
			await new Promise((r) => wss.close(r));
			throw error;
		});
		wss.on('error', (error) => this.options.logger.warn(`Pipeline Push: server error: ${error.message}`));
		wss.on('connection', (ws, request) => this.accept(ws, request));
		this.wss = wss;
		this.heartbeat = setInterval(() => this.ping(), this.options.heartbeatMs);
		this.heartbeat.unref?.();
	}

	/** Closes every connection (1001 going away) and the port. */
	async stop(): Promise<void> {
		if (this.heartbeat) clearInterval(this.heartbeat);
		for (const session of [...this.sessions]) {
			session.ws.close(1001, 'server stopping');
			setTimeout(() => session.ws.terminate(), 1000).unref?.();
			this.forget(session);
		}
		const wss = this.wss;
		this.wss = undefined;
		if (wss) await new Promise<void>((resolve) => wss.close(() => resolve()));
	}

	/** Pushes the finished runs among `ids` to their pending subscribers (notifications). */
	async check(ids: Iterable<string>): Promise<void> {
		const wanted = [...new Set(ids)].filter((id) => this.waiting.has(id));
		for (let i = 0; i < wanted.length; i += 1000) {
			const rows = await this.options.store.finished(wanted.slice(i, i + 1000));
			for (const row of rows) this.deliverToAll(row);
		}
	}

	/** Re-checks every pending subscription (after a LISTEN reconnect; periodically). */
	async recheckAll(): Promise<void> {
		await this.check([...this.waiting.keys()]);
	}

	private accept(ws: WebSocket, request: IncomingMessage): void {
		const remote = request.socket.remoteAddress ?? 'unknown';
		if (this.sessions.size >= this.options.maxConnections) {
			this.send(ws, refuse('TOO_MANY_CONNECTIONS', `at most ${this.options.maxConnections} connections`));
			ws.close(1013, 'too many connections');
			return;
		}
		const session: Session = { ws, userId: null, pending: new Set(), alive: true, remote, logged: 0 };
		this.sessions.add(session);
		session.authTimer = setTimeout(() => {
			if (session.userId !== null) return;
			this.send(ws, refuse('NOT_AUTHENTICATED', `authenticate within ${this.options.authTimeoutMs} ms`));
			ws.close(CLOSE_AUTH_TIMEOUT, 'authentication timeout');
		}, this.options.authTimeoutMs);
		session.authTimer.unref?.();
		ws.on('pong', () => (session.alive = true));
		ws.on('close', () => this.forget(session));
		ws.on('error', () => this.forget(session));
		ws.on('message', (data: RawData, isBinary: boolean) => {
			const frame = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
			const parsed = parseClientMessage(frame, isBinary, this.options);
			if (!parsed.ok) return this.refuseMessage(session, parsed.refusal);
			void this.handle(session, parsed.message);
		});
		const query = parseQueryString((request.url ?? '').split('?')[1] ?? '', this.options);
		if (query && !query.ok) this.refuseMessage(session, query.refusal);
		else if (query) void this.handle(session, query.message);
	}

	/** Answers `refusal` and logs it (warn) with the connection's user_id, or the one it claimed; never a token. */
	private refuseMessage(session: Session, refusal: Refusal, claimed?: string): void {
		this.send(session.ws, refusal);
		if (++session.logged > MAX_LOGGED_REFUSALS) return;
		const more = session.logged === MAX_LOGGED_REFUSALS ? ' (further refusals on this connection are not logged)' : '';
		this.options.logger.warn(
			`Pipeline Push: refused a message from ${session.remote}${session.userId !== null ? ` (user_id ${shown(session.userId)})` : claimed !== undefined ? ` (claiming user_id ${shown(claimed)})` : ''}: ${refusal.code} ${refusal.message}${more}`,
		);
	}

	private async handle(session: Session, message: ClientMessage): Promise<void> {
		try {
			if (message.user_id !== undefined && !this.authenticate(session, message.user_id, message.token ?? '')) return;
			if (message.type === 'auth') return;
			if (session.userId === null)
				return this.refuseMessage(
					session,
					refuse('NOT_AUTHENTICATED', 'authenticate first: {"type":"auth","user_id":…,"token":…}'),
				);
			await this.subscribe(session, message.request_ids);
		} catch (error) {
			this.options.logger.warn(`Pipeline Push: ${(error as Error).message}`);
		}
	}

	/** True when authenticated as `userId`; otherwise refuses (and closes on a bad token). */
	private authenticate(session: Session, userId: string, token: string): boolean {
		if (session.userId !== null) {
			if (session.userId === userId) return true;
			this.refuseMessage(session, refuse('UNAUTHORIZED', 'user_id: this connection is authenticated as another user'));
			return false;
		}
		if (!verifyPushToken(userId, token, this.options.secret)) {
			// the token is never logged, nor echoed
			this.refuseMessage(session, refuse('UNAUTHORIZED', 'token: not valid for this user_id'), userId);
			session.ws.close(CLOSE_UNAUTHORIZED, 'unauthorized');
			return false;
		}
		session.userId = userId;
		if (session.authTimer) clearTimeout(session.authTimer);
		this.send(session.ws, { type: 'authenticated', user_id: userId });
		return true;
	}

	private async subscribe(session: Session, ids: string[]): Promise<void> {
		const fresh = ids.filter((id) => !session.pending.has(id));
		if (session.pending.size + fresh.length > this.options.maxSubscriptions)
			return this.refuseMessage(
				session,
				refuse(
					'TOO_MANY_SUBSCRIPTIONS',
					`request_ids: at most ${this.options.maxSubscriptions} pending subscriptions per connection (${session.pending.size} pending)`,
				),
			);
		for (const id of fresh) this.register(session, id);
		let rows: RunRow[];
		try {
			rows = await this.options.store.owned(fresh, session.userId!);
		} catch (error) {
			for (const id of fresh) this.unregister(session, id);
			this.options.logger.warn(`Pipeline Push: subscription check failed: ${(error as Error).message}`);
			return this.send(
				session.ws,
				refuse('UNAVAILABLE', 'the database is not reachable; subscribe again in a few seconds', fresh),
			);
		}
		if (session.ws.readyState !== WebSocket.OPEN) return;
		const owned = new Set(rows.map((r) => r.id));
		const refused = fresh.filter((id) => !owned.has(id));
		for (const id of refused) this.unregister(session, id);
		if (refused.length)
			this.refuseMessage(
				session,
				refuse('SUBSCRIPTION_REFUSED', 'request_ids: no run of this user has these ids', refused),
			);
		const accepted = ids.filter((id) => !refused.includes(id));
		if (accepted.length) this.send(session.ws, { type: 'subscribed', request_ids: accepted });
		for (const row of rows) this.deliver(session, row);
	}

	private register(session: Session, id: string): void {
		session.pending.add(id);
		let set = this.waiting.get(id);
		if (!set) this.waiting.set(id, (set = new Set()));
		set.add(session);
	}

	private unregister(session: Session, id: string): void {
		session.pending.delete(id);
		const set = this.waiting.get(id);
		if (!set) return;
		set.delete(session);
		if (set.size === 0) this.waiting.delete(id);
	}

	private deliverToAll(row: RunRow): void {
		for (const session of [...(this.waiting.get(row.id) ?? [])]) this.deliver(session, row);
	}

	/** Sends `row`'s answer to `session` once, if it is finished, pending there and `session`'s own. */
	private deliver(session: Session, row: RunRow): void {
		if (!session.pending.has(row.id) || session.userId !== row.user_id) return;
		const answer = answerOf(row);
		if (!answer) return;
		this.unregister(session, row.id);
		this.send(session.ws, answer);
		this.options.onDelivered?.(answer, row.user_id);
	}

	private send(ws: WebSocket, message: unknown): void {
		if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
	}

	private forget(session: Session): void {
		if (!this.sessions.delete(session)) return;
		if (session.authTimer) clearTimeout(session.authTimer);
		for (const id of [...session.pending]) this.unregister(session, id);
	}

	private ping(): void {
		for (const session of this.sessions) {
			if (!session.alive) {
				session.ws.terminate();
				this.forget(session);
				continue;
			}
			session.alive = false;
			session.ws.ping();
		}
	}
}
