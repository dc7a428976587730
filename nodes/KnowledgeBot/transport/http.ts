/**
 * GET with a time limit and a size limit, for URL fetches (WF31) and Telegram file downloads (WF32).
 * The body is read as a stream and abandoned as soon as it passes `maxBytes`, so a huge page never
 * fills memory. Redirects are followed (up to fetch's default of 20).
 */

export interface HttpResponse {
	status: number;
	/** Lower-case header names */
	headers: Record<string, string>;
	body: Buffer;
	/** The URL after redirects */
	url: string;
}

export type HttpGet = (url: string, options: { timeoutMs: number; maxBytes: number }) => Promise<HttpResponse>;

/** The body passed the size limit: `bytes` read so far (> limit), `limit` in bytes. */
export class TooLargeError extends Error {
	constructor(readonly bytes: number, readonly limit: number) {
		super(`body larger than ${limit} bytes`);
	}
}

/**
 * @throws TooLargeError; TimeoutError/AbortError (time limit, in ms); TypeError (network: refused, DNS…)
 */
export const httpGet: HttpGet = async (url, { timeoutMs, maxBytes }) => {
	const res = await fetch(url, { redirect: 'follow', signal: AbortSignal.timeout(timeoutMs), headers: { 'user-agent': 'n8n-nodes-contracts/knowledge-bot' } });
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
