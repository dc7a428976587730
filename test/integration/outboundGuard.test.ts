/**
 * The outbound-request guard of URL → Fetch (WF31, issue 25 §1) on real PostgreSQL with loopback listeners
 * that count hits:
 *  - WF31's Knowledge Bot node, with the shipped parameters, run by n8n's own engine (test/helpers/n8nEngine.ts)
 *    with its error output wired into the Error Pipe (WF99's node): every loopback spelling, `localhost`,
 *    the default ports, a redirect from an allowlisted host to a non-allowlisted port or address → 0 hits
 *    on the target, `error` 403 BLOCKED_ADDRESS on the error output, one content.url_fetches `error`
 *    row, one ops.errors row, no document;
 *  - the operation with an injected resolver: a host name resolving to 127.0.0.1 (0 hits), and an
 *    allowlisted one (fetched);
 *  - guardedGet on the raw spellings (user info, trailing dot, `127.1`, …) with real sockets.
 * Safety net: every TCP connect in this process is checked; one to a non-loopback address fails the test
 * before a packet is sent (a broken guard cannot reach 169.254.169.254 from here).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, test } from '@jest/globals';
import { fetchOperation } from '../../nodes/KnowledgeBot/actions/url/fetch.operation';
import { normalizeOperation } from '../../nodes/KnowledgeBot/actions/url/normalize.operation';
import {
	BlockedAddressError,
	guardedGet,
	parseOutboundPolicy,
	systemConnector,
	type Connector,
	type Resolver,
} from '../../nodes/KnowledgeBot/transport/outbound';
import { TooLargeError } from '../../nodes/KnowledgeBot/transport/http';
import { closeAllPools } from '../../nodes/shared/postgres/pool';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { knowledgeRunner } from '../helpers/knowledgeOps';
import { runWorkflow, stopEngine } from '../helpers/n8nEngine';
import { testSkipIf } from '../helpers/skip';

/** A loopback listener counting the requests it gets; it answers an internal page. */
interface Listener {
	port: number;
	hits: string[];
	close(): Promise<void>;
}

async function listen(host: string, handler?: http.RequestListener): Promise<Listener> {
	const hits: string[] = [];
	const server = http.createServer((req, res) => {
		hits.push(req.url ?? '');
		if (handler) return handler(req, res);
		res.writeHead(200, { 'content-type': 'text/plain' }).end('INTERNAL: the admin console, vault code ZEBRA-7731');
	});
	await new Promise<void>((r) => server.listen(0, host, r));
	return {
		port: (server.address() as AddressInfo).port,
		hits,
		close: async () => {
			server.closeAllConnections();
			await new Promise((r) => server.close(r));
		},
	};
}

/** Whether `host` is a loopback address (127/8, ::1, ::ffff:127/104) or localhost. */
function loopback(host: unknown): boolean {
	if (host === undefined || host === 'localhost') return true;
	if (typeof host !== 'string') return false;
	if (net.isIPv4(host)) return host.startsWith('127.');
	return host === '::1' || /^::ffff:127\./i.test(host);
}

const realConnect = net.Socket.prototype.connect;
const refusedConnects: unknown[] = [];

let db: TestDatabase;
let tenant: string;
let inside4: Listener;
let inside6: Listener;
let allowed: Listener;

beforeAll(async () => {
	// the safety net: a connect to anything but loopback (or a Unix socket) throws before a packet is sent
	net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
		const [first, second] = args;
		const host =
			typeof first === 'object' && first !== null
				? (first as { path?: string; host?: string }).path
					? 'localhost'
					: (first as { host?: string }).host
				: typeof first === 'number'
					? (second as string | undefined)
					: 'localhost';
		if (!loopback(host)) {
			refusedConnects.push(host);
			throw new Error(`test safety net: connect to non-loopback ${String(host)}`);
		}
		return (realConnect as (...a: unknown[]) => net.Socket).apply(this, args);
	} as typeof realConnect;
	db = await setupDatabase();
	tenant = (await seedBot(db.pool, 'ssrf_bot', 'Ssrf-secret_1')).tenantId;
	inside4 = await listen('127.0.0.1');
	inside6 = await listen('::1');
	allowed = await listen('127.0.0.1', (req, res) => {
		const to: Record<string, string> = {
			'/to-inside': `http://127.0.0.1:${inside4.port}/secret`,
			'/to-inside-spelled': `http://2130706433:${inside4.port}/secret`,
			'/to-inside6': `http://[::1]:${inside6.port}/secret`,
			'/to-metadata': 'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
			'/to-localhost': `http://localhost:${inside4.port}/secret`,
		};
		if (to[req.url ?? '']) res.writeHead(302, { location: to[req.url ?? ''] }).end();
		else res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body><p>An allowed page.</p></body></html>');
	});
});

