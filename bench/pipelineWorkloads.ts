/**
 * The clients of `npm run bench:pipeline` (bench/pipeline.bench.ts) and what they check, against any n8n
 * (single process or queue-mode main) serving the MaaS pipeline (ours) and its floor
 * (bench/pipelineFloor.ts):
 *   ours  — `clients` users, each with a Pipeline Push WebSocket (M17; authenticated before the clock
 *           starts), submit `runs` runs one after another: POST /webhook/api/query (JWT) → subscribe to the
 *           request_id → wait for the pushed answer → the next run;
 *   floor — the same clients POST bench/pipeline-floor/query and wait for the answer the floor's M13 POSTs
 *           to the bench's push receiver (PushReceiver: an HTTP server on 127.0.0.1).
 * Each measure* call refuses (throws Refused, bench/report.ts) unless every submitted run got exactly one
 * pushed answer, to its own client, with its own answer (ours: equal to the run's final_answer in
 * PostgreSQL, which is "Answer to: …" of its own query), and nothing else was pushed to anyone.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, type Pool } from 'pg';
import { mintPushToken } from '../nodes/PipelinePush/transport/token';
import { bearer, mint } from '../test/helpers/jwt';
import { PushClient } from '../test/helpers/pushClient';
import { FLOOR_QUERY_HOOK, FLOOR_TRIGGER_HOOK } from './pipelineFloor';
import { Refused, refuseUnless } from './report';

/** One run as the client saw it (epoch ms from Date.now(): comparable with PostgreSQL's and n8n's clocks). */
export interface RunTiming {
	client: number;
	requestId: string;
	query: string;
	submittedAt: number;
	/** the 201 of the submit */
	acceptedAt: number;
	pushedAt: number;
}

export interface Measurement {
	side: 'ours' | 'floor';
	clients: number;
	runs: RunTiming[];
	/** runs / (last push − first submit) */
	rate: number;
	/** first submit and last push (epoch ms) */
	startedAt: number;
	endedAt: number;
}

/** Where the bench reaches one n8n setup. */
export interface Target {
	/** where production webhooks are served (single process: its URL; queue mode: main's) */
	webhookUrl: string;
	/** Pipeline Push (M17) WebSocket URL, ws://127.0.0.1:<port>/api/ws */
	pushUrl: string;
	/** the contracts database this n8n's PostgreSQL credential points at */
	pool: Pool;
	jwtSecret: string;
	pushSecret: string;
}

/** How long one run may take, submit → push (ms), before the bench gives up (env BENCH_PIPELINE_TIMEOUT_S). */
export const RUN_TIMEOUT_MS = 1000 * Number(process.env.BENCH_PIPELINE_TIMEOUT_S || 300);

/** The floor's push: an HTTP server on 127.0.0.1 recording every POST /push body with its arrival time. */
export class PushReceiver {
	private server: Server | undefined;
	/** request_id → every answer received for it */
	readonly received = new Map<string, { at: number; body: Record<string, unknown> }[]>();
	/** bodies without a request_id, or not JSON */
	readonly malformed: string[] = [];
	private waiters = new Map<string, () => void>();
	url = '';

