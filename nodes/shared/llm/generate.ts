/**
 * One model call with the retry policy of seed 001 (Final Responder): a timeout, a dropped connection
 * or a 502/503/504 is retried with exponential backoff (`backoffBaseMs · 2^(n−1)`), a 429 after
 * `rateLimitWaitMs` (60 s by default; the server's Retry-After when it sends one), at most `maxRetries`
 * times; any other answer ≥ 400 is fatal at once. OpenAI-compatible (`/v1/chat/completions`) or
 * Ollama-compatible (`/api/generate`) requests.
 * Secrets: the base URL is checked before the first request (http(s), no whitespace, no user info:
 * ContractError 500 validation BAD_CREDENTIAL_URL); every error raised here has the API key redacted —
 * in the message, in the answer's body it quotes (a server may echo the Authorization header) and in the
 * sender's failure (../redact.ts).
 */
import { checkedBaseUrl, type UrlField } from '../credentialUrl';
import { ContractError, type ErrorContextInit } from '../errors';
import { REDIRECT_HINT, redactorFor, type Redactor } from '../redact';

/** The Base URL field of the Contracts LLM API credential, for validation messages. */
export const LLM_BASE_URL: UrlField = {
	credential: 'Contracts LLM API',
	field: 'Base URL',
	name: 'baseUrl',
	example: 'https://api.openai.com',
};

