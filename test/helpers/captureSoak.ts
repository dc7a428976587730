/**
 * The capture soak of issue 26 (test/integration/pipelineCapture.soak*.test.ts): `runs` pipeline runs taken
 * NEW → COMPLETED by `workers` capture workers over `pool` (typically through a reply-dropping forwarder).
 * Each waiting run is announced twice (two workers race for it); a retryable error (503) is retried with the
 * same input, as n8n's Retry On Fail does (Capture: the same call key; Complete Step: the same capture
 * token). No Sweep runs, so a run stranded by a lost reply stays stuck and is counted.
 */
import net from 'node:net';
import type { Pool } from 'pg';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { ContractError } from '../../nodes/shared/errors';

const STAGES = [
	{ capture: 'CAPTURE_ANALYSIS', done: 'ANALYSIS_DONE', result: (id: string): unknown => ({ run: id }) },
	{ capture: 'CAPTURE_ASSEMBLY', done: 'ASSEMBLY_DONE', result: (id: string): unknown => `ctx ${id}` },
	{ capture: 'CAPTURE_RESPONSE', done: 'RESPONSE_DONE', result: (id: string): unknown => `answer ${id}` },
] as const;

/** What a soak counted. The goal: doubleCaptures, stuck, workedTwice, refused, errors all 0. */
export interface SoakCounts {
	ms: number;
	retries: number;
	replayedCaptures: number;
	replayedSteps: number;
	/** 409s (a capture or step refused: stranded work). */
	refused: number;
	/** Other errors a worker gave up on. */
	errors: number;
	/** (run, step) pairs captured more than once. */
	doubleCaptures: number;
	/** Runs not COMPLETED at the end. */
	stuck: number;
	/** (run, step) pairs whose work ran more than once. */
	workedTwice: number;
	/** assistant_response rows logged for the runs (one per run). */
	answersLogged: number;
	/** (run, step) pairs captured. */
	steps: number;
}

async function retrying<T>(call: () => Promise<T>, counts: { retries: number }, maxDelayMs: number): Promise<T> {
	for (let attempt = 0; ; attempt++) {
		try {
			return await call();
		} catch (error) {
			if (!(error instanceof ContractError && error.retryable) || attempt >= 300) throw error;
			counts.retries++;
			await new Promise((r) => setTimeout(r, Math.min(maxDelayMs, 5 + attempt * 5)));
		}
	}
}

/**
 * Runs the soak. `check` reads the final state (a pool straight to the database); `during` is called once
 * after `atRuns` runs completed (e.g. a PostgreSQL restart).
 */
