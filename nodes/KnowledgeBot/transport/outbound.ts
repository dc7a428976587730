/**
 * The outbound-request guard (issue 25 §1): the GET of a URL that came from outside (a chat member's link,
 * URL → Fetch of WF31). It never reaches an address inside the deployment unless the node's allowlist
 * names it:
 *  - only `http:` and `https:`; only the ports of the policy (80 and 443 unless Allowed Ports says otherwise);
 *  - every address is classified by ipaddr.js: only public unicast passes (IPv4 range `unicast`; IPv6 range
 *    `unicast` inside global unicast 2000::/3). Refused: loopback, unspecified, private (RFC 1918),
 *    link-local (169.254.169.254), CGNAT 100.64/10, multicast, broadcast, reserved and documentation ranges,
 *    IPv6 loopback, ULA fc00::/7, link-local fe80::/10, site-local fec0::/10, IPv4-mapped ::ffff:0:0/96,
 *    IPv4-compatible ::/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32…;
 *  - the check is made on the address actually connected to: the host name is resolved once (the
 *    resolver), every resolved address is classified, and the socket is opened to a permitted one as an IP
 *    literal (no second lookup, so no DNS-rebinding window); an IP-literal host (any spelling the WHATWG URL
 *    parser turns into one: `127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`, `[::ffff:127.0.0.1]`, a
 *    trailing dot) is classified as it is;
 *  - redirects are followed by hand (at most MAX_REDIRECTS), each hop checked again (scheme, port, address);
 *  - user info in a URL (`http://good@127.0.0.1/`) is never sent and never decides the host: the WHATWG
 *    parser's host is what is checked and connected to.
 * The allowlist (OutboundPolicy, from the node's Options → Allowed Private Addresses / Allowed Ports) lets a
 * deployment fetch from its own network: a host name it names may resolve to any address, an address in one
 * of its CIDRs is permitted (an IPv4-mapped or IPv4-compatible address also when its IPv4 address is in an IPv4
 * CIDR). Unspecified (0.0.0.0, ::), multicast and broadcast addresses are never permitted, also in their
 * IPv4-mapped or IPv4-compatible form (`::ffff:0.0.0.0`, `::ffff:224.0.0.1`).
 * Every request still open when guardedGet settles (a redirect hop's body, a refused read) is closed then.
 *
 * A refusal throws BlockedAddressError (code BLOCKED_ADDRESS) before any socket is opened.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { pipeline, type Duplex } from 'node:stream';
import tls from 'node:tls';
import { domainToASCII } from 'node:url';
import zlib from 'node:zlib';
import ipaddr from 'ipaddr.js';
import { TooLargeError, type HttpResponse } from './http';

/** Redirect hops followed at most (a 6th redirect is a RedirectError). */
export const MAX_REDIRECTS = 5;
/** Ports a URL may name when the node's Allowed Ports is empty. */
export const DEFAULT_PORTS: readonly number[] = [80, 443];

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
/** Ranges an allowlist never opens: no fetch has a meaning there. */
const NEVER = new Set(['unspecified', 'multicast', 'broadcast']);

/**
 * The ipaddr.js range of an address (`unicast`, `private`, `loopback`, `linkLocal`, …), or
 * `nonGlobalUnicast` for an IPv6 address ipaddr.js calls unicast that lies outside 2000::/3 (e.g. the
 * IPv4-compatible `::7f00:1`).
 * @param address an IP address as a resolver or the URL parser gives it (brackets allowed)
 * @throws Error when `address` is not an IP address
 */
export function addressRange(address: string): string {
	const ip = ipaddr.parse(stripBrackets(address));
	const range = ip.range();
	if (range === 'unicast' && ip.kind() === 'ipv6' && !ip.match(GLOBAL_UNICAST_V6)) return 'nonGlobalUnicast';
	return range;
}

/** Whether `address` is public unicast (what the guard connects to without an allowlist). */
export function isPublicUnicast(address: string): boolean {
	return addressRange(address) === 'unicast';
}

