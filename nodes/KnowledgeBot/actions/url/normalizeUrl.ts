/**
 * The canonical form of a URL (WF30 of seed 003), so the same page shared twice is one content.urls row:
 *  - a missing scheme becomes http; only http and https are accepted;
 *  - scheme and host lower-cased, IDN hosts in punycode, default ports (80/443) dropped, the path's
 *    dot segments resolved (all by the WHATWG URL parser);
 *  - user info (user:password@) and the fragment removed; tracking parameters removed (TRACKING_PARAMS, any `utm_*`); the remaining
 *    query parameters sorted by name (stable: equal names keep their order); an empty query dropped.
 * Pure: no I/O.
 */

/** Query parameters that only track the click, never select content. */
export const TRACKING_PARAMS = new Set([
	'fbclid',
	'gclid',
	'dclid',
	'gbraid',
	'wbraid',
	'msclkid',
	'yclid',
	'twclid',
	'ttclid',
	'li_fat_id',
	'igshid',
	'mc_cid',
	'mc_eid',
	'_hsenc',
	'_hsmi',
	'mkt_tok',
	'ref_src',
	'spm',
	'vero_id',
	'oly_enc_id',
	'oly_anon_id',
]);

export class InvalidUrlError extends Error {
	constructor(
		message: string,
		readonly code: 'INVALID_URL' | 'UNSUPPORTED_SCHEME',
	) {
		super(message);
	}
}

/**
 * @returns `{ normalized_url, host }`
 * @throws InvalidUrlError INVALID_URL (not a URL) or UNSUPPORTED_SCHEME (not http/https)
 */
export function normalizeUrl(input: string): { normalized_url: string; host: string } {
	const trimmed = input.trim();
	const withScheme =
		/^[a-z][a-z0-9+.-]*:/i.test(trimmed) && !/^[^:/]+:\d+(\/|$)/.test(trimmed) ? trimmed : `http://${trimmed}`;
	let url: URL;
	try {
		url = new URL(withScheme);
	} catch {
		throw new InvalidUrlError(`not a URL: ${input}`, 'INVALID_URL');
	}
	if (url.protocol !== 'http:' && url.protocol !== 'https:') {
		throw new InvalidUrlError(`only http and https URLs are fetched, not ${url.protocol}`, 'UNSUPPORTED_SCHEME');
	}
	if (!url.hostname) throw new InvalidUrlError(`not a URL: ${input}`, 'INVALID_URL');
	url.hash = '';
	url.username = '';
	url.password = '';
	if (url.hostname.endsWith('.')) url.hostname = url.hostname.slice(0, -1);
	const kept = [...url.searchParams.entries()].filter(
		([name]) => !TRACKING_PARAMS.has(name.toLowerCase()) && !name.toLowerCase().startsWith('utm_'),
	);
	kept.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
	url.search = kept.length ? new URLSearchParams(kept).toString() : '';
	return { normalized_url: url.toString(), host: url.hostname };
}
