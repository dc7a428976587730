/**
 * One model call with the retry policy of seed 001 (Final Responder): a timeout, a dropped connection
 * or a 502/503/504 is retried with exponential backoff (`backoffBaseMs · 2^(n−1)`), a 429 after
 * `rateLimitWaitMs` (60 s by default; the server's Retry-After when it sends one), at most `maxRetries`
 * times; any other answer ≥ 400 is fatal at once. OpenAI-compatible (`/v1/chat/completions`) or
 * Ollama-compatible (`/api/generate`) requests.
 */
import { ContractError } from '../errors';

export interface LlmCredential {
	api: 'openai' | 'ollama';
	baseUrl: string;
	apiKey?: string;
	model?: string;
}

export interface LlmRequest {
	/** System prompt (the role's template). */
	system: string;
	/** The user content. */
	input: string;
	model?: string;
	temperature?: number;
	maxTokens?: number;
	/** Ask for a JSON answer and parse it (a parse failure is a 422 INVALID_JSON). */
	expectJson: boolean;
}

export interface RetryPolicy {
	/** Per-attempt timeout, ms. */
	timeoutMs: number;
	maxRetries: number;
	backoffBaseMs: number;
	rateLimitWaitMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { timeoutMs: 30_000, maxRetries: 3, backoffBaseMs: 1_000, rateLimitWaitMs: 60_000 };

/** What a sender returns; it throws only when no HTTP answer came (timeout, refused, reset). */
export interface HttpAnswer {
	status: number;
	body: unknown;
	headers: Record<string, string | string[] | undefined>;
}
export type Sender = (request: { url: string; body: unknown; headers: Record<string, string>; timeoutMs: number }) => Promise<HttpAnswer>;

export interface LlmResult {
	text: string;
	json: unknown;
	model: string;
	attempts: number;
}

const WHERE = { operation: 'generate', table: 'llm' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function textOf(api: LlmCredential['api'], body: unknown): string | null {
	const b = body as { choices?: { message?: { content?: unknown } }[]; response?: unknown } | null;
	const text = api === 'openai' ? b?.choices?.[0]?.message?.content : b?.response;
	return typeof text === 'string' ? text : null;
}

/** Calls the model. @throws ContractError 504/503 upstream retryable after the last retry, 502 fatal answer, 422 INVALID_JSON */
export async function generate(credential: LlmCredential, request: LlmRequest, policy: RetryPolicy, send: Sender): Promise<LlmResult> {
	const model = request.model || credential.model || 'llama3';
	const base = credential.baseUrl.replace(/\/+$/, '');
	const url = credential.api === 'openai' ? `${base}/v1/chat/completions` : `${base}/api/generate`;
	const body =
		credential.api === 'openai'
			? {
					model,
					messages: [
						{ role: 'system', content: request.system },
						{ role: 'user', content: request.input },
					],
					...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
					...(request.maxTokens ? { max_tokens: request.maxTokens } : {}),
					...(request.expectJson ? { response_format: { type: 'json_object' } } : {}),
				}
			: {
					model,
					system: request.system,
					prompt: request.input,
					stream: false,
					...(request.expectJson ? { format: 'json' } : {}),
					options: { ...(request.temperature !== undefined ? { temperature: request.temperature } : {}), ...(request.maxTokens ? { num_predict: request.maxTokens } : {}) },
				};
	const headers: Record<string, string> = { 'content-type': 'application/json' };
	if (credential.apiKey) headers.authorization = `Bearer ${credential.apiKey}`;
	let last = '';
	for (let attempt = 1; ; attempt++) {
		let answer: HttpAnswer | null = null;
		try {
			answer = await send({ url, body, headers, timeoutMs: policy.timeoutMs });
		} catch (error) {
			last = `no answer: ${(error as Error).message}`;
		}
		if (answer && answer.status < 400) {
			const text = textOf(credential.api, answer.body);
			if (text === null) throw new ContractError(`the model's answer has no text (${credential.api} format expected)`, 502, 'upstream', false, { code: 'BAD_ANSWER' }, WHERE);
			let json: unknown = null;
			if (request.expectJson) {
				try {
					json = JSON.parse(text);
				} catch (error) {
					throw new ContractError(`invalid JSON from the model: ${(error as Error).message}`, 422, 'validation', false, { code: 'INVALID_JSON', text: text.slice(0, 2000) }, WHERE);
				}
			}
			return { text, json, model, attempts: attempt };
		}
		let wait: number;
		if (answer && answer.status === 429) {
			const retryAfter = Number(answer.headers['retry-after']);
			wait = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : policy.rateLimitWaitMs;
			last = 'rate limited (429)';
		} else if (answer && ![502, 503, 504].includes(answer.status)) {
			throw new ContractError(`the model answered HTTP ${answer.status}`, 502, 'upstream', false, { code: 'MODEL_ERROR', http_status: answer.status, body: JSON.stringify(answer.body ?? null).slice(0, 2000) }, WHERE);
		} else {
			if (answer) last = `HTTP ${answer.status}`;
			wait = policy.backoffBaseMs * 2 ** (attempt - 1);
		}
		if (attempt > policy.maxRetries) {
			const rateLimited = last.startsWith('rate limited');
			throw new ContractError(`the model failed after ${attempt} attempts: ${last}`, rateLimited ? 429 : 504, rateLimited ? 'rate_limit' : 'upstream', true, { code: 'MODEL_UNAVAILABLE', attempts: attempt, last }, WHERE);
		}
		await sleep(wait);
	}
}