function stripBrackets(host: string): string {
	return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** What the guard permits beyond public unicast on ports 80/443. */
export interface OutboundPolicy {
	/** Ports a URL (and every redirect hop) may name. */
	ports: ReadonlySet<number>;
	/** Host names (lower-case ASCII, no trailing dot) whose addresses may be private; `*.example` matches sub-domains. */
	hosts: readonly string[];
	/** CIDRs (an address alone is /32 or /128) whose addresses are permitted. */
	cidrs: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
}

/** No allowlist: public unicast on 80 and 443 only. */
export const DEFAULT_POLICY: OutboundPolicy = { ports: new Set(DEFAULT_PORTS), hosts: [], cidrs: [] };

/** An allowlist entry that is neither a host name, an IP address nor a CIDR; or a bad port. */
export class OutboundPolicyError extends Error {
	constructor(
		message: string,
		/** 'Allowed Private Addresses' or 'Allowed Ports' */
		readonly option: string,
		readonly entry: string,
	) {
		super(message);
		this.name = 'OutboundPolicyError';
	}
}

function entries(text: string | undefined): string[] {
	return (text ?? '')
		.split(/[\s,;]+/)
		.map((e) => e.trim())
		.filter(Boolean);
}

function normalHost(host: string): string {
	return host.toLowerCase().replace(/\.$/, '');
}

/**
 * Whether `text` is an IP address in its plain spelling: IPv4 as four decimal parts without leading zeros
 * (not `10.1`, `010.0.0.1`, `0x7f.0.0.1`), IPv6 without a zone id (`fe80::1%eth0`) and with any embedded IPv4
 * part spelled likewise.
 */
function strictAddress(text: string): boolean {
	if (text.includes('%')) return false;
	if (ipaddr.IPv4.isValidFourPartDecimal(text)) return true;
	if (!ipaddr.IPv6.isValid(text)) return false;
	const dotted = /:([^:]*\.[^:]*)$/.exec(text);
	return !dotted || ipaddr.IPv4.isValidFourPartDecimal(dotted[1]);
}

/** Whether `text` is `address/prefix` with a strict address (strictAddress) and a decimal prefix (0–32 or 0–128). */
function strictCidr(text: string): boolean {
	const m = /^([^/]+)\/(0|[1-9]\d{0,2})$/.exec(text);
	if (!m || !strictAddress(m[1])) return false;
	return ipaddr.IPv4.isValidFourPartDecimal(m[1])
		? ipaddr.IPv4.isValidCIDRFourPartDecimal(text)
		: ipaddr.IPv6.isValidCIDR(text);
}

/**
 * The policy of the node's options.
 * @param allowedAddresses host names (`intranet.example`, `*.corp.example`), IP addresses and CIDRs
 *   (`10.0.0.0/8`, `fd00::/8`), separated by commas, spaces or new lines; empty: none. IPv4 is written as
 *   four decimal parts (`10.0.0.0/8`, not `10/8`, `10.1/16` or `010.0.0.0/8`); no IPv6 zone id (`%eth0`).
 * @param allowedPorts ports (`8080`) and ranges (`8000-8100`), separated likewise; empty: 80 and 443
 * @throws OutboundPolicyError naming the option and the entry
 */
export function parseOutboundPolicy(allowedAddresses?: string, allowedPorts?: string): OutboundPolicy {
	const hosts: string[] = [];
	const cidrs: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [];
	for (const entry of entries(allowedAddresses)) {
		const bare = stripBrackets(entry);
		if (bare.includes('/')) {
			if (!strictCidr(bare)) throw new OutboundPolicyError(`not a CIDR: ${entry}`, 'Allowed Private Addresses', entry);
			cidrs.push(ipaddr.parseCIDR(bare));
		} else if (strictAddress(bare)) {
			const ip = ipaddr.parse(bare);
			cidrs.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
		} else {
			const wildcard = bare.startsWith('*.');
			const ascii = domainToASCII(normalHost(wildcard ? bare.slice(2) : bare));
			if (!ascii || !/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(ascii) || /^[0-9.]+$/.test(ascii))
				throw new OutboundPolicyError(
					`not a host name, IP address or CIDR: ${entry}`,
					'Allowed Private Addresses',
					entry,
				);
			hosts.push(wildcard ? `*.${ascii}` : ascii);
		}
	}
	const ports = new Set<number>();
	for (const entry of entries(allowedPorts)) {
		const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(entry);
		const from = m ? Number(m[1]) : NaN;
		const to = m?.[2] ? Number(m[2]) : from;
		if (!m || from < 1 || to > 65535 || to < from || to - from > 65535)
			throw new OutboundPolicyError(`not a port or a port range (1-65535): ${entry}`, 'Allowed Ports', entry);
		for (let p = from; p <= to; p++) ports.add(p);
	}
	return { ports: ports.size ? ports : new Set(DEFAULT_PORTS), hosts, cidrs };
}

function hostAllowed(policy: OutboundPolicy, hostname: string): boolean {
	const host = normalHost(hostname);
	return policy.hosts.some((h) => (h.startsWith('*.') ? host.endsWith(h.slice(1)) : host === h));
}

/**
 * The IPv4 address embedded in an IPv4-mapped (`::ffff:a.b.c.d`, ::ffff:0:0/96) or IPv4-compatible
 * (`::a.b.c.d`, ::/96 except `::` and `::1`) IPv6 address, or null. A socket to either form reaches the IPv4
 * address, so the guard classifies and matches that address too.
 */
export function embeddedIPv4(ip: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | null {
	if (ip.kind() !== 'ipv6') return null;
	const v6 = ip as ipaddr.IPv6;
	if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
	const bytes = v6.toByteArray();
	if (bytes.slice(0, 12).some((b) => b !== 0)) return null;
	const range = v6.range();
	if (range === 'unspecified' || range === 'loopback') return null;
	return new ipaddr.IPv4(bytes.slice(12));
}

/**
 * Why an address is refused under `policy`, or null when it is permitted. Public unicast passes. Unspecified,
 * multicast and broadcast are refused whatever the allowlist says, also when embedded in an IPv4-mapped or
 * IPv4-compatible IPv6 address (`::ffff:0.0.0.0`, `::ffff:224.0.0.1`). Anything else passes when the URL's host
 * name is allowlisted, or when a CIDR of the policy covers the address or the IPv4 address embedded in it
 * (`::ffff:10.1.2.3` is covered by `10.0.0.0/8`); else it is refused with its ipaddr.js range (`ipv4Mapped`…).
 * @param allowedHost whether the URL's host name is on the allowlist
 */
export function refusal(address: string, policy: OutboundPolicy, allowedHost: boolean): string | null {
	let ip: ipaddr.IPv4 | ipaddr.IPv6;
	try {
		ip = ipaddr.parse(stripBrackets(address));
	} catch {
		return 'notAnAddress';
	}
	const range = addressRange(address);
	if (range === 'unicast') return null;
	if (NEVER.has(range)) return range;
	const inner = embeddedIPv4(ip);
	const innerRange = inner?.range();
	if (innerRange && NEVER.has(innerRange)) return innerRange;
	if (allowedHost) return null;
	const covers = (candidate: ipaddr.IPv4 | ipaddr.IPv6) =>
		policy.cidrs.some(([net, bits]) => net.kind() === candidate.kind() && candidate.match(net, bits));
	return covers(ip) || (inner !== null && covers(inner)) ? null : range;
}

/** Why the guard refused a URL; `reason`: scheme, port, address (with the ipaddr.js `range`), unresolved. */
export class BlockedAddressError extends Error {
	readonly code = 'BLOCKED_ADDRESS';
	constructor(
		message: string,
		readonly reason: 'scheme' | 'port' | 'address' | 'unresolved',
		/** The URL refused (the hop, after redirects), without user info. */
		readonly url: string,
		readonly range?: string,
	) {
		super(message);
		this.name = 'BlockedAddressError';
	}
}

/** More than MAX_REDIRECTS redirects, or a redirect without a usable Location. */
export class RedirectError extends Error {
	constructor(
		message: string,
		readonly code: 'TOO_MANY_REDIRECTS' | 'BAD_REDIRECT',
		/** The hop that answered the redirect. */
		readonly url: string,
	) {
		super(message);
		this.name = 'RedirectError';
	}
}

/** Resolves a host name to every address (as dns.lookup with `all: true`). */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

/** What the guard hands the connect step: a permitted IP literal, its port, and the TLS server name. */
export interface ConnectTarget {
	/** The permitted IP address (never a name). */
	address: string;
	port: number;
	family: 4 | 6;
	tls: boolean;
	/** The URL's host name for SNI and certificate checks (absent for an IP-literal host). */
	servername?: string;
}

/** Opens the socket to a checked target (default: net.connect / tls.connect). */
export type Connector = (target: ConnectTarget) => Duplex;

export const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

export const systemConnector: Connector = (target) =>
	target.tls
		? tls.connect({ host: target.address, port: target.port, servername: target.servername })
		: net.connect({ host: target.address, port: target.port });

export interface GuardedGetOptions {
	/** The whole fetch, every hop included (ms). */
	timeoutMs: number;
	/** Body limit after decoding (bytes). */
	maxBytes: number;
	policy?: OutboundPolicy;
	/** Injected in tests; default dns.lookup. */
	resolve?: Resolver;
	/** Injected in tests; default net/tls.connect. */
	connect?: Connector;
}

/** A guarded GET: `(url, options) → HttpResponse` (the final URL in `url`). */
export type GuardedGet = (url: string, options: GuardedGetOptions) => Promise<HttpResponse>;

/** The URL a hop may go to, checked for scheme and port. @throws BlockedAddressError */
function checkedUrl(raw: string | URL, policy: OutboundPolicy): URL {
	let url: URL;
	try {
		url = new URL(raw);
	} catch {
		throw new BlockedAddressError(`not a URL: ${String(raw)}`, 'scheme', String(raw));
	}
	url.username = '';
	url.password = '';
	url.hash = '';
	if (url.protocol !== 'http:' && url.protocol !== 'https:')
		throw new BlockedAddressError(`only http and https are fetched, not ${url.protocol}`, 'scheme', url.href);
	const port = portOf(url);
	if (!policy.ports.has(port)) throw new BlockedAddressError(`port ${port} is not an allowed port`, 'port', url.href);
	return url;
}

function portOf(url: URL): number {
	return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/**
 * The target of a URL: its IP literal, or the first permitted address its name resolves to.
 * @throws BlockedAddressError when no address is permitted (or the name resolves to none)
 */
async function target(url: URL, policy: OutboundPolicy, resolve: Resolver): Promise<ConnectTarget> {
	const host = stripBrackets(url.hostname);
	const port = portOf(url);
	const secure = url.protocol === 'https:';
	if (net.isIP(host)) {
		const why = refusal(host, policy, false);
		if (why) throw new BlockedAddressError(`${host} is not a public address (${why})`, 'address', url.href, why);
		return { address: host, port, family: net.isIPv6(host) ? 6 : 4, tls: secure };
	}
	const name = host.replace(/\.$/, '');
	const allowedHost = hostAllowed(policy, name);
	const addresses = await resolve(name);
	let first: string | null = null;
	for (const { address } of addresses) {
		const why = refusal(address, policy, allowedHost);
		if (!why) return { address, port, family: net.isIPv6(address) ? 6 : 4, tls: secure, servername: name };
		first ??= why;
	}
	if (first)
		throw new BlockedAddressError(`${name} resolves to no public address (${first})`, 'address', url.href, first);
	throw new BlockedAddressError(`${name} resolves to no address`, 'unresolved', url.href);
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * GET `url` through the guard, following redirects by hand.
 * @returns status, headers (lower-case), body (decoded from gzip/deflate/br, at most `maxBytes`) and the final URL
 * @throws BlockedAddressError (nothing was sent to the refused hop); RedirectError; TooLargeError;
 *   a DOMException named TimeoutError past `timeoutMs`; a network error (ECONNREFUSED…)
 */
export const guardedGet: GuardedGet = async (start, options) => {
	const policy = options.policy ?? DEFAULT_POLICY;
	const resolve = options.resolve ?? systemResolver;
	const connect = options.connect ?? systemConnector;
	// one signal for every hop: the time limit aborts it, and so does the end of guardedGet (finally), which
	// closes any request or body still open (a redirect hop's, a refused or failed read's)
	const controller = new AbortController();
	const signal = controller.signal;
	const timer = setTimeout(
		() => controller.abort(new DOMException(`no answer within ${options.timeoutMs} ms`, 'TimeoutError')),
		options.timeoutMs,
	);
	try {
		let url = checkedUrl(start, policy);
		for (let hop = 0; ; hop++) {
			const to = await abortable(target(url, policy, resolve), signal);
			const res = await request(url, to, connect, signal);
			if (REDIRECTS.has(res.statusCode ?? 0) && res.headers.location !== undefined) {
				// a redirect's body is never read: close its socket now (a body that streams on costs nothing)
				res.destroy();
				if (hop >= MAX_REDIRECTS)
					throw new RedirectError(`more than ${MAX_REDIRECTS} redirects`, 'TOO_MANY_REDIRECTS', url.href);
				let next: URL;
				try {
					next = new URL(res.headers.location, url);
				} catch {
					throw new RedirectError('redirect to a Location that is not a URL', 'BAD_REDIRECT', url.href);
				}
				url = checkedUrl(next, policy);
				continue;
			}
			return await readBody(res, url, options.maxBytes, signal);
		}
	} finally {
		clearTimeout(timer);
		if (!signal.aborted) controller.abort(new DOMException('guardedGet has settled', 'AbortError'));
	}
};

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
	if (signal.aborted) return Promise.reject(signal.reason);
	return new Promise<T>((resolve, reject) => {
		const onAbort = () => reject(signal.reason);
		signal.addEventListener('abort', onAbort, { once: true });
		promise.then(
			(v) => {
				signal.removeEventListener('abort', onAbort);
				resolve(v);
			},
			(e) => {
				signal.removeEventListener('abort', onAbort);
				reject(e);
			},
		);
	});
}

function request(url: URL, to: ConnectTarget, connect: Connector, signal: AbortSignal): Promise<http.IncomingMessage> {
	return new Promise((resolve, reject) => {
		const send = to.tls ? https.request : http.request;
		const req = send(
			{
				protocol: url.protocol,
				host: stripBrackets(url.hostname),
				port: to.port,
				path: `${url.pathname}${url.search}`,
				method: 'GET',
				headers: {
					'user-agent': 'n8n-nodes-contracts/knowledge-bot',
					accept: '*/*',
					'accept-encoding': 'gzip, deflate, br',
				},
				signal,
				// the one socket: to the checked address (no lookup), no agent and no reuse
				createConnection: () => connect(to),
			},
			resolve,
		);
		req.on('error', (error) => reject(signal.aborted ? signal.reason : error));
		req.end();
	});
}

/** The body decoded from its Content-Encoding (gzip, deflate, br); an error of the answer ends the decoder too. */
function decoded(res: http.IncomingMessage): NodeJS.ReadableStream {
	const encoding = String(res.headers['content-encoding'] ?? '')
		.trim()
		.toLowerCase();
	const decoder =
		encoding === 'gzip' || encoding === 'x-gzip'
			? zlib.createGunzip()
			: encoding === 'deflate'
				? zlib.createInflate()
				: encoding === 'br'
					? zlib.createBrotliDecompress()
					: null;
	if (!decoder) return res;
	pipeline(res, decoder, () => undefined);
	return decoder;
}

async function readBody(
	res: http.IncomingMessage,
	url: URL,
	maxBytes: number,
	signal: AbortSignal,
): Promise<HttpResponse> {
	const headers: Record<string, string> = {};
	for (const [name, value] of Object.entries(res.headers))
		if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
	const declared = Number(headers['content-length']);
	if (!headers['content-encoding'] && Number.isFinite(declared) && declared > maxBytes) {
		res.destroy();
		throw new TooLargeError(declared, maxBytes);
	}
	const chunks: Buffer[] = [];
	let size = 0;
	try {
		for await (const chunk of decoded(res)) {
			const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
			size += buffer.byteLength;
			if (size > maxBytes) throw new TooLargeError(size, maxBytes);
			chunks.push(buffer);
		}
	} catch (error) {
		res.destroy();
		throw signal.aborted && !(error instanceof TooLargeError) ? signal.reason : error;
	}
	return { status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks), url: url.href };
}