	async up(): Promise<void> {
		const server = createServer((req, res) => {
			let raw = '';
			req.on('data', (c) => (raw += c));
			req.on('end', () => {
				const at = Date.now();
				res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
				let body: Record<string, unknown>;
				try {
					body = JSON.parse(raw) as Record<string, unknown>;
				} catch {
					this.malformed.push(raw.slice(0, 200));
					return;
				}
				const id = body.request_id;
				if (typeof id !== 'string') {
					this.malformed.push(raw.slice(0, 200));
					return;
				}
				this.received.set(id, [...(this.received.get(id) ?? []), { at, body }]);
				this.waiters.get(id)?.();
			});
		});
		server.keepAliveTimeout = 5000;
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		this.server = server;
		this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/push`;
	}

	/** The first answer for `id` (waits up to `ms`). */
	async answerFor(id: string, ms: number): Promise<{ at: number; body: Record<string, unknown> }> {
		const have = this.received.get(id);
		if (have) return have[0];
		await new Promise<void>((resolve, reject) => {
			const timer = setTimeout(() => {
				this.waiters.delete(id);
				reject(new Refused(`refusing to report: floor: no answer for ${id} after ${ms} ms`));
			}, ms);
			this.waiters.set(id, () => {
				clearTimeout(timer);
				this.waiters.delete(id);
				resolve();
			});
		});
		return this.received.get(id)![0];
	}

	async down(): Promise<void> {
		const server = this.server;
		this.server = undefined;
		if (!server) return;
		server.closeAllConnections();
		await new Promise<void>((resolve) => server.close(() => resolve()));
	}
}

async function postJson(
	url: string,
	token: string,
	body: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
	const res = await fetch(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...bearer(token) },
		body: JSON.stringify(body),
	});
	const text = await res.text();
	let json: Record<string, unknown>;
	try {
		json = JSON.parse(text) as Record<string, unknown>;
	} catch {
		json = { text: text.slice(0, 300) };
	}
	return { status: res.status, json };
}

/** Starts every client's loop at once (after their set-up); returns the timings in client order. */
async function allAtOnce(
	clients: number,
	runs: number,
	one: (client: number, k: number) => Promise<RunTiming>,
): Promise<RunTiming[]> {
	const per = await Promise.all(
		Array.from({ length: clients }, async (_, client) => {
			const out: RunTiming[] = [];
			for (let k = 0; k < runs; k++) out.push(await one(client, k));
			return out;
		}),
	);
	return per.flat();
}

function summarise(side: Measurement['side'], clients: number, runs: RunTiming[]): Measurement {
	const startedAt = Math.min(...runs.map((r) => r.submittedAt));
	const endedAt = Math.max(...runs.map((r) => r.pushedAt));
	return { side, clients, runs, rate: runs.length / ((endedAt - startedAt) / 1000), startedAt, endedAt };
}

/**
 * Ours: `clients` users (`<tag>-u<i>`), each with an authenticated Pipeline Push connection, submit `runs`
 * runs each through M00, one after another, each waiting for its pushed answer.
 * @throws Refused when a submit is not 201, an answer is missing, doubled, crossed (another run's id on a
 *   client) or not the run's final_answer, or the final_answer is not the answer to the run's own query
 */
export async function measureOurs(target: Target, clients: number, runs: number, tag: string): Promise<Measurement> {
	const users = Array.from({ length: clients }, (_, i) => `${tag}-u${i}`);
	const sockets = await Promise.all(
		users.map(async (user) => {
			const c = await PushClient.connect(target.pushUrl);
			c.auth(user, mintPushToken(user, target.pushSecret));
			await c.next((m) => m.type === 'authenticated', 30_000, 'authenticated');
			return c;
		}),
	);
	const tokens = users.map((user) => mint(user, { secret: target.jwtSecret }));
	try {
		const timings = await allAtOnce(clients, runs, async (client, k) => {
			const query = `bench ${tag} client ${client} run ${k}: what does the pipeline cost?`;
			const submittedAt = Date.now();
			const { status, json } = await postJson(`${target.webhookUrl}/webhook/api/query`, tokens[client], { query });
			refuseUnless(
				status === 201 && typeof json.request_id === 'string',
				`ours: submit answered ${status} ${JSON.stringify(json)}`,
			);
			const acceptedAt = Date.now();
			const requestId = json.request_id as string;
			sockets[client].subscribe(requestId);
			await sockets[client].answerFor(requestId, RUN_TIMEOUT_MS).catch((error: Error) => {
				throw new Refused(`refusing to report: ours: ${error.message.slice(0, 300)}`);
			});
			return { client, requestId, query, submittedAt, acceptedAt, pushedAt: Date.now() };
		});
		// late duplicates would arrive within moments of the first
		await new Promise((r) => setTimeout(r, 1000));
		const { rows } = await target.pool.query<{ id: string; status: string; final_answer: string | null }>(
			'SELECT id::text, status, final_answer FROM maas.pipeline_runs WHERE id = ANY($1)',
			[timings.map((t) => t.requestId)],
		);
		const byId = new Map(rows.map((r) => [r.id, r]));
		refuseUnless(
			byId.size === timings.length,
			`ours: ${timings.length} runs submitted, ${byId.size} distinct runs stored`,
		);
		for (const [client, socket] of sockets.entries()) {
			const mine = timings.filter((t) => t.client === client);
			const answers = socket.messages.filter((m) => m.type === undefined);
			refuseUnless(
				answers.length === mine.length,
				`ours: client ${client} got ${answers.length} answers for ${mine.length} runs`,
			);
			for (const t of mine) {
				const got = answers.filter((a) => a.request_id === t.requestId);
				const run = byId.get(t.requestId)!;
				refuseUnless(got.length === 1, `ours: run ${t.requestId} pushed ${got.length} times to its client`);
				refuseUnless(
					run.status === 'COMPLETED' && got[0].status === 'completed' && got[0].answer === run.final_answer,
					`ours: run ${t.requestId} (${run.status}) pushed ${JSON.stringify(got[0]).slice(0, 200)}, stored ${String(run.final_answer).slice(0, 100)}`,
				);
				refuseUnless(
					String(run.final_answer).startsWith('Answer to: ') && String(run.final_answer).includes(t.query.slice(0, 40)),
					`ours: run ${t.requestId}'s answer is not the answer to its own query: ${String(run.final_answer).slice(0, 200)}`,
				);
			}
		}
		return summarise('ours', clients, timings);
	} finally {
		for (const s of sockets) s.close();
	}
}