afterAll(async () => {
	net.Socket.prototype.connect = realConnect;
	await Promise.all([inside4, inside6, allowed].map((l) => l?.close()));
	await closeAllPools();
	await db?.drop();
	stopEngine();
	assert.deepEqual(refusedConnects, [], 'no connect to a non-loopback address was even attempted');
});

const GROUP = { chat_id: -100777, visibility: 'group', dm_owner_user_id: null, message_version_id: null };
const CORRELATION = '2d3e4f5a-6b7c-4d8e-9fa0-b1c2d3e4f5a6';

async function urlId(url: string): Promise<number> {
	const { data } = await knowledgeRunner(() => db.pool, CORRELATION).run(normalizeOperation, {
		tenant_id: tenant,
		url,
		ctx: GROUP,
	});
	return Number(data.url_id);
}

const WF31 = JSON.parse(
	fs.readFileSync(path.join(__dirname, '..', '..', 'workflows-json', 'WF31_url_fetcher.json'), 'utf8'),
) as { nodes: Array<{ name: string; type: string; parameters: Record<string, unknown> }> };
const SHIPPED = WF31.nodes.find((n) => n.type === 'n8n-nodes-contracts.knowledgeBot')!.parameters;

/** WF31's Fetch URL node (shipped parameters, Options as given) → its error output → Error Pipe, in n8n's engine. */
async function wf31(url: string, options: Record<string, string> = {}) {
	const id = await urlId(url);
	const correlationId = randomUUID();
	const run = await runWorkflow({
		nodes: [
			{
				name: 'Fetch URL',
				type: 'knowledgeBot',
				parameters: { ...SHIPPED, options: { ...(SHIPPED.options as object), ...options } },
				onError: 'continueErrorOutput',
				credentials: { postgresContractsApi: 'Contracts DB' },
			},
			{
				name: 'Error Pipe',
				type: 'errorPipe',
				parameters: { source: 'WF99' },
				credentials: { postgresContractsApi: 'Contracts DB' },
			},
		],
		connections: { 'Fetch URL': [[], ['Error Pipe']] },
		items: [{ json: { req: { tenant_id: tenant, url_id: id, ctx: GROUP }, ctx: { correlation_id: correlationId } } }],
		credentials: { postgresContractsApi: { ...db.credential } },
	});
	assert.equal(run.error, undefined, String(run.error));
	return { run, id, correlationId };
}

/** What WF31 left for a refused URL: the error item, the attempt row, the ops.errors row, no document. */
async function assertRefused(url: string, options: Record<string, string>, reason: string) {
	const { run, id, correlationId } = await wf31(url, options);
	assert.deepEqual(run.output('Fetch URL', 0), [], `${url}: nothing on the success output`);
	const [errorItem] = run.output('Fetch URL', 1);
	const error = (errorItem?.json as { error?: Record<string, unknown> }).error;
	assert.ok(error, `${url}: an error item`);
	assert.equal(error.status_code, 403, url);
	assert.equal(error.retryable, false, url);
	const details = error.details as Record<string, unknown>;
	assert.equal(details.code, 'BLOCKED_ADDRESS', url);
	assert.equal(details.reason, reason, url);
	const fetches = await db.pool.query<{ status: string; error: string; blob_object_id: string | null }>(
		'SELECT status, error, blob_object_id FROM content.url_fetches WHERE url_id = $1 ORDER BY id DESC LIMIT 1',
		[id],
	);
	assert.equal(fetches.rows[0].status, 'error', url);
	assert.match(fetches.rows[0].error, /^BLOCKED_ADDRESS: /, url);
	assert.equal(fetches.rows[0].blob_object_id, null);
	const errors = await db.pool.query<{ status_code: number; retryable: boolean; node: string; code: string }>(
		"SELECT status_code, retryable, node, details #>> '{details,code}' AS code, details::text AS text FROM ops.errors WHERE correlation_id = $1",
		[correlationId],
	);
	assert.equal(errors.rows.length, 1, `${url}: one ops.errors row`);
	assert.equal(errors.rows[0].status_code, 403);
	assert.equal(errors.rows[0].node, 'Fetch URL');
	assert.match(JSON.stringify(errors.rows[0]), /BLOCKED_ADDRESS/);
	const docs = await db.pool.query("SELECT count(*)::int AS n FROM content.documents WHERE source_key = 'url:' || $1", [
		String(id),
	]);
	assert.equal(docs.rows[0].n, 0, `${url}: no document, nothing to chunk`);
}

