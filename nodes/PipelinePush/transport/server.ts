/**
 * The Pipeline Push WebSocket server (seed 001 §3 step 4, variant B) on `ws://<host>:<port>/api/ws`,
 * built on the `ws` library. One instance per active Pipeline Push trigger; all state (connections,
 * subscriptions) lives in the instance, none at module level, and the truth is always the database: a
 * run is pushed only after it is read back COMPLETED or FAILED with the subscriber's own user_id.
 *
 * Subscription lifecycle: a connection's messages are handled one at a time, in order (so one connection
 * runs at most one ownership query at a time, and a second subscribe of an id sees the first one's
 * outcome). New ids are registered at once (so a notification during the ownership check is not lost),
 * then checked in one statement; refused ids are dropped, only ids whose ownership is confirmed are
 * acknowledged (`subscribed`) and any already finished run pushed at once (catch-up). A subscribe with
 * no new id runs no query. A subscription ends when its answer is sent (each answer once per
 * subscription) or its connection closes. `check(ids)` (notifications) and `recheckAll()`
 * (after a LISTEN reconnect, and periodically) read the finished runs among the pending ids and push them.
 *
 * Resource bounds (security review H1–H3, M4, M5): the server owns its `http.Server` (headers and request
 * timeouts, a cap on raw TCP sockets); a connection is refused with HTTP 503 before the upgrade when
 * Max Connections sessions are open or Max Unauthenticated sessions are waiting for auth; each connection
 * may send MESSAGE_BURST messages at once and MESSAGES_PER_SECOND on average (more: RATE_LIMITED); a
 * connection whose unsent output exceeds MAX_BUFFERED_BYTES is terminated; `stop()` ends within
 * STOP_TIMEOUT_MS whatever the peers do.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import {
	logSafe,
	parseClientMessage,
	parseQueryString,
	refuse,
	type ClientMessage,
	type ProtocolLimits,
	type Refusal,
} from './protocol';
import { answerOf, type PushedAnswer, type RunRow, type RunStore } from './runs';
import { checkPushToken, CLOCK_SKEW_SECONDS } from './token';

export interface PushLogger {
	info(message: string): void;
	warn(message: string): void;
}

export interface PushServerOptions extends ProtocolLimits {
	port: number;
	host: string;
	/** The Contracts Push API credential's secret (verifies tokens; never logged). */
	secret: string;
	/**
	 * Greatest token lifetime accepted (seconds from now to the token's expiry; default
	 * DEFAULT_MAX_TOKEN_LIFETIME_SECONDS, 1 day): a token minted for longer is refused (UNAUTHORIZED).
	 */
	maxTokenLifetimeSeconds?: number;
	/** Clock skew allowed on a token's expiry (seconds; default CLOCK_SKEW_SECONDS, 60; tests shorten it). */
	clockSkewSeconds?: number;
	/**
	 * Whether the connection URL may carry user_id, token and request_id (default false: the query form is
	 * refused with INVALID_MESSAGE, because a query string ends up in proxy access logs).
	 */
	allowQueryToken?: boolean;
	/** Most subscriptions pending on one connection. */
	maxSubscriptions: number;
	/**
	 * Most open WebSocket connections. Further upgrades are answered HTTP 503 before the upgrade; the raw
	 * TCP sockets of the HTTP server are capped at maxConnections + maxUnauthenticated (beyond, the kernel
	 * connection is dropped at once).
	 */
	maxConnections: number;
	/** Most connections not yet authenticated (default min(maxConnections, 1000)); more: HTTP 503. */
	maxUnauthenticated?: number;
	/** A connection that has not authenticated after this many ms is closed (4408). */
	authTimeoutMs: number;
	/** An HTTP upgrade request must arrive complete within this many ms (default 10 s), else its socket is closed. */
	handshakeTimeoutMs?: number;
	/** Messages one connection may send at once (default MESSAGE_BURST), and on average per second after (default MESSAGES_PER_SECOND). */
	messageBurst?: number;
	messagesPerSecond?: number;
	/** Ping interval (ms); a peer that missed the previous pong is dropped. */
	heartbeatMs: number;
	store: RunStore;
	logger: PushLogger;
	/**
	 * Called after an answer is sent (the node emits it in manual mode or when asked to): at most once per
	 * request id and connection, however often that connection subscribes again.
	 */
	onDelivered?(answer: PushedAnswer, userId: string): void;
}