export async function captureSoak(options: {
	pool: Pool;
	check: Pool;
	runs: number;
	workers: number;
	during?: () => Promise<void>;
	atRuns?: number;
}): Promise<SoakCounts> {
	const { pool, check, runs: n, workers } = options;
	const def = shippedDefinition();
	const { rows } = await check.query<{ id: string }>(
		`INSERT INTO maas.pipeline_runs (user_id, user_query) SELECT 'soak-' || gen_random_uuid(), 'q' FROM generate_series(1, $1) RETURNING id`,
		[n],
	);
	const ids = rows.map((r) => r.id);
	const stageOf = new Map(ids.map((id) => [id, 0]));
	const queue: string[] = ids.flatMap((id) => [id, id]);
	const captures = new Map<string, number>();
	const work = new Map<string, number>();
	const counts = { retries: 0, replayedCaptures: 0, replayedSteps: 0, refused: 0, errors: 0 };
	let calls = 0;
	let completed = 0;
	let during: Promise<void> | undefined;
	let active = 0;
	const worker = async (w: number) => {
		while (queue.length > 0 || active > 0) {
			const id = queue.shift();
			if (id === undefined) {
				await new Promise((r) => setTimeout(r, 5));
				continue;
			}
			const stage = stageOf.get(id)!;
			if (stage >= STAGES.length) continue;
			const s = STAGES[stage];
			const key = `exec-${w}-${calls++}:Capture:0:0`;
			active++;
			try {
				const c = await retrying(
					() => capture(pool, def, { run_id: id, transition: s.capture, worker: `w${w}`, capture_key: key }),
					counts,
					200,
				);
				if (!c.captured) continue;
				if (c.replayed) counts.replayedCaptures++;
				const k = `${id}:${stage}`;
				captures.set(k, (captures.get(k) ?? 0) + 1);
				work.set(k, (work.get(k) ?? 0) + 1); // the step's work (the model call)
				await new Promise((r) => setImmediate(r));
				const done = await retrying(
					() =>
						completeStep(pool, def, {
							run_id: id,
							transition: s.done,
							capture_token: c.run.capture_token,
							result: s.result(id),
						}),
					counts,
					200,
				);
				if ('replayed' in done) counts.replayedSteps++;
				stageOf.set(id, stage + 1);
				if (stage + 1 < STAGES.length) queue.push(id, id);
				else if (++completed === options.atRuns && options.during) during = options.during();
			} catch (error) {
				if (error instanceof ContractError && error.statusCode === 409) counts.refused++;
				else counts.errors++;
			} finally {
				active--;
			}
		}
	};
	const started = Date.now();
	await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
	const ms = Date.now() - started;
	await during;
	const final = await check.query<{ status: string; n: number }>(
		`SELECT status, count(*)::int AS n FROM maas.pipeline_runs WHERE id = ANY($1::uuid[]) GROUP BY status`,
		[ids],
	);
	const answers = await check.query<{ n: number }>(
		`SELECT count(*)::int AS n FROM maas.raw_logs WHERE run_id = ANY($1::uuid[]) AND message_type = 'assistant_response'`,
		[ids],
	);
	return {
		ms,
		...counts,
		doubleCaptures: [...captures.values()].filter((c) => c > 1).length,
		stuck: final.rows.filter((r) => r.status !== 'COMPLETED').reduce((sum, r) => sum + r.n, 0),
		workedTwice: [...work.values()].filter((c) => c > 1).length,
		answersLogged: answers.rows[0].n,
		steps: captures.size,
	};
}

/**
 * A TCP forwarder on 127.0.0.1 to `target` that, for a random `rate` of the requests containing one of
 * `markers`, forwards the request and cuts both connections at the server's first reply byte (the
 * statement ran and committed, the reply is lost). `dropped()` counts them; `close()` stops it.
 */
export async function replyDropper(
	target: { host: string; port: number },
	rate: number,
	markers: string[],
): Promise<{ port: number; dropped: () => number; close: () => Promise<void> }> {
	const needles = markers.map((m) => Buffer.from(m));
	const sockets = new Set<net.Socket>();
	let dropped = 0;
	const server = net.createServer((client) => {
		const upstream = net.connect(target.port, target.host);
		let dropReply = false;
		for (const s of [client, upstream]) {
			sockets.add(s);
			s.on('close', () => sockets.delete(s));
			s.on('error', () => (client.destroy(), upstream.destroy()));
		}
		client.on('data', (chunk: Buffer) => {
			if (!dropReply && needles.some((m) => chunk.includes(m)) && Math.random() < rate) dropReply = true;
			upstream.write(chunk);
		});
		upstream.on('data', (chunk: Buffer) => {
			if (!dropReply) return void client.write(chunk);
			dropped++;
			client.destroy();
			upstream.destroy();
		});
		client.on('end', () => upstream.end());
		upstream.on('end', () => client.end());
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		port: (server.address() as net.AddressInfo).port,
		dropped: () => dropped,
		close: async () => {
			for (const s of sockets) s.destroy();
			await new Promise<void>((resolve) => server.close(() => resolve()));
		},
	};
}

/** The Capture and Complete Step statements (their SQL text), whose replies a soak drops. */
export const STATE_CHANGE_MARKERS = ['capture_key = $7', 'completed_steps = array_append'];
