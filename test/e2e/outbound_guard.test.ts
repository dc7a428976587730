/**
 * The attack table of issue 25 §1 through WF31 in a real n8n 2.4.8: url_fetch jobs (as WF30 enqueues them)
 * claimed by WF90 and run by WF31, whose Fetch URL node allowlists only the host name `localhost` and the
 * listeners' ports (a copy of WF31: the shipped one also refuses these ports). Loopback listeners count hits.
 *  - every loopback spelling of 127.0.0.1 and ::1 → 0 hits, the job `failed` after one attempt (not
 *    retried), one `content.url_fetches` `error` row `BLOCKED_ADDRESS: …`, one `ops.errors` row 403 with
 *    `BLOCKED_ADDRESS`, no document;
 *  - a redirect from the allowlisted host to a non-allowlisted loopback port, and to a non-allowlisted
 *    loopback address → the allowlisted host asked once, the target 0 hits, refused the same way.
 * A host name resolving to 127.0.0.1 through an injected resolver, and the non-loopback ranges, are in
 * test/integration/outboundGuard.test.ts and test/unit/outboundGuard.test.ts (no packet may leave loopback).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { normalizeOperation } from '../../nodes/KnowledgeBot/actions/url/normalize.operation';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { knowledgeRunner } from '../helpers/knowledgeOps';
import { startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
import { wf31WithOptions } from '../helpers/pageServer';

let db: TestDatabase;
let n8n: RunningN8n;
let tenant: string;
let fetcherCopy: string | undefined;
const servers: http.Server[] = [];
/** Requests each listener got, by name. */
const hits: Record<string, string[]> = { inside: [], inside6: [], allowed: [], other: [] };
const ports: Record<string, number> = {};

async function listen(name: string, host: string, port = 0, handler?: http.RequestListener): Promise<number> {
	const server = http.createServer((req, res) => {
		hits[name].push(req.url ?? '');
		if (handler) return handler(req, res);
		res.writeHead(200, { 'content-type': 'text/plain' }).end('INTERNAL: vault code ZEBRA-7731');
	});
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(port, host, () => resolve());
	});
	servers.push(server);
	return (server.address() as AddressInfo).port;
}

/** The allowlisted host's pages: redirects to the internal listeners. */
const allowedPages: http.RequestListener = (req, res) => {
	const to: Record<string, string> = {
		'/to-other-port': `http://localhost:${ports.other}/secret`,
		'/to-inside-address': `http://127.0.0.1:${ports.inside}/secret`,
		'/to-inside6': `http://[::1]:${ports.inside6}/secret`,
	};
	const location = to[req.url ?? ''];
	if (location) res.writeHead(302, { location }).end();
	else res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body><p>allowed</p></body></html>');
};

beforeAll(async () => {
	db = await setupDatabase();
	tenant = (await seedBot(db.pool, 'guard_bot', 'Guard-secret_1')).tenantId;
	ports.inside = await listen('inside', '127.0.0.1');
	ports.inside6 = await listen('inside6', '::1');
	ports.other = await listen('other', '127.0.0.1');
	// `localhost` may resolve to 127.0.0.1 or ::1 first: the allowlisted host answers on both
	for (let attempt = 0; ; attempt++) {
		ports.allowed = await listen('allowed', '127.0.0.1', 0, allowedPages);
		try {
			await listen('allowed', '::1', ports.allowed, allowedPages);
			break;
		} catch (error) {
			if (attempt > 10) throw error;
			servers.pop()?.close();
		}
	}
	const copy = wf31WithOptions({
		allowedPrivateAddresses: 'localhost',
		allowedPorts: `${ports.allowed}, ${ports.inside}, ${ports.inside6}, 80`,
	});
	fetcherCopy = copy;
	n8n = await startN8n(
		db.url,
		[path.join(WORKFLOWS, 'WF99_global_err_handler.json'), copy, path.join(WORKFLOWS, 'WF90_job_runner.json')],
		[],
	);
}, 30 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	for (const server of servers) {
		server.closeAllConnections();
		await new Promise((r) => server.close(r));
	}
	await db?.drop();
	if (fetcherCopy) fs.rmSync(path.dirname(fetcherCopy), { recursive: true, force: true });
});

const CTX = { chat_id: -100_888, visibility: 'group', dm_owner_user_id: null, message_version_id: null };