/** The WebSocket path the server answers on. */
export const PUSH_PATH = '/api/ws';
/** Hard cap of a frame at the ws layer (bytes): beyond it ws closes the connection with 1009. */
export const HARD_MAX_PAYLOAD = 1024 * 1024;
/** Close codes: bad token, no authentication in time. */
export const CLOSE_UNAUTHORIZED = 4401;
export const CLOSE_AUTH_TIMEOUT = 4408;
/**
 * Most unsent output per connection (bytes, ws's `bufferedAmount`: the socket's write queue). Nothing is
 * sent to a connection above it: it is terminated (a client that does not read cannot grow the server's
 * memory by more than this plus one message).
 */
export const MAX_BUFFERED_BYTES = 1024 * 1024;
/** Messages a connection may send at once, and on average per second after that (more: RATE_LIMITED). */
export const MESSAGE_BURST = 20;
export const MESSAGES_PER_SECOND = 5;
/** Default time for a complete HTTP upgrade request (ms). */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;
/** stop() resolves within this time (ms), whatever the peers do; close frames get STOP_GRACE_MS of it. */
export const STOP_TIMEOUT_MS = 3_000;
export const STOP_GRACE_MS = 500;
/** Longest delay setTimeout takes (ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Request ids remembered per connection for "emitted once" (the oldest is forgotten beyond it). */
export const MAX_EMITTED_IDS = 1000;

interface Session {
	ws: WebSocket;
	userId: string | null;
	/** Pending subscriptions (request ids) of this connection. */
	pending: Set<string>;
	alive: boolean;
	authTimer?: NodeJS.Timeout;
	/** Closes the connection (4401) when its token expires (+ CLOCK_SKEW_SECONDS); reset by a fresh auth. */
	expiryTimer?: NodeJS.Timeout;
	remote: string;
	/** Malformed-message refusals logged for this connection (at most MAX_LOGGED_REFUSALS). */
	logged: number;
	/** Refusals not logged (over the cap), reported in one line when the connection closes. */
	unlogged: number;
	/** The connection's messages, handled one at a time. */
	queue: Promise<void>;
	/** Token bucket of the message rate limit. */
	tokens: number;
	refilled: number;
	/** Request ids already handed to onDelivered on this connection. */
	emitted: Set<string>;
}

/**
 * Malformed-message refusals logged per connection (INVALID_MESSAGE, MESSAGE_TOO_LARGE,
 * TOO_MANY_SUBSCRIPTIONS, NOT_AUTHENTICATED, RATE_LIMITED); later ones are still answered, and counted in
 * one line when the connection closes. UNAUTHORIZED and SUBSCRIPTION_REFUSED are always logged, with the ids.
 */
export const MAX_LOGGED_REFUSALS = 20;

/** Refusals that are always logged: they are what an intrusion attempt looks like. */
const ALWAYS_LOGGED = new Set(['UNAUTHORIZED', 'SUBSCRIPTION_REFUSED']);

export class PushServer {
	private http?: Server;
	private wss?: WebSocketServer;
	private readonly sessions = new Set<Session>();
	/** Every raw TCP socket of the HTTP server (destroyed by stop()). */
	private readonly sockets = new Set<Socket>();
	/** request id → the sessions waiting for it. */
	private readonly waiting = new Map<string, Set<Session>>();
	private heartbeat?: NodeJS.Timeout;

	constructor(private readonly options: PushServerOptions) {}

	/** Listening address (port resolved when 0 was asked for). */
	get port(): number {
		const address = this.http?.address();
		return typeof address === 'object' && address ? address.port : this.options.port;
	}

	/** Number of pending subscriptions over all connections. */
	get pendingCount(): number {
		let n = 0;
		for (const s of this.sessions) n += s.pending.size;
		return n;
	}

	/** Open WebSocket connections, and those among them not yet authenticated. */
	get connectionCount(): { open: number; unauthenticated: number } {
		let unauthenticated = 0;
		for (const s of this.sessions) if (s.userId === null) unauthenticated++;
		return { open: this.sessions.size, unauthenticated };
	}

	private get maxUnauthenticated(): number {
		return this.options.maxUnauthenticated ?? Math.min(this.options.maxConnections, 1000);
	}

