/**
 * A stand-in model (a real HTTP server on 127.0.0.1) that reports token usage: OpenAI-compatible
 * (`/v1/chat/completions`, `usage.prompt_tokens` / `usage.completion_tokens`) or, on `/api/generate`,
 * Ollama-compatible (`prompt_eval_count` / `eval_count`), for the llm_calls records of Model → Generate. A test scripts each next answer: `ok` (text and tokens), an
 * HTTP `status` (429, 503…), or `hang` (answer after that many ms, past the client's timeout).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchableServer } from './switchableServer';

export type UsageReply =
	| { text: string; promptTokens: number; completionTokens: number }
	| { status: number }
	/** A 200 whose body has no answer text in either format. */
	| { empty: true }
	| { hang: number };

export class UsageModelStandIn extends SwitchableServer {
	readonly script: UsageReply[] = [];
	/** Models named in the requests, in order. */
	readonly models: string[] = [];

	protected handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
		const body = JSON.parse(raw || '{}') as { model?: string };
		this.models.push(String(body.model));
		const reply = this.script.shift();
		const send = (status: number, payload: unknown) => {
			if (res.destroyed) return;
			res.writeHead(status, { 'content-type': 'application/json' });
			res.end(JSON.stringify(payload));
		};
		if (!reply) return send(500, { error: { message: 'nothing scripted' } });
		if ('hang' in reply) {
			setTimeout(() => send(200, { choices: [{ message: { content: 'too late' } }] }), reply.hang);
			return;
		}
		if ('status' in reply) return send(reply.status, { error: { message: `stand-in ${reply.status}` } });
		if ('empty' in reply) return send(200, { nothing: true });
		if (req.url?.endsWith('/api/generate'))
			return send(200, {
				model: body.model,
				response: reply.text,
				done: true,
				prompt_eval_count: reply.promptTokens,
				eval_count: reply.completionTokens,
			});
		send(200, {
			id: 'cmpl-usage',
			object: 'chat.completion',
			model: body.model,
			choices: [{ index: 0, message: { role: 'assistant', content: reply.text }, finish_reason: 'stop' }],
			usage: {
				prompt_tokens: reply.promptTokens,
				completion_tokens: reply.completionTokens,
				total_tokens: reply.promptTokens + reply.completionTokens,
			},
		});
	}
}
