/**
 * One model call with the retry policy of seed 001 (Final Responder), extended by issue 26 item 4 (the
 * table: docs/retry-safety.md "LLM calls: retry policy"): a timeout, a dropped connection or an HTTP
 * 500/502/503/504 is retried with exponential backoff and jitter (`backoffBaseMs · 2^(n−1)` · a random
 * factor in [1 − jitter, 1 + jitter], at most `backoffCapMs`), a 429 after `rateLimitWaitMs` (60 s by
 * default); a Retry-After the server sends (seconds or an HTTP date, on a 429 or a retried 5xx) is waited
 * instead, up to `retryAfterCapMs`. At most `maxRetries` retries (capped at MAX_RETRIES_LIMIT); any other
 * answer ≥ 300 is fatal at once. The whole call — attempts and waits — ends by its deadline (`deadlineMs`,
 * default deadlineOf: `timeoutMs × (1 + maxRetries)`, at most MAX_DEADLINE_MS = 300 000 ms): no attempt
 * outlives it (its timeout is cut to what is left), no wait sleeps past it (a wait longer than what is
 * left fails at once, retryable), and the caller's abort signal (n8n's execution cancel signal) ends a
 * wait at once. OpenAI-compatible (`/v1/chat/completions`) or Ollama-compatible (`/api/generate`) requests.
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
	/** Retries after the first attempt (0 to MAX_RETRIES_LIMIT; more is read as the limit, NaN as the default 3). */
	maxRetries: number;
	/** The first retry's delay after a timeout / no answer / 500/502/503/504, ms; doubles each retry. */
	backoffBaseMs: number;
	/** Wait after a 429 without Retry-After, ms. */
	rateLimitWaitMs: number;
	/** Longest backoff delay before jitter, ms (default DEFAULT_RETRY.backoffCapMs). */
	backoffCapMs?: number;
	/** Longest wait a Retry-After header can ask for, ms (default DEFAULT_RETRY.retryAfterCapMs). */
	retryAfterCapMs?: number;
	/** Jitter of a backoff delay, a fraction: the delay times a random factor in [1 − jitter, 1 + jitter] (0–1; default 0.2), then at most `backoffCapMs`. */
	jitter?: number;
	/**
	 * The whole call's budget, ms, from its start: attempts and waits (default deadlineOf(policy):
	 * `timeoutMs × (1 + maxRetries)`, at most MAX_DEADLINE_MS; a larger value is read as MAX_DEADLINE_MS).
	 */
	deadlineMs?: number;
	/** Ends a retry wait at once when aborted (n8n's `getExecutionCancelSignal()`): 504 retryable, `cancelled: true`. */
	signal?: AbortSignal;
}

/** The longest a call may last, ms (5 min): below Release Stale's threshold and any interactive wait worth having. */
export const MAX_DEADLINE_MS = 300_000;

export const DEFAULT_RETRY: Required<Omit<RetryPolicy, 'deadlineMs' | 'signal'>> = {
	timeoutMs: 30_000,
	maxRetries: 3,
	backoffBaseMs: 1_000,
	rateLimitWaitMs: 60_000,
	backoffCapMs: 30_000,
	retryAfterCapMs: 60_000,
	jitter: 0.2,
};

/**
 * The call's deadline (ms from its start): `policy.deadlineMs` when given (finite, > 0), else
 * `timeoutMs × (1 + retries)` — every attempt's full timeout, the waits taken from that budget; at most
 * MAX_DEADLINE_MS either way. Defaults (30 s, 3 retries): 120 000 ms.
 */
export function deadlineOf(policy: RetryPolicy, retries: number): number {
	const given = Number(policy.deadlineMs);
	const derived = Math.max(1, Number(policy.timeoutMs) || DEFAULT_RETRY.timeoutMs) * (1 + retries);
	return Math.min(MAX_DEADLINE_MS, Number.isFinite(given) && given > 0 ? given : derived);
}

/**
 * n8n's execution cancel signal (IExecuteFunctions.getExecutionCancelSignal, absent in older n8n), or
 * undefined. Never throws.
 */
export function cancelSignalOf(fn: unknown): AbortSignal | undefined {
	try {
		const get = (fn as { getExecutionCancelSignal?: () => AbortSignal | undefined } | null)?.getExecutionCancelSignal;
		return typeof get === 'function' ? get.call(fn) : undefined;
	} catch {
		return undefined;
	}
}

/** The most retries a policy may ask for (more is bounded to it; a fraction is rounded down, a negative is 0, NaN the default). */
export const MAX_RETRIES_LIMIT = 10;

/** HTTP statuses retried with backoff (a server's transient failure); 429 is retried after its own wait. */
export const RETRIED_STATUSES: readonly number[] = [500, 502, 503, 504];

/**
 * A Retry-After header's wait in ms (delta-seconds, or an HTTP date relative to `now`), or null when
 * absent or unreadable. A date in the past is 0.
 */
