/**
 * A real HTTP server on 127.0.0.1 that a test can take down (connections refused, open ones dropped)
 * and bring up again on the same port: the base of the stand-ins for ArangoDB and Ollama.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export abstract class SwitchableServer {
	private server: Server | undefined;
	/** The port, fixed by the first `up()` (0 before it). */
	port = 0;

	get url(): string {
		return `http://127.0.0.1:${this.port}`;
	}

	protected abstract handle(req: IncomingMessage, res: ServerResponse, body: string): void;

	/** Starts listening (on the same port as before, after a `down()`). */
	async up(): Promise<void> {
		const server = createServer((req, res) => {
			let raw = '';
			req.on('data', (chunk) => (raw += chunk));
			req.on('end', () => this.handle(req, res, raw));
		});
		server.keepAliveTimeout = 1000;
		await new Promise<void>((resolve, reject) => {
			server.once('error', reject);
			server.listen(this.port, '127.0.0.1', () => resolve());
		});
		this.server = server;
		this.port = (server.address() as AddressInfo).port;
	}

	/** Stops listening and drops every connection: requests are refused until `up()`. */
	async down(): Promise<void> {
		const server = this.server;
		this.server = undefined;
		if (!server) return;
		server.closeAllConnections();
		await new Promise<void>((resolve) => server.close(() => resolve()));
	}
}
