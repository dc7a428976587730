/**
 * The HTTP of the Knowledge Bot to admin-configured URLs: GET with a time limit and a size limit (the Bot
 * API: getFile and the file download of WF32, the watchdog's getMe / getWebhookInfo), a JSON POST
 * (embeddings, sendMessage) and the model call's sender (WF51). A URL that comes from outside (a posted
 * link, URL → Fetch of WF31) never goes through here: ./outbound.ts guardedGet fetches it (issue 25).
 * GET:
 * The body is read as a stream and abandoned as soon as it passes `maxBytes`, so a huge page never
 * fills memory. Redirects are followed (up to fetch's default of 20) unless `redirect: 'manual'` is given
 * (every Bot API call: the token is in the path), which returns the 3xx answer as it is.
 * POST (JSON, and the model call's sender): never follows a redirect (they carry an API key or a token;
 * fetch would pass custom headers like `x-goog-api-key` on to another host): a 3xx is returned as the status.
 */
import type { Sender } from '../../shared/llm/generate';

export interface HttpResponse {
	status: number;
	/** Lower-case header names */
	headers: Record<string, string>;
	body: Buffer;
	/** The URL after redirects */
	url: string;
}

/** `redirect`: 'follow' (default) or 'manual' (the 3xx answer is returned, nothing is sent to its Location). */
export type HttpGet = (
	url: string,
	options: { timeoutMs: number; maxBytes: number; redirect?: 'follow' | 'manual' },
) => Promise<HttpResponse>;

/** The body passed the size limit: `bytes` read so far (> limit), `limit` in bytes. */
export class TooLargeError extends Error {
	constructor(
		readonly bytes: number,
		readonly limit: number,
	) {
		super(`body larger than ${limit} bytes`);
	}
}

/**
 * @throws TooLargeError; TimeoutError/AbortError (time limit, in ms); TypeError (network: refused, DNS…)
 */
export const httpGet: HttpGet = async (url, { timeoutMs, maxBytes, redirect = 'follow' }) => {
	const res = await fetch(url, {
		redirect,
		signal: AbortSignal.timeout(timeoutMs),
		headers: { 'user-agent': 'n8n-nodes-contracts/knowledge-bot' },
	});
	const headers: Record<string, string> = {};
	res.headers.forEach((value, name) => {
		headers[name] = value;
	});
	const declared = Number(headers['content-length']);
	if (Number.isFinite(declared) && declared > maxBytes) {
		await res.body?.cancel();
		throw new TooLargeError(declared, maxBytes);
	}
	const chunks: Buffer[] = [];
	let size = 0;
	if (res.body) {
		for await (const chunk of res.body) {
			size += chunk.byteLength;
			if (size > maxBytes) {
				throw new TooLargeError(size, maxBytes);
			}
			chunks.push(Buffer.from(chunk));
		}
	}
	return { status: res.status, headers, body: Buffer.concat(chunks), url: res.url || url };
};

/** A JSON POST's answer: status and parsed body (null when the body is not JSON). */
export type HttpPostJson = (
	url: string,
	body: unknown,
	options: { headers?: Record<string, string>; timeoutMs: number },
) => Promise<{ status: number; body: unknown }>;

/** @throws TimeoutError/AbortError (time limit, in ms); TypeError (network) */
export const httpPostJson: HttpPostJson = async (url, body, { headers = {}, timeoutMs }) => {
	const res = await fetch(url, {
		method: 'POST',
		redirect: 'manual',
		headers: { 'content-type': 'application/json', ...headers },
		body: JSON.stringify(body),
		signal: AbortSignal.timeout(timeoutMs),
	});
	const text = await res.text();
	try {
		return { status: res.status, body: JSON.parse(text) as unknown };
	} catch {
		return { status: res.status, body: null };
	}
};

/**
 * The model call's sender (shared/llm/generate.ts) over fetch: status, parsed body and headers; throws
 * only when no answer came (timeout, refused, reset), which the retry policy handles.
 */
export const fetchSender: Sender = async ({ url, body, headers, timeoutMs }) => {
	const res = await fetch(url, {
		method: 'POST',
		redirect: 'manual',
		headers,
		body: JSON.stringify(body),
		signal: AbortSignal.timeout(timeoutMs),
	});
	const text = await res.text();
	const answerHeaders: Record<string, string> = {};
	res.headers.forEach((value, name) => {
		answerHeaders[name] = value;
	});
	let parsed: unknown = null;
	try {
		parsed = JSON.parse(text);
	} catch {
		// a non-JSON body: generate() reports the missing text
	}
	return { status: res.status, body: parsed, headers: answerHeaders };
};