const ANY_PORT = { allowedPorts: '1-65535' };

describe('WF31 in n8n’s engine, error output → Error Pipe', () => {
	test('every loopback spelling: 0 hits, 403 BLOCKED_ADDRESS (address), one url_fetches error row and one ops.errors row each', async () => {
		const p = () => inside4.port;
		const attacks = [
			`http://127.0.0.1:${p()}/latest/meta-data/`,
			`http://127.1:${p()}/`,
			`http://2130706433:${p()}/`,
			`http://0x7f000001:${p()}/`,
			`http://0177.0.0.1:${p()}/`,
			`http://0x7f.1:${p()}/`,
			`http://127.0.0.1.:${p()}/`,
			`http://[::ffff:127.0.0.1]:${p()}/`,
			`http://good@127.0.0.1:${p()}/`,
			`http://good.example:pw@127.0.0.1:${p()}/x`,
			`http://localhost:${p()}/`,
			`http://LOCALHOST.:${p()}/`,
			`http://[::1]:${inside6.port}/`,
		];
		for (const url of attacks) await assertRefused(url, ANY_PORT, 'address');
		assert.deepEqual(inside4.hits, []);
		assert.deepEqual(inside6.hits, []);
	});

	test('no options (as shipped): a loopback URL on another port is refused for its port, on port 80 for its address', async () => {
		await assertRefused(`http://127.0.0.1:${inside4.port}/`, {}, 'port');
		await assertRefused('http://127.0.0.1/', {}, 'address');
		await assertRefused('http://localhost/', {}, 'address');
		assert.deepEqual(inside4.hits, []);
	});

	test('an allowlisted host redirecting to a non-allowlisted port, spelling, IPv6 loopback, localhost or the metadata address: the redirect is refused, 0 hits there', async () => {
		const options = { allowedPrivateAddresses: '127.0.0.1', allowedPorts: `80, ${allowed.port}` };
		const before = allowed.hits.length;
		await assertRefused(`http://127.0.0.1:${allowed.port}/to-inside`, options, 'port');
		await assertRefused(`http://127.0.0.1:${allowed.port}/to-inside-spelled`, options, 'port');
		await assertRefused(`http://127.0.0.1:${allowed.port}/to-inside6`, options, 'port');
		await assertRefused(`http://127.0.0.1:${allowed.port}/to-localhost`, options, 'port');
		await assertRefused(`http://127.0.0.1:${allowed.port}/to-metadata`, options, 'address');
		assert.equal(allowed.hits.length - before, 5, 'the allowlisted host was asked each time');
		// the port allowed too: the address of the hop decides (127.0.0.1 is allowlisted, ::1 and localhost are not)
		const ports = { allowedPrivateAddresses: '127.0.0.1', allowedPorts: `${allowed.port}, ${inside6.port}` };
		await assertRefused(`http://127.0.0.1:${allowed.port}/to-inside6`, ports, 'address');
		assert.deepEqual(inside4.hits, []);
		assert.deepEqual(inside6.hits, []);
	});

	test('the allowlist named explicitly: the same loopback page is fetched (the guard is what refused it)', async () => {
		const { run, correlationId } = await wf31(`http://127.0.0.1:${allowed.port}/page`, {
			allowedPrivateAddresses: '127.0.0.1',
			allowedPorts: String(allowed.port),
		});
		const [item] = run.output('Fetch URL', 0);
		assert.equal((item.json as { data: { status: string } }).data.status, 'pending');
		assert.deepEqual(run.output('Fetch URL', 1), []);
		const errors = await db.pool.query('SELECT 1 FROM ops.errors WHERE correlation_id = $1', [correlationId]);
		assert.equal(errors.rows.length, 0);
	});

	test('a bad allowlist entry: 500 validation BAD_OUTBOUND_OPTION naming the option, nothing fetched', async () => {
		const before = allowed.hits.length;
		const { run } = await wf31(`http://127.0.0.1:${allowed.port}/bad-option`, {
			allowedPrivateAddresses: '127.0.0.1/40',
			allowedPorts: String(allowed.port),
		});
		const error = (run.output('Fetch URL', 1)[0].json as { error: Record<string, unknown> }).error;
		assert.equal(error.status_code, 500);
		assert.deepEqual(
			[(error.details as Record<string, unknown>).code, (error.details as Record<string, unknown>).option],
			['BAD_OUTBOUND_OPTION', 'Allowed Private Addresses'],
		);
		assert.equal(allowed.hits.length, before);
	});
});