/**
 * The floor: the same clients through bench/pipeline-floor/query; the answer arrives at `receiver`.
 * @throws Refused when a submit is not 201 with its request_id, or an answer is missing, doubled, malformed or
 *   not the answer to the run's own query, or an answer arrived for a run nobody submitted
 */
export async function measureFloor(
	target: Target,
	receiver: PushReceiver,
	clients: number,
	runs: number,
	tag: string,
): Promise<Measurement> {
	const users = Array.from({ length: clients }, (_, i) => `${tag}-u${i}`);
	const tokens = users.map((user) => mint(user, { secret: target.jwtSecret }));
	const trigger = `${target.webhookUrl}/webhook/${FLOOR_TRIGGER_HOOK}`;
	const before = new Set(receiver.received.keys());
	const timings = await allAtOnce(clients, runs, async (client, k) => {
		const query = `bench ${tag} client ${client} run ${k}: what does the pipeline cost?`;
		const requestId = randomUUID();
		const submittedAt = Date.now();
		const { status, json } = await postJson(`${target.webhookUrl}/webhook/${FLOOR_QUERY_HOOK}`, tokens[client], {
			request_id: requestId,
			query,
			trigger,
			push: receiver.url,
		});
		refuseUnless(
			status === 201 && json.request_id === requestId,
			`floor: submit answered ${status} ${JSON.stringify(json)}`,
		);
		const acceptedAt = Date.now();
		const answer = await receiver.answerFor(requestId, RUN_TIMEOUT_MS);
		return { client, requestId, query, submittedAt, acceptedAt, pushedAt: answer.at };
	});
	await new Promise((r) => setTimeout(r, 1000));
	const mine = new Set(timings.map((t) => t.requestId));
	const strangers = [...receiver.received.keys()].filter((id) => !before.has(id) && !mine.has(id));
	refuseUnless(strangers.length === 0, `floor: answers for ${strangers.length} runs nobody submitted`);
	refuseUnless(receiver.malformed.length === 0, `floor: malformed answers ${JSON.stringify(receiver.malformed[0])}`);
	for (const t of timings) {
		const got = receiver.received.get(t.requestId) ?? [];
		refuseUnless(got.length === 1, `floor: run ${t.requestId} answered ${got.length} times`);
		refuseUnless(
			got[0].body.answer === `Answer to: ${t.query}` && got[0].body.status === 'completed',
			`floor: run ${t.requestId} got ${JSON.stringify(got[0].body).slice(0, 200)}`,
		);
	}
	return summarise('floor', clients, timings);
}

/** The `q`-quantile (0…1) of `values` (nearest rank). */
export function quantile(values: number[], q: number): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** Submit → push latencies of a measurement, seconds. */
export function latencies(m: Measurement): number[] {
	return m.runs.map((r) => (r.pushedAt - r.submittedAt) / 1000);
}

/**
 * Every pipeline_events notification of one contracts database with the time it arrived (a LISTEN of the
 * bench's own), for the profile of where a run's time goes: run id → status → epoch ms (the first arrival).
 */
export class StatusLog {
	readonly seen = new Map<string, Map<string, number>>();
	private client: Client | undefined;

	constructor(private readonly url: string) {}

	async start(): Promise<void> {
		const client = new Client({ connectionString: this.url, application_name: 'bench pipeline status log' });
		client.on('error', () => undefined);
		client.on('notification', (n) => {
			const at = Date.now();
			try {
				const event = JSON.parse(n.payload ?? '{}') as { id?: string; status?: string };
				if (!event.id || !event.status) return;
				const run = this.seen.get(event.id) ?? new Map<string, number>();
				if (!run.has(event.status)) run.set(event.status, at);
				this.seen.set(event.id, run);
			} catch {
				// not ours
			}
		});
		await client.connect();
		await client.query('LISTEN pipeline_events');
		this.client = client;
	}

	async stop(): Promise<void> {
		await this.client?.end().catch(() => undefined);
	}
}
