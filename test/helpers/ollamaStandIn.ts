/**
 * A stand-in for an Ollama-compatible `/api/generate` on 127.0.0.1 (a real HTTP server): answers the
 * model's issues as JSON text (`ok`), an HTTP 500 (`error`), or prose that is not JSON (`prose`), and
 * records every request body.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type OllamaMode = 'ok' | 'error' | 'prose';

export const OLLAMA_ISSUES = [{ description: 'Which users? The role is not named.', severity: 'high' }];

export class OllamaStandIn {
	mode: OllamaMode = 'ok';
	readonly requests: Record<string, unknown>[] = [];
	private server: Server | undefined;
	port = 0;

	get url(): string {
		return `http://127.0.0.1:${this.port}`;
	}

	async up(): Promise<void> {
		const server = createServer((req, res) => {
			let raw = '';
			req.on('data', (c) => (raw += c));
			req.on('end', () => {
				const body = JSON.parse(raw || '{}') as Record<string, unknown>;
				this.requests.push(body);
				const send = (status: number, payload: unknown) => {
					res.writeHead(status, { 'content-type': 'application/json' });
					res.end(JSON.stringify(payload));
				};
				if (this.mode === 'error') return send(500, { error: 'model runner crashed' });
				const response = this.mode === 'ok' ? JSON.stringify({ issues: OLLAMA_ISSUES }) : 'Sure! The requirement has one issue: the role is not named.';
				send(200, { model: body.model, created_at: new Date().toISOString(), response, done: true });
			});
		});
		await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', () => resolve()));
		this.server = server;
		this.port = (server.address() as AddressInfo).port;
	}

	async down(): Promise<void> {
		const server = this.server;
		this.server = undefined;
		if (!server) return;
		server.closeAllConnections();
		await new Promise<void>((resolve) => server.close(() => resolve()));
	}
}
