/**
 * A stand-in for an Ollama-compatible `/api/generate` on 127.0.0.1 (a real HTTP server): answers the
 * model's issues as JSON text (`ok`), an HTTP 500 (`error`), or prose that is not JSON (`prose`), and
 * records every request body.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchableServer } from './switchableServer';

export type OllamaMode = 'ok' | 'error' | 'prose';

export const OLLAMA_ISSUES = [{ description: 'Which users? The role is not named.', severity: 'high' }];

export class OllamaStandIn extends SwitchableServer {
	mode: OllamaMode = 'ok';
	readonly requests: Record<string, unknown>[] = [];

	protected handle(_req: IncomingMessage, res: ServerResponse, raw: string): void {
		const body = JSON.parse(raw || '{}') as Record<string, unknown>;
		this.requests.push(body);
		const send = (status: number, payload: unknown) => {
			res.writeHead(status, { 'content-type': 'application/json' });
			res.end(JSON.stringify(payload));
		};
		if (this.mode === 'error') return send(500, { error: 'model runner crashed' });
		const response =
			this.mode === 'ok'
				? JSON.stringify({ issues: OLLAMA_ISSUES })
				: 'Sure! The requirement has one issue: the role is not named.';
		send(200, { model: body.model, created_at: new Date().toISOString(), response, done: true });
	}
}