test('WF90 → WF31 in n8n: every loopback spelling and redirects off the allowlist are refused: 0 hits, job failed once, one url_fetches error row and one ops.errors row each', async () => {
	const i = ports.inside;
	const attacks: Array<{ url: string; reason: string }> = [
		`http://127.0.0.1:${i}/latest/meta-data/`,
		`http://127.1:${i}/a`,
		`http://2130706433:${i}/b`,
		`http://0x7f000001:${i}/c`,
		`http://0177.0.0.1:${i}/d`,
		`http://0x7f.1:${i}/e`,
		`http://127.0.0.1.:${i}/f`,
		`http://[::ffff:127.0.0.1]:${i}/g`,
		`http://good@127.0.0.1:${i}/h`,
		`http://[::1]:${ports.inside6}/i`,
		'http://127.0.0.1/j',
	]
		.map((url) => ({ url, reason: 'address' }))
		.concat([
			{ url: `http://localhost:${ports.allowed}/to-other-port`, reason: 'port' },
			{ url: `http://localhost:${ports.allowed}/to-inside-address`, reason: 'address' },
			{ url: `http://localhost:${ports.allowed}/to-inside6`, reason: 'address' },
		]);
	// WF30 (the operation, run here) stores each URL and enqueues its url_fetch job; WF90 in n8n runs WF31
	const runner = knowledgeRunner(() => db.pool, '5a6b7c8d-9eaf-40b1-82c3-d4e5f6a7b8c9');
	const jobs: Array<{ url: string; reason: string; urlId: number; jobId: number }> = [];
	for (const attack of attacks) {
		const { data } = await runner.run(normalizeOperation, { tenant_id: tenant, url: attack.url, ctx: CTX });
		jobs.push({ ...attack, urlId: Number(data.url_id), jobId: Number(data.fetch_job_id) });
	}
	const ids = jobs.map((j) => j.jobId);
	const deadline = Date.now() + 150_000;
	let rows: Array<{ id: string; status: string; attempts: number }> = [];
	while (Date.now() < deadline) {
		rows = (await db.pool.query('SELECT id, status, attempts FROM ops.jobs WHERE id = ANY($1) ORDER BY id', [ids]))
			.rows;
		if (rows.every((r) => ['failed', 'dead', 'succeeded'].includes(r.status))) break;
		await new Promise((r) => setTimeout(r, 1000));
	}
	assert.deepEqual(
		rows.map((r) => [Number(r.id), r.status, r.attempts]),
		[...ids].sort((a, b) => a - b).map((id) => [id, 'failed', 1]),
		`every job failed after one attempt\n${n8n.logs().slice(-3000)}`,
	);
	for (const job of jobs) {
		const fetches = await db.pool.query<{ status: string; error: string }>(
			'SELECT status, error FROM content.url_fetches WHERE url_id = $1',
			[job.urlId],
		);
		assert.equal(fetches.rows.length, 1, job.url);
		assert.equal(fetches.rows[0].status, 'error', job.url);
		assert.match(fetches.rows[0].error, /^BLOCKED_ADDRESS: /, job.url);
		const errors = await db.pool.query<{ status_code: number; retryable: boolean; node: string; text: string }>(
			'SELECT status_code, retryable, node, details::text AS text FROM ops.errors WHERE job_id = $1',
			[job.jobId],
		);
		assert.equal(errors.rows.length, 1, `${job.url}: one ops.errors row`);
		assert.deepEqual(
			[errors.rows[0].status_code, errors.rows[0].retryable, errors.rows[0].node],
			[403, false, 'Fetch URL'],
			job.url,
		);
		assert.match(errors.rows[0].text, /BLOCKED_ADDRESS/);
		assert.match(errors.rows[0].text, new RegExp(`"reason": ?"${job.reason}"`), job.url);
	}
	const docs = await db.pool.query('SELECT count(*)::int AS n FROM content.documents WHERE tenant_id = $1', [tenant]);
	assert.equal(docs.rows[0].n, 0, 'nothing to extract, chunk or answer');
	assert.deepEqual(hits.inside, []);
	assert.deepEqual(hits.inside6, []);
	assert.deepEqual(hits.other, []);
	assert.equal(hits.allowed.length, 3, 'the allowlisted host was asked once per redirect case');
}, 240_000);
