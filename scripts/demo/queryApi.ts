/**
 * The MaaS query API part of the demo (M00 + M01, JWT Auth with this run's secret, and the pipeline behind it,
 * M10–M16): no token → 401, a token for demo-user → 201 + request_id, its status (query and path form),
 * another user's token → 404; meanwhile the push client (scripts/demo/push.ts) receives the run's answer.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import { bearer, mint } from '../../test/helpers/jwt';
import { openPush, showPushed, subscribe } from './push';
import { JWT_SECRET, ROOT } from './settings';

/**
 * Calls the query API of n8n at `n8nUrl` as nobody, demo-user and other-user and prints each answer; with the
 * push client on `pushPort` subscribed to the demo-user run, prints the answer pushed and compares it with
 * maas.pipeline_runs in `db`. `metrics`: whether M18 is imported (for the scrape URL printed with the endpoint).
 */
export async function showQueryApi(n8nUrl: string, db: Client, pushPort: number, metrics: boolean) {
	console.log(
		'\nMaaS query API (M00 + M01, JWT Auth; token minted with the demo secret) and the pipeline behind it (M10–M16):',
	);
	const query = (auth: string | null) =>
		fetch(`${n8nUrl}/webhook/api/query`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...(auth ? bearer(auth) : {}) },
			body: JSON.stringify({ query: 'What is compare-and-swap?' }),
		});
	const status = (id: string, auth: string) =>
		fetch(`${n8nUrl}/webhook/api/query/status?id=${encodeURIComponent(id)}`, { headers: bearer(auth) });
	// the path form: /webhook/<webhookId of M01's "Webhook (Path ID)" node>/api/query/<request_id>/status
	const pathHook = pathFormWebhookId();
	const statusByPath = (id: string, auth: string) =>
		fetch(`${n8nUrl}/webhook/${pathHook}/api/query/${encodeURIComponent(id)}/status`, { headers: bearer(auth) });
	const line = (label: string, res: Response, body: string) =>
		console.log(`  ${label.padEnd(40)} → HTTP ${res.status} ${body.slice(0, 160)}`);
	const anonymous = await query(null);
	line('POST /api/query without a token', anonymous, await anonymous.text());
	// the ws client is authenticated before the query is posted, so it subscribes while the run is in flight
	const push = await openPush(n8nUrl, pushPort, metrics);
	try {
		const demoToken = mint('demo-user', { secret: JWT_SECRET, expiresIn: '1h' });
		const created = await query(demoToken);
		const postedAt = Date.now();
		const createdText = await created.text();
		line('POST /api/query as demo-user', created, createdText);
		const requestId = String((JSON.parse(createdText) as { request_id?: unknown }).request_id ?? '');
		if (push) await subscribe(db, push, requestId);
		const own = await status(requestId, demoToken);
		line('GET status as demo-user', own, await own.text());
		const ownByPath = await statusByPath(requestId, demoToken);
		line('GET status (path form) as demo-user', ownByPath, await ownByPath.text());
		const other = await status(requestId, mint('other-user', { secret: JWT_SECRET, expiresIn: '1h' }));
		const otherText = await other.text();
		line(
			'GET status as other-user',
			other,
			other.ok ? otherText : `${(JSON.parse(otherText) as { message?: string }).message ?? otherText}`,
		);
		if (push) await showPushed(db, push, requestId, postedAt);
	} finally {
		push?.close();
	}
}

/** The `webhookId` of M01's "Webhook (Path ID)" node: the first segment of the status URL's path form. */
function pathFormWebhookId(): string {
	const m01 = JSON.parse(
		fs.readFileSync(path.join(ROOT, 'workflows-json', 'maas', 'M01_query_status.json'), 'utf8'),
	) as {
		nodes: { name: string; webhookId?: string }[];
	};
	const node = m01.nodes.find((n) => n.name === 'Webhook (Path ID)');
	if (!node?.webhookId) throw new Error('M01 has no "Webhook (Path ID)" node with a webhookId');
	return node.webhookId;
}
