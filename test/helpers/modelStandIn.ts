/**
 * A stand-in model server on 127.0.0.1 (a real HTTP server) speaking the OpenAI-compatible
 * `/v1/chat/completions` and the Ollama-compatible `/api/generate`. A test scripts its next answers
 * (`ok` with a text, `status` with an HTTP code, `hang` past the client's timeout, `429`) or sets a
 * `respond(request)` function; every request body is recorded.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchableServer } from './switchableServer';

export type ModelReply = { text: string } | { status: number; retryAfter?: number } | { hang: number };

export class ModelStandIn extends SwitchableServer {
	readonly requests: { path: string; body: Record<string, unknown>; authorization?: string }[] = [];
	readonly script: ModelReply[] = [];
	/** Answer when nothing is scripted (default: echo a short text). */
	respond: (body: Record<string, unknown>) => ModelReply = () => ({ text: 'ok' });

	protected handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
		const body = JSON.parse(raw || '{}') as Record<string, unknown>;
		const path = req.url ?? '';
		this.requests.push({ path, body, authorization: req.headers.authorization });
		const reply = this.script.shift() ?? this.respond(body);
		const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
			if (res.destroyed) return;
			res.writeHead(status, { 'content-type': 'application/json', ...headers });
			res.end(JSON.stringify(payload));
		};
		if ('hang' in reply) {
			setTimeout(
				() => send(200, { response: 'too late', choices: [{ message: { content: 'too late' } }] }),
				reply.hang,
			);
			return;
		}
		if ('status' in reply) {
			send(
				reply.status,
				{ error: { message: `stand-in error ${reply.status}` } },
				reply.retryAfter ? { 'retry-after': String(reply.retryAfter) } : {},
			);
			return;
		}
		if (path.endsWith('/api/generate')) send(200, { model: body.model, response: reply.text, done: true });
		else
			send(200, {
				id: 'cmpl-1',
				object: 'chat.completion',
				model: body.model,
				choices: [{ index: 0, message: { role: 'assistant', content: reply.text }, finish_reason: 'stop' }],
			});
	}
}