	/**
	 * Starts listening.
	 * @throws Error "port <p> on <host> is in use …" (EADDRINUSE) or the listen error
	 */
	async start(): Promise<void> {
		const handshake = this.options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
		const http = createServer(
			{ headersTimeout: handshake, requestTimeout: handshake, connectionsCheckingInterval: Math.min(1000, handshake) },
			(_request, response) => response.writeHead(426, { Connection: 'close' }).end('WebSocket only: ' + PUSH_PATH),
		);
		http.maxConnections = this.options.maxConnections + this.maxUnauthenticated;
		http.on('connection', (socket: Socket) => {
			this.sockets.add(socket);
			socket.once('close', () => this.sockets.delete(socket));
		});
		await new Promise<void>((resolve, reject) => {
			http.once('listening', resolve);
			http.once('error', (error: NodeJS.ErrnoException) =>
				reject(
					error.code === 'EADDRINUSE'
						? new Error(
								`Pipeline Push: port ${this.options.port} on ${this.options.host} is in use (another active Pipeline Push, or another server); choose another Port`,
							)
						: error,
				),
			);
			http.listen(this.options.port, this.options.host);
		});
		http.on('error', (error) => this.options.logger.warn(`Pipeline Push: server error: ${error.message}`));
		const wss = new WebSocketServer({
			server: http,
			path: PUSH_PATH,
			maxPayload: HARD_MAX_PAYLOAD,
			clientTracking: false,
			perMessageDeflate: false,
			verifyClient: (_info, done) => {
				const { open, unauthenticated } = this.connectionCount;
				if (open >= this.options.maxConnections) return done(false, 503, 'too many connections');
				if (unauthenticated >= this.maxUnauthenticated) return done(false, 503, 'too many unauthenticated connections');
				done(true);
			},
		});
		wss.on('error', (error) => this.options.logger.warn(`Pipeline Push: server error: ${error.message}`));
		wss.on('connection', (ws, request) => this.accept(ws, request));
		this.http = http;
		this.wss = wss;
		this.heartbeat = setInterval(() => this.ping(), this.options.heartbeatMs);
		this.heartbeat.unref?.();
	}

	/**
	 * Closes every connection (1001 going away; terminated after STOP_GRACE_MS) and the port, and destroys
	 * every raw socket (half-sent HTTP requests included). Resolves within STOP_TIMEOUT_MS.
	 */
	async stop(): Promise<void> {
		if (this.heartbeat) clearInterval(this.heartbeat);
		const { http, wss } = this;
		this.http = undefined;
		this.wss = undefined;
		const sessions = [...this.sessions];
		for (const session of sessions) {
			session.ws.close(1001, 'server stopping');
			this.forget(session);
		}
		wss?.close();
		const closed = http ? new Promise<void>((resolve) => http.close(() => resolve())) : Promise.resolve();
		http?.closeAllConnections();
		const grace = sessions.length
			? Promise.race([
					Promise.all(
						sessions.map(
							(s) => new Promise((r) => (s.ws.readyState === WebSocket.CLOSED ? r(null) : s.ws.once('close', r))),
						),
					),
					delay(STOP_GRACE_MS),
				])
			: Promise.resolve();
		await grace;
		for (const session of sessions) session.ws.terminate();
		for (const socket of this.sockets) socket.destroy();
		await Promise.race([closed, delay(STOP_TIMEOUT_MS - STOP_GRACE_MS)]);
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
		const session: Session = {
			ws,
			userId: null,
			pending: new Set(),
			alive: true,
			remote,
			logged: 0,
			unlogged: 0,
			queue: Promise.resolve(),
			tokens: this.options.messageBurst ?? MESSAGE_BURST,
			refilled: Date.now(),
			emitted: new Set(),
		};
		this.sessions.add(session);
		session.authTimer = setTimeout(() => {
			if (session.userId !== null) return;
			this.send(session, refuse('NOT_AUTHENTICATED', `authenticate within ${this.options.authTimeoutMs} ms`));
			ws.close(CLOSE_AUTH_TIMEOUT, 'authentication timeout');
		}, this.options.authTimeoutMs);
		session.authTimer.unref?.();
		ws.on('pong', () => (session.alive = true));
		ws.on('close', () => this.forget(session));
		ws.on('error', () => this.forget(session));
		ws.on('message', (data: RawData, isBinary: boolean) => {
			const bytes = Array.isArray(data)
				? data.reduce((n, b) => n + b.length, 0)
				: (data as Buffer | ArrayBuffer).byteLength;
			if (!this.allow(session, bytes)) return;
			const frame = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
			const parsed = parseClientMessage(frame, isBinary, this.options);
			if (!parsed.ok) return this.refuseMessage(session, parsed.refusal);
			this.enqueue(session, parsed.message);
		});
		const query = parseQueryString((request.url ?? '').split('?')[1] ?? '', this.options);
		if (query && !this.options.allowQueryToken)
			this.refuseMessage(
				session,
				refuse(
					'INVALID_MESSAGE',
					'query string: user_id, token and request_id in the URL are off on this server (node option Allow Token in URL); send {"type":"auth",…} as the first message',
				),
			);
		else if (query && !query.ok) this.refuseMessage(session, query.refusal);
		else if (query) this.enqueue(session, query.message);
	}