export interface LlmCredential {
	/** `openai` and `gemini` speak the OpenAI chat format (at CHAT_PATHS[api]); `ollama` its /api/generate. */
	api: 'openai' | 'gemini' | 'ollama';
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

export const DEFAULT_RETRY: RetryPolicy = {
	timeoutMs: 30_000,
	maxRetries: 3,
	backoffBaseMs: 1_000,
	rateLimitWaitMs: 60_000,
};

/** What a sender returns; it throws only when no HTTP answer came (timeout, refused, reset). */
export interface HttpAnswer {
	status: number;
	body: unknown;
	headers: Record<string, string | string[] | undefined>;
}
export type Sender = (request: {
	url: string;
	body: unknown;
	headers: Record<string, string>;
	timeoutMs: number;
}) => Promise<HttpAnswer>;

export interface LlmResult {
	text: string;
	json: unknown;
	model: string;
	attempts: number;
}

/**
 * What one HTTP attempt did (seed 001 §9 "model API"), handed to `generate`'s observer right after the
 * attempt and before any retry wait. `outcome`: `ok` a 2xx answer with text; `rate_limited` HTTP 429;
 * `timeout` no answer within `timeoutMs` (the sender's timeout error); `error` anything else (another
 * status, a refused or reset connection, a 2xx without text). Tokens as the provider reported them
 * (OpenAI `usage.prompt_tokens` / `usage.completion_tokens`, Ollama `prompt_eval_count` / `eval_count`),
 * else null. Holds no URL, header or key.
 */
export interface LlmAttempt {
	/** 1 for the first attempt. */
	attempt: number;
	model: string;
	startedAt: Date;
	/** Wall time of the HTTP exchange, ms (no retry wait). */
	durationMs: number;
	outcome: 'ok' | 'rate_limited' | 'timeout' | 'error';
	/** The answer's HTTP status; null when none came. */
	httpStatus: number | null;
	promptTokens: number | null;
	completionTokens: number | null;
}
/** Called after every attempt; awaited; must not throw (a throw ends the call with that error). */
export type AttemptObserver = (attempt: LlmAttempt) => Promise<void>;

const WHERE: ErrorContextInit = { operation: 'generate', table: 'llm' };

/** A ContractError of the model call with the key redacted from its message and details. */
function failure(
	redact: Redactor,
	message: string,
	status: number,
	kind: ConstructorParameters<typeof ContractError>[2],
	retryable: boolean,
	details: Record<string, unknown>,
): ContractError {
	return new ContractError(redact.string(message), status, kind, retryable, redact.value(details), WHERE);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Path of the chat endpoint per API style, appended to the Base URL: OpenAI's, Gemini's OpenAI-compatible
 * endpoint (https://generativelanguage.googleapis.com + /v1beta/openai/chat/completions, key as Bearer), Ollama's.
 */
export const CHAT_PATHS: Record<LlmCredential['api'], string> = {
	openai: '/v1/chat/completions',
	gemini: '/v1beta/openai/chat/completions',
	ollama: '/api/generate',
};

/** Path of the model list the credential test asks for, per API style. */
export const MODEL_LIST_PATHS: Record<LlmCredential['api'], string> = {
	openai: '/v1/models',
	gemini: '/v1beta/openai/models',
	ollama: '/api/tags',
};

/** A count the provider reported: a non-negative safe integer, else null. */
function count(value: unknown): number | null {
	return Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : null;
}

/** Prompt and completion tokens of a 2xx answer (OpenAI `usage`, Ollama eval counts). */
function tokensOf(api: LlmCredential['api'], body: unknown): [number | null, number | null] {
	const b = (body ?? {}) as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } } & Record<
		string,
		unknown
	>;
	if (api === 'ollama') return [count(b.prompt_eval_count), count(b.eval_count)];
	return [count(b.usage?.prompt_tokens), count(b.usage?.completion_tokens)];
}

/** Whether a sender's failure is its timeout (fetch's TimeoutError/AbortError, axios' ECONNABORTED, socket timeouts). */
export function isTimeout(error: unknown): boolean {
	for (
		let e = error, depth = 0;
		e && typeof e === 'object' && depth < 4;
		e = (e as { cause?: unknown }).cause, depth++
	) {
		const { name, code, message } = e as { name?: unknown; code?: unknown; message?: unknown };
		if (name === 'TimeoutError' || name === 'AbortError') return true;
		if (
			typeof code === 'string' &&
			['ECONNABORTED', 'ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_HEADERS_TIMEOUT'].includes(code)
		)
			return true;
		if (typeof message === 'string' && /\btime(d)? ?out\b|timeout of \d+ ?ms/i.test(message)) return true;
	}
	return false;
}

function textOf(api: LlmCredential['api'], body: unknown): string | null {
	const b = body as { choices?: { message?: { content?: unknown } }[]; response?: unknown } | null;
	const text = api === 'ollama' ? b?.response : b?.choices?.[0]?.message?.content;
	return typeof text === 'string' ? text : null;
}

/**
 * Calls the model. `observe` (optional) hears every attempt (LlmAttempt) right after it, before a retry wait.
 * @throws ContractError 504/503 upstream retryable after the last retry, 502 fatal answer, 422
 *         INVALID_JSON, 500 validation BAD_CREDENTIAL_URL; none carries the API key
 */
export async function generate(
	credential: LlmCredential,
	request: LlmRequest,
	policy: RetryPolicy,
	send: Sender,
	observe?: AttemptObserver,
): Promise<LlmResult> {
	const model = request.model || credential.model || 'llama3';
	const redact = redactorFor([credential.apiKey]);
	const base = checkedBaseUrl(credential.baseUrl, LLM_BASE_URL);
	const url = `${base}${CHAT_PATHS[credential.api] ?? CHAT_PATHS.openai}`;
	const body =
		credential.api !== 'ollama'
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
					options: {
						...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
						...(request.maxTokens ? { num_predict: request.maxTokens } : {}),
					},
				};
	const headers: Record<string, string> = { 'content-type': 'application/json' };
	if (credential.apiKey) headers.authorization = `Bearer ${credential.apiKey}`;
	let last = '';
	for (let attempt = 1; ; attempt++) {
		let answer: HttpAnswer | null = null;
		let timedOut = false;
		const startedAt = new Date();
		const t0 = performance.now();
		try {
			answer = await send({ url, body, headers, timeoutMs: policy.timeoutMs });
		} catch (error) {
			timedOut = isTimeout(error);
			last = `no answer: ${redact.string(error instanceof Error ? error.message : String(error))}`;
		}
		const durationMs = performance.now() - t0;
		const ok = answer !== null && answer.status >= 200 && answer.status < 300;
		const text = ok ? textOf(credential.api, answer!.body) : null;
		if (observe) {
			const [promptTokens, completionTokens] = ok ? tokensOf(credential.api, answer!.body) : [null, null];
			await observe({
				attempt,
				model,
				startedAt,
				durationMs,
				outcome:
					ok && text !== null
						? 'ok'
						: answer?.status === 429
							? 'rate_limited'
							: !answer && timedOut
								? 'timeout'
								: 'error',
				httpStatus: answer?.status ?? null,
				promptTokens,
				completionTokens,
			});
		}
		if (answer && ok) {
			if (text === null)
				throw failure(
					redact,
					`the model's answer has no text (${credential.api} format expected)`,
					502,
					'upstream',
					false,
					{ code: 'BAD_ANSWER' },
				);
			let json: unknown = null;
			if (request.expectJson) {
				try {
					json = JSON.parse(text);
				} catch (error) {
					throw failure(redact, `invalid JSON from the model: ${(error as Error).message}`, 422, 'validation', false, {
						code: 'INVALID_JSON',
						text: redact.string(text).slice(0, 2000),
					});
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
			// Redacted before it is cut to 2000 characters, so no part of a key is left at the cut.
			const quoted = redact.string(JSON.stringify(redact.value(answer.body ?? null)) ?? 'null');
			throw failure(
				redact,
				`the model answered HTTP ${answer.status}${answer.status >= 300 && answer.status < 400 ? REDIRECT_HINT : ''}`,
				502,
				'upstream',
				false,
				{ code: 'MODEL_ERROR', http_status: answer.status, body: quoted.slice(0, 2000) },
			);
		} else {
			if (answer) last = `HTTP ${answer.status}`;
			wait = policy.backoffBaseMs * 2 ** (attempt - 1);
		}
		if (attempt > policy.maxRetries) {
			const rateLimited = last.startsWith('rate limited');
			throw failure(
				redact,
				`the model failed after ${attempt} attempts: ${last}`,
				rateLimited ? 429 : 504,
				rateLimited ? 'rate_limit' : 'upstream',
				true,
				{ code: 'MODEL_UNAVAILABLE', attempts: attempt, last },
			);
		}
		await sleep(wait);
	}
}
