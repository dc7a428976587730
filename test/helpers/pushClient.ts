/**
 * A Pipeline Push client for tests and the demo: a real `ws` WebSocket that keeps every message it
 * received, and waits for the next one matching a predicate.
 */
import WebSocket from 'ws';

export interface PushMessage {
	type?: string;
	code?: string;
	message?: string;
	request_id?: string;
	request_ids?: string[];
	status?: string;
	answer?: unknown;
	error?: unknown;
	[key: string]: unknown;
}

export class PushClient {
	readonly messages: PushMessage[] = [];
	/** Close code and reason, once closed. */
	closed?: { code: number; reason: string };
	private waiters: (() => void)[] = [];

	private constructor(readonly ws: WebSocket) {
		ws.on('message', (data) => {
			this.messages.push(JSON.parse(data.toString()) as PushMessage);
			this.wake();
		});
		ws.on('close', (code, reason) => {
			this.closed = { code, reason: reason.toString() };
			this.wake();
		});
		ws.on('error', () => undefined);
	}

	/** Opens `url` (e.g. ws://127.0.0.1:5681/api/ws?…). */
	static async connect(url: string): Promise<PushClient> {
		const ws = new WebSocket(url);
		const client = new PushClient(ws);
		await new Promise<void>((resolve, reject) => {
			ws.once('open', () => resolve());
			ws.once('error', reject);
		});
		return client;
	}

	private wake(): void {
		for (const w of this.waiters.splice(0)) w();
	}

	send(message: unknown): void {
		this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
	}

	auth(userId: string, token: string): void {
		this.send({ type: 'auth', user_id: userId, token });
	}

	subscribe(...requestIds: string[]): void {
		this.send({ type: 'subscribe', request_ids: requestIds });
	}

	/** The first message received (from the start) matching `match`; waits up to `ms`. */
	async next(match: (m: PushMessage) => boolean, ms = 30_000, what = 'a message'): Promise<PushMessage> {
		const end = Date.now() + ms;
		for (;;) {
			const found = this.messages.find(match);
			if (found) return found;
			if (this.closed || Date.now() > end)
				throw new Error(
					`push client: no ${what} (${this.closed ? `closed ${this.closed.code} ${this.closed.reason}` : `after ${ms} ms`}); got ${JSON.stringify(this.messages).slice(0, 1500)}`,
				);
			await new Promise<void>((resolve) => {
				const timer = setTimeout(resolve, Math.max(1, end - Date.now()));
				this.waiters.push(() => {
					clearTimeout(timer);
					resolve();
				});
			});
		}
	}

	/** The answer pushed for `requestId`. */
	answerFor(requestId: string, ms = 30_000): Promise<PushMessage> {
		return this.next((m) => m.request_id === requestId && m.type === undefined, ms, `answer for ${requestId}`);
	}

	/** Resolves when the connection is closed (at most `ms`). */
	async waitClosed(ms = 10_000): Promise<{ code: number; reason: string }> {
		const end = Date.now() + ms;
		while (!this.closed && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
		if (!this.closed) throw new Error('push client: still open');
		return this.closed;
	}

	close(): void {
		this.ws.terminate();
	}
}