describe('URL → Fetch with an injected resolver', () => {
	/** A resolver for made-up names; it never asks DNS. */
	const resolve: Resolver = async (hostname) =>
		({
			'intranet.attacker.example': [{ address: '127.0.0.1', family: 4 }],
			'rebind.attacker.example': [
				{ address: '127.0.0.1', family: 4 },
				{ address: '::1', family: 6 },
			],
		})[hostname] ?? [];
	/** Real sockets, to loopback only (the safety net would throw anyway). */
	const connect: Connector = (target) => {
		assert.ok(loopback(target.address), `connect to ${target.address}`);
		return systemConnector(target);
	};

	test('a host name that resolves to 127.0.0.1: refused (address), 0 hits, an error attempt recorded', async () => {
		const runner = knowledgeRunner(() => db.pool, CORRELATION, {}, { allowedPorts: '1-65535', resolve, connect });
		for (const host of ['intranet.attacker.example', 'rebind.attacker.example']) {
			const id = await urlId(`http://${host}:${inside4.port}/secret`);
			const error = await runner.failure(fetchOperation, { tenant_id: tenant, url_id: id, ctx: GROUP });
			assert.equal(error.statusCode, 403);
			assert.equal(error.retryable, false);
			assert.equal(error.details.code, 'BLOCKED_ADDRESS');
			assert.equal(error.details.reason, 'address');
			assert.equal(error.details.range, 'loopback');
			const { rows } = await db.pool.query(
				'SELECT status, error FROM content.url_fetches WHERE url_id = $1 ORDER BY id DESC LIMIT 1',
				[id],
			);
			assert.equal(rows[0].status, 'error');
		}
		assert.deepEqual(inside4.hits, []);
	});

	test('the same name on the allowlist is fetched from the address it resolved to', async () => {
		const runner = knowledgeRunner(
			() => db.pool,
			CORRELATION,
			{},
			{ allowedAddresses: 'intranet.attacker.example', allowedPorts: String(allowed.port), resolve, connect },
		);
		const id = await urlId(`http://intranet.attacker.example:${allowed.port}/allowed-by-name`);
		const before = allowed.hits.length;
		const { data } = await runner.run(fetchOperation, { tenant_id: tenant, url_id: id, ctx: GROUP });
		assert.equal(data.status, 'pending');
		assert.deepEqual(allowed.hits.slice(before), ['/allowed-by-name']);
	});
});

