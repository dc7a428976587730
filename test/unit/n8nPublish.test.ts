/**
 * scripts/lib/n8nPublish.js (issue 27 §3): the owner session, the REST publishing and its order, against a
 * local stand-in of n8n's REST API (the routes, bodies and cookie of n8n 2.4.8's dist code). The real n8n is
 * in test/e2e/n8n_publish.test.ts.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, test } from '@jest/globals';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const publish = require('../../scripts/lib/n8nPublish');

interface Seen {
	method: string;
	url: string;
	browserId?: string;
	cookie?: string;
	body: unknown;
}

/** A stand-in: `hasOwner` decides /owner/setup; workflows by id with versionId/activeVersionId; `refuse` ids answer 400. */
async function standIn({ hasOwner = false, refuse = new Set<string>() } = {}) {
	const seen: Seen[] = [];
	const workflows = new Map<string, { id: string; name: string; versionId: string; activeVersionId: string | null }>();
	const server = http.createServer((req, res) => {
		let raw = '';
		req.on('data', (c) => (raw += c));
		req.on('end', () => {
			const body = raw ? JSON.parse(raw) : undefined;
			seen.push({
				method: req.method!,
				url: req.url!,
				browserId: req.headers['browser-id'] as string | undefined,
				cookie: req.headers.cookie,
				body,
			});
			const send = (status: number, payload: unknown, cookie?: string) => {
				res.writeHead(status, {
					'content-type': 'application/json',
					...(cookie ? { 'set-cookie': `n8n-auth=${cookie}; Path=/; HttpOnly; SameSite=Lax` } : {}),
				});
				res.end(JSON.stringify(payload));
			};
			if (req.url === '/rest/owner/setup') {
				if (hasOwner) return send(400, { code: 400, message: 'Instance owner already setup' });
				hasOwner = true;
				return send(200, { data: { email: body.email } }, 'setup-jwt');
			}
			if (req.url === '/rest/login')
				return body.password === 'Right-Pass1'
					? send(200, { data: {} }, 'login-jwt')
					: send(401, { code: 401, message: 'Wrong username or password. Do you have caps lock on?' });
			const m = req.url!.match(/^\/rest\/workflows\/([^/]+)(\/activate)?$/);
			const wf = m && workflows.get(decodeURIComponent(m[1]));
			if (!req.headers.cookie?.startsWith('n8n-auth=')) return send(401, { code: 401, message: 'Unauthorized' });
			if (!wf) return send(404, { code: 404, message: 'Could not find workflow' });
			if (!m![2]) return send(200, { data: wf });
			if (refuse.has(wf.id)) return send(400, { code: 400, message: 'Unrecognized node type "x.y"' });
			wf.activeVersionId = body.versionId;
			return send(200, { data: wf });
		});
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	servers.push(server);
	return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, workflows };
}

const servers: http.Server[] = [];
afterEach(async () => {
	await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

test('generatedOwner: a password n8n accepts (8–64 characters, a digit, an uppercase letter), new each time', () => {
	const a = publish.generatedOwner();
	const b = publish.generatedOwner();
	for (const o of [a, b]) {
		assert.ok(o.password.length >= 8 && o.password.length <= 64, o.password.length);
		assert.match(o.password, /\d/);
		assert.match(o.password, /[A-Z]/);
		assert.match(o.email, /^[^@\s]+@[^@\s]+\.[a-z]+$/);
	}
	assert.notEqual(a.password, b.password);
});

test('ownerSession: sets the owner up when there is none, else logs in; the same browser-id on every call', async () => {
	const owner = { email: 'o@example.com', firstName: 'O', lastName: 'W', password: 'Right-Pass1' };
	const fresh = await standIn();
	assert.deepEqual(await publish.ownerSession(fresh.url, owner), { cookie: 'n8n-auth=setup-jwt', created: true });
	assert.deepEqual(
		fresh.seen.map((s) => s.url),
		['/rest/owner/setup'],
	);
	const existing = await standIn({ hasOwner: true });
	assert.deepEqual(await publish.ownerSession(existing.url, owner), { cookie: 'n8n-auth=login-jwt', created: false });
	assert.deepEqual(existing.seen[1].body, { emailOrLdapLoginId: 'o@example.com', password: 'Right-Pass1' });
	assert.deepEqual(new Set([...fresh.seen, ...existing.seen].map((s) => s.browserId)), new Set([publish.BROWSER_ID]));
});

test("ownerSession: another owner's instance throws n8n's answers, never the password", async () => {
	const server = await standIn({ hasOwner: true });
	const owner = { email: 'o@example.com', firstName: 'O', lastName: 'W', password: 'Wrong-Pass9' };
	await assert.rejects(publish.ownerSession(server.url, owner), (error: Error) => {
		assert.match(error.message, /HTTP 400 \(Instance owner already setup\).*HTTP 401 \(Wrong username or password/);
		assert.ok(!error.message.includes('Wrong-Pass9'));
		return true;
	});
});

test('publishWorkflows: GET then POST activate {versionId} with the cookie; skips an active version; stops at a refusal', async () => {
	const server = await standIn({ refuse: new Set(['C']) });
	for (const id of ['A', 'B', 'C', 'D'])
		server.workflows.set(id, {
			id,
			name: `wf ${id}`,
			versionId: `v-${id}`,
			activeVersionId: id === 'B' ? 'v-B' : null,
		});
	await assert.rejects(
		publish.publishWorkflows(server.url, 'n8n-auth=k', ['A', 'B', 'C', 'D']),
		/^Error: publishing workflow C \(wf C\) failed: HTTP 400 Unrecognized node type "x\.y"$/,
	);
	assert.deepEqual(
		server.seen.map((s) => `${s.method} ${s.url} ${JSON.stringify(s.body ?? null)} ${s.cookie}`),
		[
			'GET /rest/workflows/A null n8n-auth=k',
			'POST /rest/workflows/A/activate {"versionId":"v-A"} n8n-auth=k',
			'GET /rest/workflows/B null n8n-auth=k',
			'GET /rest/workflows/C null n8n-auth=k',
			'POST /rest/workflows/C/activate {"versionId":"v-C"} n8n-auth=k',
		],
	);
	server.seen.length = 0;
	assert.deepEqual(await publish.publishWorkflows(server.url, 'n8n-auth=k', ['A', 'B', 'D']), {
		activated: ['D'],
		alreadyActive: ['A', 'B'],
	});
	await assert.rejects(
		publish.publishWorkflows(server.url, 'n8n-auth=k', ['nope']),
		/GET \/rest\/workflows\/nope answered HTTP 404/,
	);
});

test('publishOrder: imported sub-workflows (Execute Workflow, source database, fixed id) before their callers', () => {
	const call = (id: unknown, extra: Record<string, unknown> = {}) => ({
		type: 'n8n-nodes-base.executeWorkflow',
		parameters: { workflowId: id, ...extra },
	});
	const order = publish.publishOrder([
		{ id: 'M16', nodes: [call({ __rl: true, value: 'M11', mode: 'id' }), call('M14', { source: 'database' })] },
		{ id: 'M14', nodes: [call({ value: 'M11' })] },
		{ id: 'M11', nodes: [call('WF99ErrorPipe'), call('M11')] },
		{
			id: 'X',
			nodes: [call('={{ $json.worker }}'), call('M16', { source: 'parameter' }), { ...call('M16'), disabled: true }],
		},
		{ id: 'WF99ErrorPipe', nodes: [] },
	]);
	// X names M16 only by expression, another source or a disabled node: no dependency, its own place
	assert.deepEqual(order, ['WF99ErrorPipe', 'M11', 'M14', 'M16', 'X']);
	// a cycle keeps the given order and every id once
	assert.deepEqual(
		publish.publishOrder([
			{ id: 'P', nodes: [call('Q')] },
			{ id: 'Q', nodes: [call('P')] },
		]),
		['Q', 'P'],
	);
});