export function retryAfterMs(value: unknown, now = Date.now()): number | null {
	const text = Array.isArray(value) ? value[0] : value;
	if (typeof text !== 'string' || text.trim() === '') return null;
	const trimmed = text.trim();
	if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.min(Number.MAX_SAFE_INTEGER, Number(trimmed) * 1000);
	// an HTTP date (IMF-fixdate, RFC 850 or asctime: a day name first, a time of day); nothing else is read
	if (!/^[A-Za-z]{3,9},? .*\b\d{2}:\d{2}:\d{2}\b/.test(trimmed)) return null;
	const date = Date.parse(trimmed);
	return Number.isNaN(date) ? null : Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, date - now));
}

/**
 * The wait (ms) before retry `retry` (1 = the first) after a timeout, no answer or a retried 5xx:
 * `min(cap, base · 2^(retry−1))` times a factor in [1 − jitter, 1 + jitter] drawn from `random` (0–1),
 * rounded to a whole ms, and at most `cap` (the jitter never takes a delay past the cap).
 */
export function backoffMs(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
	const cap = policy.backoffCapMs ?? DEFAULT_RETRY.backoffCapMs;
	const jitter = Math.min(1, Math.max(0, policy.jitter ?? DEFAULT_RETRY.jitter));
	const delay = Math.min(cap, policy.backoffBaseMs * 2 ** (retry - 1));
	return Math.min(cap, Math.max(0, Math.round(delay * (1 - jitter + 2 * jitter * random()))));
}

/**
 * The wait (ms) before retry `retry` (1 = the first) of a failed attempt that is retried: `status` the
 * answer's HTTP status (null: no answer), `retryAfter` its Retry-After header. The server's Retry-After
 * when readable, at most `retryAfterCapMs`; else `rateLimitWaitMs` after a 429, backoffMs otherwise.
 */
export function retryWaitMs(
	policy: RetryPolicy,
	retry: number,
	status: number | null,
	retryAfter: unknown,
	random: () => number = Math.random,
): number {
	const asked = retryAfterMs(retryAfter);
	if (asked !== null) return Math.min(asked, policy.retryAfterCapMs ?? DEFAULT_RETRY.retryAfterCapMs);
	return status === 429 ? policy.rateLimitWaitMs : backoffMs(policy, retry, random);
}

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
/** Waits `ms`; false at once (and then) when `signal` is aborted. */
function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
	if (signal?.aborted) return Promise.resolve(false);
	return new Promise((resolve) => {
		const done = (completed: boolean) => {
			clearTimeout(timer);
			signal?.removeEventListener('abort', onAbort);
			resolve(completed);
		};
		const onAbort = () => done(false);
		const timer = setTimeout(() => done(true), ms);
		signal?.addEventListener('abort', onAbort, { once: true });
	});
}

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
 * @throws ContractError 504 upstream (or 429 rate_limit) retryable after the last retry, when the next wait
 *         would pass the deadline or the signal aborted it (details.code MODEL_UNAVAILABLE, attempts, last,
 *         http_status; deadline_ms and wait_ms when the deadline ended it, cancelled when the signal), 502 fatal answer (MODEL_ERROR), 422
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
	const retries = Number.isNaN(Number(policy.maxRetries)) ? DEFAULT_RETRY.maxRetries : Number(policy.maxRetries);
	const maxRetries = Math.min(MAX_RETRIES_LIMIT, Math.max(0, Math.floor(retries)));
	const deadlineMs = deadlineOf(policy, maxRetries);
	const deadline = performance.now() + deadlineMs;
	for (let attempt = 1; ; attempt++) {
		let answer: HttpAnswer | null = null;
		let timedOut = false;
		const startedAt = new Date();
		const t0 = performance.now();
		try {
			// no attempt outlives the call's deadline
			const timeoutMs = Math.max(1, Math.min(policy.timeoutMs, Math.floor(deadline - performance.now())));
			answer = await send({ url, body, headers, timeoutMs });
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
		const wait = retryWaitMs(policy, attempt, answer?.status ?? null, answer?.headers['retry-after']);
		if (answer && answer.status === 429) {
			last = 'rate limited (429)';
		} else if (answer && !RETRIED_STATUSES.includes(answer.status)) {
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
		} else if (answer) last = `HTTP ${answer.status}`;
		const unavailable = (extra: Record<string, unknown> = {}, why = '') => {
			const rateLimited = last.startsWith('rate limited');
			return failure(
				redact,
				`the model failed after ${attempt} attempts${why}: ${last}`,
				rateLimited ? 429 : 504,
				rateLimited ? 'rate_limit' : 'upstream',
				true,
				{ code: 'MODEL_UNAVAILABLE', attempts: attempt, last, http_status: answer?.status ?? null, ...extra },
			);
		};
		if (attempt > maxRetries) throw unavailable();
		// a wait that would end past the deadline is not waited: the call fails now, retryable
		const left = Math.floor(deadline - performance.now());
		if (wait >= left)
			throw unavailable(
				{ deadline_ms: deadlineMs, wait_ms: wait },
				` (the next wait, ${wait} ms, passes the call's deadline of ${deadlineMs} ms)`,
			);
		if (!(await sleep(wait, policy.signal))) throw unavailable({ cancelled: true }, ' (cancelled)');
	}
}