test('guardedGet on raw loopback spellings (user info, trailing dot, odd IPv4 forms) with real sockets: 0 hits', async () => {
	const port = inside4.port;
	const policy = parseOutboundPolicy('', '1-65535');
	for (const url of [
		`http://good@127.0.0.1:${port}/`,
		`http://127.0.0.1@127.0.0.1:${port}/`,
		`http://127.0.0.1.:${port}/`,
		`http://127.1:${port}/`,
		`http://0x7f000001:${port}/`,
		`http://0177.0.0.1:${port}/`,
		`http://%31%32%37.0.0.1:${port}/`,
		`http://[::ffff:127.0.0.1]:${port}/`,
		`http://[0:0:0:0:0:ffff:7f00:1]:${port}/`,
		`http://localhost.:${port}/`,
	]) {
		const error = await guardedGet(url, { timeoutMs: 5000, maxBytes: 1000, policy }).then(
			() => assert.fail(`${url} was fetched`),
			(e: unknown) => e,
		);
		assert.ok(error instanceof BlockedAddressError, `${url}: ${String(error)}`);
		assert.ok(!error.url.includes('good'));
	}
	assert.deepEqual(inside4.hits, []);
});

/** A self-signed certificate for `localhost` made by openssl (null when openssl is not installed). */
function selfSigned(): { key: string; cert: string } | null {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'guard-tls-'));
	try {
		const made = spawnSync(
			'openssl',
			[
				'req',
				'-x509',
				'-newkey',
				'rsa:2048',
				'-nodes',
				'-days',
				'1',
				'-subj',
				'/CN=localhost',
				'-addext',
				'subjectAltName=DNS:localhost',
				'-keyout',
				path.join(dir, 'key.pem'),
				'-out',
				path.join(dir, 'cert.pem'),
			],
			{ stdio: 'ignore' },
		);
		if (made.status !== 0) return null;
		return {
			key: fs.readFileSync(path.join(dir, 'key.pem'), 'utf8'),
			cert: fs.readFileSync(path.join(dir, 'cert.pem'), 'utf8'),
		};
	} catch {
		return null;
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
}
const TLS = selfSigned();

testSkipIf(TLS ? null : 'openssl is not installed: no certificate for the HTTPS case')(
	'HTTPS through the guard: the socket goes to the checked address with the URL host as server name; the certificate is verified',
	async () => {
		const names: Array<string | undefined> = [];
		const server = https.createServer({ key: TLS!.key, cert: TLS!.cert }, (req, res) => res.end('over TLS'));
		server.on('secureConnection', (socket: tls.TLSSocket) => names.push(socket.servername || undefined));
		await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
		const port = (server.address() as AddressInfo).port;
		const resolve: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
		const policy = parseOutboundPolicy('localhost', String(port));
		try {
			// the system connector verifies against the system CAs: a self-signed certificate is refused
			await assert.rejects(
				guardedGet(`https://localhost:${port}/`, { timeoutMs: 5000, maxBytes: 100, policy, resolve }),
				/self[- ]signed/i,
			);
			// trusting this certificate (and only it), the same fetch succeeds with SNI `localhost`
			const trusting: Connector = (target) => {
				assert.deepEqual([target.address, target.tls, target.servername], ['127.0.0.1', true, 'localhost']);
				return tls.connect({ host: target.address, port: target.port, servername: target.servername, ca: TLS!.cert });
			};
			const res = await guardedGet(`https://localhost:${port}/page`, {
				timeoutMs: 5000,
				maxBytes: 100,
				policy,
				resolve,
				connect: trusting,
			});
			assert.equal(res.body.toString(), 'over TLS');
			assert.equal(res.url, `https://localhost:${port}/page`);
			assert.deepEqual(names, ['localhost'], 'SNI: the URL host, not the address');
			// not allowlisted: refused before any handshake
			await assert.rejects(
				guardedGet(`https://localhost:${port}/`, {
					timeoutMs: 5000,
					maxBytes: 100,
					policy: parseOutboundPolicy('', String(port)),
					resolve,
					connect: trusting,
				}),
				BlockedAddressError,
			);
			assert.equal(names.length, 1);
		} finally {
			server.closeAllConnections();
			await new Promise((r) => server.close(r));
		}
	},
);