	/**
	 * Token bucket: false (and RATE_LIMITED answered) when the connection sends faster than allowed. A frame
	 * of `bytes` costs one token per started Max Message Size (so an oversize frame costs more than one; at
	 * most the whole burst): a client sending 1 MB frames is rate-limited after the first until the bucket
	 * is full again, and a refused frame is never decoded.
	 */
	private allow(session: Session, bytes: number): boolean {
		const now = Date.now();
		const burst = this.options.messageBurst ?? MESSAGE_BURST;
		const rate = this.options.messagesPerSecond ?? MESSAGES_PER_SECOND;
		const cost = Math.min(burst, Math.max(1, Math.ceil(bytes / this.options.maxMessageBytes)));
		session.tokens = Math.min(burst, session.tokens + ((now - session.refilled) / 1000) * rate);
		session.refilled = now;
		if (session.tokens >= cost) {
			session.tokens -= cost;
			return true;
		}
		this.refuseMessage(
			session,
			refuse(
				'RATE_LIMITED',
				`message: at most ${rate} messages per second (burst ${burst}; a frame costs one per ${this.options.maxMessageBytes} bytes)`,
			),
		);
		return false;
	}

	/** Handles `message` after the connection's earlier messages (one at a time per connection). */
	private enqueue(session: Session, message: ClientMessage): void {
		session.queue = session.queue.then(() => this.handle(session, message));
	}

	/**
	 * Answers `refusal` and logs it (warn) with the connection's user_id, or the one it claimed, and the
	 * refused ids; never a token. UNAUTHORIZED and SUBSCRIPTION_REFUSED are always logged; other refusals
	 * up to MAX_LOGGED_REFUSALS per connection, the rest counted in a line at close.
	 */
	private refuseMessage(session: Session, refusal: Refusal, claimed?: string): void {
		this.send(session, refusal);
		let more = '';
		if (!ALWAYS_LOGGED.has(refusal.code)) {
			if (++session.logged > MAX_LOGGED_REFUSALS) {
				session.unlogged++;
				return;
			}
			if (session.logged === MAX_LOGGED_REFUSALS)
				more = ' (further malformed-message refusals on this connection are counted, not logged)';
		}
		const who =
			session.userId !== null
				? ` (user_id ${logSafe(session.userId)})`
				: claimed !== undefined
					? ` (claiming user_id ${logSafe(claimed)})`
					: '';
		const ids = refusal.request_ids?.length ? ` request_ids ${refusal.request_ids.join(',')}` : '';
		this.options.logger.warn(
			`Pipeline Push: refused a message from ${session.remote}${who}: ${refusal.code} ${refusal.message}${ids}${more}`,
		);
	}

