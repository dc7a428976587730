/**
 * The push scenario of the demo (seed 001 step 4, variant B; M17 Pipeline Push): a WebSocket client,
 * authenticated as demo-user, subscribes to the demo query's run and receives the answer the MaaS pipeline
 * wrote. Also where M17 listens: 5681 as shipped, or a free port when 5681 is taken (portFree).
 */
import type { Client } from 'pg';
import { mintPushToken } from '../../nodes/PipelinePush/transport/token';
import { PushClient } from '../../test/helpers/pushClient';
import { PUSH_SECRET } from './settings';

/** True when nothing listens on 127.0.0.1:`port`. */
export async function portFree(port: number): Promise<boolean> {
	const net = await import('node:net');
	return new Promise((resolve) => {
		const probe = net.createServer();
		probe.once('error', () => resolve(false));
		probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
	});
}

/**
 * Seed 001 step 4, variant B: prints the push endpoint (M17) and the metrics scrape URL (M18), then opens a
 * WebSocket client on the push endpoint and authenticates it as demo-user (a push token minted with the
 * demo's secret). Returns the client, or null (after printing why) when the endpoint does not answer.
 */
export async function openPush(n8nUrl: string, port: number, metrics: boolean): Promise<PushClient | null> {
	const endpoint = `ws://127.0.0.1:${port}/api/ws`;
	console.log(`\n  Push (M17 Pipeline Push, seed 001 step 4 variant B): ${endpoint}`);
	console.log(
		`  Metrics (M18, Prometheus text format): ${n8nUrl.replace('127.0.0.1', 'localhost')}/webhook/metrics${metrics ? '' : ' (M18_metrics.json is not in this checkout)'}`,
	);
	let client: PushClient | undefined;
	try {
		client = await connectWhenUp(endpoint);
		// a day, the node's default Max Token Lifetime: the demo's client stays connected while the demo runs
		// (a real backend mints short-lived tokens, 1 h by default, and the client re-authenticates)
		client.auth('demo-user', mintPushToken('demo-user', PUSH_SECRET, { expiresInSeconds: 86_400 }));
		const authed = await client.next((m) => m.type === 'authenticated' || m.type === 'error', 10_000);
		console.log(`  ws client connected → ${JSON.stringify(authed)}\n`);
		if (authed.type !== 'authenticated') throw new Error('not authenticated');
		return client;
	} catch (error) {
		console.log(`  push: ${(error as Error).message}\n`);
		client?.close();
		return null;
	}
}

/** Subscribes the push client to `requestId` and prints the acknowledgement and the run's status at that moment. */
export async function subscribe(db: Client, client: PushClient, requestId: string) {
	client.subscribe(requestId);
	try {
		const ack = await client.next((m) => m.type === 'subscribed' || m.type === 'error', 10_000);
		const run = await db.query('SELECT status FROM maas.pipeline_runs WHERE id = $1', [requestId]);
		console.log(
			`  ${'ws subscribe as demo-user'.padEnd(40)} → ${JSON.stringify(ack)} (the run is ${run.rows[0]?.status ?? 'not found'} now)`,
		);
	} catch (error) {
		console.log(`  push: ${(error as Error).message}`);
	}
}

/**
 * Waits for the answer pushed for `requestId` (the MaaS pipeline completes the run: M10 → M16 → M11 Analyzer →
 * M12 Assembler → M13 Final Responder), prints it, and whether it is the final_answer M13 wrote.
 */
export async function showPushed(db: Client, client: PushClient, requestId: string, postedAt: number) {
	try {
		const pushed = await client.answerFor(requestId, 120_000);
		const seconds = ((Date.now() - postedAt) / 1000).toFixed(1);
		console.log(`  pushed over ws (${seconds} s after the 201) → ${JSON.stringify(pushed)}`);
		const run = await db.query('SELECT status, final_answer FROM maas.pipeline_runs WHERE id = $1', [requestId]);
		const same = run.rows[0]?.final_answer === pushed.answer;
		console.log(
			`  maas.pipeline_runs: ${run.rows[0]?.status}, final_answer ${same ? 'is the pushed answer (written by M13 Final Responder)' : 'differs from the pushed answer'}`,
		);
	} catch (error) {
		const run = await db.query('SELECT status, error FROM maas.pipeline_runs WHERE id = $1', [requestId]);
		console.log(`  push: ${(error as Error).message}; the run is ${JSON.stringify(run.rows[0] ?? null)}`);
	}
}

/** A PushClient on `url`, retrying while the trigger is still being activated (up to 30 s). */
export async function connectWhenUp(url: string): Promise<PushClient> {
	const end = Date.now() + 30_000;
	for (;;) {
		try {
			return await PushClient.connect(url);
		} catch (error) {
			if (Date.now() > end) throw error;
			await new Promise((r) => setTimeout(r, 500));
		}
	}
}