test('guardedGet: gzip bodies decoded (the size limit counts decoded bytes); more than 5 redirects is a RedirectError; an allowlisted loop of 5 is followed', async () => {
	const { gzipSync } = await import('node:zlib');
	const page = Buffer.from('compressed page '.repeat(100));
	const loop = await listen('127.0.0.1', (req, res) => {
		const m = /^\/hop\/(\d+)$/.exec(req.url ?? '');
		if (m && Number(m[1]) > 0) res.writeHead(302, { location: `/hop/${Number(m[1]) - 1}` }).end();
		else if (m) res.writeHead(200).end('landed');
		else if (req.url === '/gz-stall') {
			res.writeHead(200, { 'content-encoding': 'gzip' });
			res.write(gzipSync(page).subarray(0, 20)); // then nothing more: the time limit ends it
		} else res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'text/plain' }).end(gzipSync(page));
	});
	try {
		const policy = parseOutboundPolicy('127.0.0.1', String(loop.port));
		const base = `http://127.0.0.1:${loop.port}`;
		const res = await guardedGet(`${base}/gz`, { timeoutMs: 5000, maxBytes: 10_000, policy });
		assert.deepEqual(res.body, page);
		await assert.rejects(
			guardedGet(`${base}/gz`, { timeoutMs: 5000, maxBytes: page.length - 1, policy }),
			TooLargeError,
		);
		await assert.rejects(guardedGet(`${base}/gz-stall`, { timeoutMs: 300, maxBytes: 10_000, policy }), {
			name: 'TimeoutError',
		});
		const five = await guardedGet(`${base}/hop/5`, { timeoutMs: 5000, maxBytes: 100, policy });
		assert.equal(five.body.toString(), 'landed');
		assert.equal(five.url, `${base}/hop/0`);
		const before = loop.hits.length;
		await assert.rejects(guardedGet(`${base}/hop/6`, { timeoutMs: 5000, maxBytes: 100, policy }), {
			name: 'RedirectError',
			code: 'TOO_MANY_REDIRECTS',
		});
		assert.equal(loop.hits.length - before, 6, 'the 7th request is never sent');
	} finally {
		await loop.close();
	}
});

test.each([
	['followed', '/final'],
	['refused (port not allowed)', 'http://127.0.0.1:1/elsewhere'],
])(
	'guardedGet: a redirect hop whose body streams on is closed as soon as the redirect is %s (not at the time limit)',
	async (_, location) => {
		let hopClosed: number | null = null;
		let written = 0;
		const server = await listen('127.0.0.1', (req, res) => {
			if (req.url !== '/endless-redirect') return void res.writeHead(200).end('landed');
			res.writeHead(302, { location });
			const chunk = Buffer.alloc(64 * 1024, 0x61);
			const tick = setInterval(() => {
				res.write(chunk);
				written += chunk.length;
			}, 2);
			res.on('close', () => {
				clearInterval(tick);
				hopClosed = Date.now();
			});
		});
		try {
			const policy = parseOutboundPolicy('127.0.0.1', String(server.port));
			const outcome = await guardedGet(`http://127.0.0.1:${server.port}/endless-redirect`, {
				timeoutMs: 30_000,
				maxBytes: 100,
				policy,
			}).then(
				(res) => res.body.toString(),
				(e: unknown) => (e instanceof BlockedAddressError ? e.reason : String(e)),
			);
			const at = Date.now();
			assert.equal(outcome, location === '/final' ? 'landed' : 'port');
			assert.deepEqual(server.hits, location === '/final' ? ['/endless-redirect', '/final'] : ['/endless-redirect']);
			// the hop's socket closes within a moment of the return, far below the 30 s time limit
			for (let waited = 0; hopClosed === null && waited < 2000; waited += 20)
				await new Promise((r) => setTimeout(r, 20));
			assert.ok(
				hopClosed !== null,
				`the redirect hop is still open 2 s after guardedGet returned (${written} bytes sent)`,
			);
			assert.ok(hopClosed - at < 2000);
			const after = written;
			await new Promise((r) => setTimeout(r, 200));
			assert.equal(written, after, 'nothing more is streamed after the close');
			assert.ok(written < 8 * 1024 * 1024, `${written} bytes streamed before the close`);
		} finally {
			await server.close();
		}
	},
);