	private async handle(session: Session, message: ClientMessage): Promise<void> {
		try {
			if (session.ws.readyState !== WebSocket.OPEN) return;
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

	/**
	 * True when authenticated as `userId`; otherwise refuses (and closes 4401 on a bad, expired or too
	 * long-lived token). A connection already authenticated as `userId` may send a fresh token for the same
	 * user (auth again) before its token expires: the new expiry replaces the old one. The connection is
	 * closed (4401 "token expired") when its token's expiry + CLOCK_SKEW_SECONDS passes.
	 */
	private authenticate(session: Session, userId: string, token: string): boolean {
		if (session.userId !== null && session.userId !== userId) {
			this.refuseMessage(session, refuse('UNAUTHORIZED', 'user_id: this connection is authenticated as another user'));
			return false;
		}
		const check = checkPushToken(userId, token, this.options.secret, {
			maxLifetimeSeconds: this.options.maxTokenLifetimeSeconds,
			skewSeconds: this.options.clockSkewSeconds,
		});
		if (!check.ok) {
			// the token is never logged, nor echoed
			const why =
				check.reason === 'expired'
					? 'token: expired; get a fresh one'
					: check.reason === 'too_long'
						? `token: lives longer than this server's Max Token Lifetime (${this.options.maxTokenLifetimeSeconds ?? 'default'} s)`
						: 'token: not valid for this user_id';
			this.refuseMessage(session, refuse('UNAUTHORIZED', why), userId);
			session.ws.close(CLOSE_UNAUTHORIZED, 'unauthorized');
			return false;
		}
		session.userId = userId;
		if (session.authTimer) clearTimeout(session.authTimer);
		if (session.expiryTimer) clearTimeout(session.expiryTimer);
		session.expiryTimer = setTimeout(
			() => {
				this.send(session, refuse('UNAUTHORIZED', 'token: expired; reconnect with a fresh one'));
				session.ws.close(CLOSE_UNAUTHORIZED, 'token expired');
			},
			// setTimeout's longest delay is 2^31 − 1 ms (24.8 days); Max Token Lifetime is at most 7 days
			Math.min(
				MAX_TIMER_MS,
				Math.max(0, (check.expiresAt + (this.options.clockSkewSeconds ?? CLOCK_SKEW_SECONDS)) * 1000 - Date.now()),
			),
		);
		session.expiryTimer.unref?.();
		// answered for each valid token, also a fresh one sent on an authenticated connection (`auth` again)
		this.send(session, { type: 'authenticated', user_id: userId, expires_at: check.expiresAt });
		return true;
	}

	/**
	 * Subscribes `ids` (run one at a time per connection, see enqueue). Ids already pending here were
	 * confirmed by an earlier subscribe: they are acknowledged again without a query; only new ids are
	 * checked (one owned() query). On a database error the new ids are refused UNAVAILABLE and the earlier
	 * subscriptions stay.
	 */
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
		if (!fresh.length) {
			this.send(session, { type: 'subscribed', request_ids: ids });
			return;
		}
		for (const id of fresh) this.register(session, id);
		let rows: RunRow[];
		try {
			rows = await this.options.store.owned(fresh, session.userId!);
		} catch (error) {
			for (const id of fresh) this.unregister(session, id);
			this.options.logger.warn(`Pipeline Push: subscription check failed: ${(error as Error).message}`);
			this.send(
				session,
				refuse('UNAVAILABLE', 'the database is not reachable; subscribe again in a few seconds', fresh),
			);
			return;
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
		const accepted = ids.filter((id) => owned.has(id) || (session.pending.has(id) && !fresh.includes(id)));
		if (accepted.length) this.send(session, { type: 'subscribed', request_ids: accepted });
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

	/**
	 * Sends `row`'s answer to `session` once, if it is finished, pending there and `session`'s own; hands it
	 * to onDelivered the first time this connection gets this request id.
	 */
	private deliver(session: Session, row: RunRow): void {
		if (!session.pending.has(row.id) || session.userId !== row.user_id) return;
		const answer = answerOf(row);
		if (!answer) return;
		this.unregister(session, row.id);
		if (!this.send(session, answer)) return;
		if (!this.options.onDelivered || session.emitted.has(row.id)) return;
		session.emitted.add(row.id);
		if (session.emitted.size > MAX_EMITTED_IDS) session.emitted.delete(session.emitted.values().next().value!);
		this.options.onDelivered(answer, row.user_id);
	}

	/**
	 * Sends `message`; false when the connection is not open, or is terminated because more than
	 * MAX_BUFFERED_BYTES are still unsent (a peer that does not read).
	 */
	private send(session: Session, message: unknown): boolean {
		const { ws } = session;
		if (ws.readyState !== WebSocket.OPEN) return false;
		if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
			this.options.logger.warn(
				`Pipeline Push: terminated the connection from ${session.remote}${session.userId !== null ? ` (user_id ${logSafe(session.userId)})` : ''}: more than ${MAX_BUFFERED_BYTES} bytes unsent (the client does not read)`,
			);
			ws.terminate();
			this.forget(session);
			return false;
		}
		ws.send(JSON.stringify(message));
		return true;
	}

	private forget(session: Session): void {
		if (!this.sessions.delete(session)) return;
		if (session.authTimer) clearTimeout(session.authTimer);
		if (session.expiryTimer) clearTimeout(session.expiryTimer);
		for (const id of [...session.pending]) this.unregister(session, id);
		if (session.unlogged)
			this.options.logger.warn(
				`Pipeline Push: connection from ${session.remote}${session.userId !== null ? ` (user_id ${logSafe(session.userId)})` : ''} closed; ${session.unlogged} more refusals were answered but not logged`,
			);
	}

	private ping(): void {
		for (const session of [...this.sessions]) {
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

function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms).unref?.());
}
