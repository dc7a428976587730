/**
 * `npm run bench:answer`: what a question costs, in one run on one machine.
 *
 * 1. WF51 answer latency (ms, p50/p95 over BENCH_QUESTIONS, default 60, distinct questions, one client, asked
 *    alternately in a group and in the asker's dm, over a corpus of BENCH_ANSWER_CHUNKS, default 1,000, chunks
 *    on whatever vector route the test PostgreSQL has), four paths interleaved question by question:
 *      stand-ins     — the three HTTP calls of an answer (embed the question, the model, sendMessage) made by
 *                      the node's own transport code against the stand-ins on 127.0.0.1: the floor;
 *      in-process    — the Q&A → Answer operation called directly (ACL, session, search, model, audit rows,
 *                      reply): WF51's work without n8n;
 *      n8n no-op     — a webhook → Execute Workflow → a no-op sub-workflow → Respond in the same n8n: the cost
 *                      of the n8n path the WF51 row takes, without WF51;
 *      n8n WF51      — the same webhook → Execute Workflow → WF51 (the shipped workflow) → Respond.
 *    WF51 is called as a sub-workflow from a webhook (test/e2e/workflows/test_call_workflow.json), not through
 *    WF90 jobs: WF90 polls every 10 s and runs its batch one job after another, so a job's latency is mostly
 *    the wait for the next poll. WF90 is measured once as a cross-check: BENCH_JOBS (default 50) qa_answer jobs
 *    enqueued at once, the time from the first claim to the last finish, per job.
 *    Every answer must be 200 with at least one citation or the "I found nothing …" reply (issue 30: no candidate
 *    passed the relevance floors of the node's defaults — counted per path and printed), every cited chunk one
 *    the asker may see in that channel (bench/answerCorpus.ts), every reply sent: otherwise the bench refuses to
 *    print numbers.
 *    Executions are not saved (EXECUTIONS_DATA_SAVE_ON_SUCCESS=none), as in bench:wf10.
 * 2. Search ms at BENCH_SEARCH_SIZES (default 1000,10000,100000) chunks per vector route (bench/vectorSearch.bench.ts,
 *    imported): exact on the test PostgreSQL, pgvector HNSW on PGlite up to BENCH_HNSW_MAX (default 10,000;
 *    the WASM index build takes ~1 min per 10k rows, so 100k would take ~10+ min). Runs after n8n stopped.
 * Prints both tables and the total run time. Not part of `npm test`.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { answerOperation } from '../nodes/KnowledgeBot/actions/qa/answer.operation';
import { vectorRoute } from '../nodes/KnowledgeBot/actions/vectorRoute';
import { sendMessage } from '../nodes/KnowledgeBot/transport/botApi';
import { embedTexts } from '../nodes/KnowledgeBot/transport/embeddings';
import { fetchSender, httpPostJson } from '../nodes/KnowledgeBot/transport/http';
import { DEFAULT_RETRY, generate } from '../nodes/shared/llm/generate';
import { startBotApi } from '../test/helpers/botApiStandIn';
import { seedBot, setupDatabase } from '../test/helpers/db';
import { startEmbeddings } from '../test/helpers/embeddingStandIn';
import { knowledgeRunner } from '../test/helpers/knowledgeOps';
import { ModelStandIn } from '../test/helpers/modelStandIn';
import { ASKER, seedCorpus, type Question } from './answerCorpus';
import { searchBench, searchTable, type SearchBenchOptions } from './vectorSearch.bench';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../scripts/lib/n8n');

const QUESTIONS = Number(process.env.BENCH_QUESTIONS || 60);
const CHUNKS = Number(process.env.BENCH_ANSWER_CHUNKS || 1000);
const JOBS = Number(process.env.BENCH_JOBS || 50);
const WARMUP = 5;
const SEARCH: SearchBenchOptions = {
	sizes: (process.env.BENCH_SEARCH_SIZES || '1000,10000,100000').split(',').map(Number),
	hnswMax: Number(process.env.BENCH_HNSW_MAX || 10_000),
	runs: Number(process.env.BENCH_VECTOR_RUNS || 7),
};
const ROOT = path.join(__dirname, '..');

/** nearest-rank percentile of `xs` (ms) */
const percentile = (xs: number[], p: number) =>
	[...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * xs.length) - 1)];

async function timed(fn: () => Promise<void>): Promise<number> {
	const t = performance.now();
	await fn();
	return performance.now() - t;
}

async function answerLatency(started: number) {
	if (spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0)
		throw new Error('build failed');
	const db = await setupDatabase();
	const botApi = await startBotApi();
	const embeddings = await startEmbeddings();
	const model = new ModelStandIn();
	await model.up();
	model.respond = () => ({ text: 'Here is what the sources say [1].' });
	const instance = harness.createInstance({ bin: harness.ensureN8n({ log: console.log }) });
	try {
		const bot = await seedBot(db.pool, 'bench_answer_bot', 'bench-Secret_1');
		const tenant = bot.tenantId;
		const t = performance.now();
		const corpus = await seedCorpus(db.pool, tenant, CHUNKS);
		const route = (await vectorRoute(db.pool)).route;
		process.stderr.write(
			`answer corpus: ${CHUNKS} chunks seeded in ${((performance.now() - t) / 1000).toFixed(1)} s, vector route ${route}\n`,
		);

		const credentials = {
			telegram: () => ({ accessToken: botApi.token, baseUrl: botApi.baseUrl }),
			embeddings: () => ({ api: 'gemini' as const, baseUrl: embeddings.baseUrl, apiKey: 'k' }),
			llm: () => ({ api: 'openai' as const, baseUrl: model.url, apiKey: 'sk-stand-in', model: 'stand-in' }),
		};
		await instance.importCredentials([
			harness.postgresCredential(db.url),
			harness.telegramCredential(botApi.baseUrl, botApi.token),
			{
				id: 'embContracts01',
				name: 'Contracts Embeddings',
				type: 'contractsEmbeddingsApi',
				data: credentials.embeddings(),
			},
			{ id: 'llmContracts01', name: 'Contracts LLM', type: 'contractsLlmApi', data: credentials.llm() },
		]);
		await instance.importAndPublish([
			...['WF99_global_err_handler.json', 'WF51_answerer.json', 'WF90_job_runner.json'].map((f) =>
				path.join(ROOT, 'workflows-json', f),
			),
			path.join(ROOT, 'test', 'e2e', 'workflows', 'test_call_workflow.json'),
			path.join(__dirname, 'workflows', 'BENCH_noop_subworkflow.json'),
		]);
		const url = await instance.start({
			env: { EXECUTIONS_DATA_SAVE_ON_SUCCESS: 'none', EXECUTIONS_DATA_SAVE_MANUAL_EXECUTIONS: 'false' },
		});
		await instance.waitForWebhooks(['test/call']);
		process.stderr.write(`n8n up after ${((performance.now() - started) / 1000).toFixed(0)} s\n`);

		const req = (q: Question) => ({
			tenant_id: tenant,
			tg_user_id: ASKER,
			channel: q.channel,
			chat_id: q.chat_id,
			question: q.question,
		});
		/** answers per path that found nothing (no candidate passed the floors): no citation, the fixed reply */
		const nothingFound = new Map<string, number>();
		const check = (
			q: Question,
			data:
				| { citations?: { chunk_id: number }[]; telegram_message_id?: number | null; answer_text?: unknown }
				| undefined,
			where: string,
		) => {
			const cited = data?.citations ?? [];
			if (cited.length === 0) {
				if (typeof data?.answer_text !== 'string' || !data.answer_text.startsWith('I found nothing '))
					throw new Error(`${where}: no citation for ${JSON.stringify(q)}: ${JSON.stringify(data)}`);
				nothingFound.set(where, (nothingFound.get(where) ?? 0) + 1);
			}
			const allowed = corpus.allowed(q.channel);
			const leaked = cited.filter((c) => !allowed.has(Number(c.chunk_id)));
			if (leaked.length)
				throw new Error(`${where}: cited chunks the asker may not see in the ${q.channel}: ${JSON.stringify(leaked)}`);
			if (typeof data?.telegram_message_id !== 'number')
				throw new Error(`${where}: the reply was not sent: ${JSON.stringify(data)}`);
		};
		const call = async (workflowId: string, q: Question) => {
			const res = await fetch(`${url}/webhook/test/call`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({ workflow_id: workflowId, req: req(q) }),
			});
			const body = (await res.json()) as { ok?: boolean; data?: Record<string, any> };
			if (res.status !== 200 || body.ok !== true)
				throw new Error(`${workflowId} answered ${res.status}: ${JSON.stringify(body).slice(0, 500)}`);
			return body.data;
		};
		const runner = knowledgeRunner(() => db.pool, crypto.randomUUID(), credentials);
		const paths: { name: string; run: (q: Question) => Promise<void> }[] = [
			{
				name: 'stand-ins only (embed + model + sendMessage, no SQL, no n8n)',
				run: async (q) => {
					await embedTexts(
						httpPostJson,
						credentials.embeddings(),
						{ name: 'gemini-embedding-001', dims: 1536 },
						[q.question],
						'RETRIEVAL_QUERY',
					);
					await generate(
						credentials.llm(),
						{ system: 'bench', input: q.question, expectJson: false, temperature: 0.2 },
						DEFAULT_RETRY,
						fetchSender,
					);
					await sendMessage(httpPostJson, credentials.telegram(), q.chat_id, 'bench', null, 15_000);
				},
			},
			{
				name: 'Answer operation in-process (no n8n)',
				run: async (q) => check(q, (await runner.run(answerOperation, req(q))).data as never, 'in-process'),
			},
			{
				name: 'n8n no-op (webhook → Execute Workflow → no-op)',
				run: async (q) => void (await call('BenchNoopSub', q)),
			},
			{
				name: 'n8n WF51 (webhook → Execute Workflow → WF51)',
				run: async (q) => check(q, (await call('WF51Answerer', q)) as never, 'n8n WF51'),
			},
		];
		const sentBefore = botApi.sent.length;
		for (const q of corpus.questions(WARMUP)) for (const p of paths) await p.run(q);
		const times = paths.map(() => [] as number[]);
		for (const q of corpus.questions(QUESTIONS)) {
			for (const [i, p] of paths.entries()) times[i].push(await timed(() => p.run(q)));
		}
		// the stand-in path sends one message per question too
		const sent = botApi.sent.length - sentBefore;
		if (sent !== 3 * (QUESTIONS + WARMUP))
			throw new Error(`${sent} replies sent for ${QUESTIONS + WARMUP} questions × 3 paths that send`);

		const jobs = await wf90Batch(db.pool, tenant, corpus.questions(JOBS), (q) => req(q));
		const floor = percentile(times[0], 50);
		const lines = [
			`WF51 answer latency, ms: ${QUESTIONS} distinct questions per path (after ${WARMUP} warm-up), one client, paths interleaved per question;`,
			`corpus ${CHUNKS} chunks, vector route ${route}; n8n ${harness.N8N_VERSION}, executions not saved; stand-ins on 127.0.0.1`,
			'path | p50 | p95 | p50 / stand-ins p50',
			...paths.map(
				(p, i) =>
					`${p.name} | ${percentile(times[i], 50).toFixed(1)} | ${percentile(times[i], 95).toFixed(1)} | ${(percentile(times[i], 50) / floor).toFixed(1)}x`,
			),
			`n8n WF51 − in-process, p50: ${(percentile(times[3], 50) - percentile(times[1], 50)).toFixed(1)} ms (what n8n adds: webhook, sub-workflow call, node); n8n WF51 − n8n no-op, p50: ${(percentile(times[3], 50) - percentile(times[2], 50)).toFixed(1)} ms (WF51 inside n8n)`,
			`answers that found nothing (no candidate passed the node's default floors; no model call, the fixed reply sent): ${['in-process', 'n8n WF51'].map((w) => `${w} ${nothingFound.get(w) ?? 0}/${QUESTIONS + WARMUP}`).join(', ')}`,
			`WF90 (cross-check): ${JOBS} qa_answer jobs enqueued at once, all succeeded; first claim → last finish ${(jobs.drainMs / 1000).toFixed(1)} s = ${(jobs.drainMs / JOBS).toFixed(1)} ms per job (sequential in one execution); enqueue → last finish ${(jobs.totalMs / 1000).toFixed(1)} s (includes the wait for WF90's 10 s schedule)`,
		];
		return lines;
	} finally {
		await instance.stop();
		instance.remove();
		await model.down().catch(() => undefined);
		await botApi.close();
		await embeddings.close();
		await db.drop();
	}
}

/** Enqueues one qa_answer job per question and waits for WF90 to finish them all (each must succeed). */
async function wf90Batch(
	pool: import('pg').Pool,
	tenant: string,
	questions: Question[],
	req: (q: Question) => Record<string, unknown>,
) {
	const t = performance.now();
	const { rows } = await pool.query(
		"INSERT INTO ops.jobs (tenant_id, job_type, payload) SELECT $1, 'qa_answer', p FROM jsonb_array_elements($2::jsonb) p RETURNING id",
		[tenant, JSON.stringify(questions.map(req))],
	);
	const ids = rows.map((r) => Number(r.id));
	const deadline = Date.now() + 180_000;
	for (;;) {
		const s = await pool.query(
			"SELECT count(*) FILTER (WHERE status IN ('queued', 'running'))::int AS open, count(*) FILTER (WHERE status NOT IN ('queued', 'running', 'succeeded'))::int AS bad FROM ops.jobs WHERE id = ANY($1)",
			[ids],
		);
		if (s.rows[0].bad > 0)
			throw new Error(
				`WF90: ${s.rows[0].bad} qa_answer jobs did not succeed: ${JSON.stringify((await pool.query('SELECT id, status, last_error FROM ops.jobs WHERE id = ANY($1) AND status <> $2 LIMIT 3', [ids, 'succeeded'])).rows)}`,
			);
		if (s.rows[0].open === 0) {
			const totalMs = performance.now() - t;
			// ops.jobs clears locked_at on finish; the runs keep when each attempt started and finished
			const runs = (
				await pool.query(
					"SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'succeeded')::int AS ok, extract(epoch FROM max(finished_at) - min(started_at)) * 1000 AS drain FROM ops.job_runs WHERE job_id = ANY($1)",
					[ids],
				)
			).rows[0];
			if (runs.n !== ids.length || runs.ok !== ids.length)
				throw new Error(`WF90: ${runs.n} runs (${runs.ok} succeeded) for ${ids.length} jobs: a job was retried`);
			return { drainMs: Number(runs.drain), totalMs };
		}
		if (Date.now() > deadline) throw new Error(`WF90: ${s.rows[0].open} jobs still open after 180 s`);
		await new Promise((r) => setTimeout(r, 250));
	}
}

async function main() {
	const started = performance.now();
	const latency = await answerLatency(started);
	const search = searchTable(await searchBench(SEARCH), SEARCH);
	console.log(
		[
			'',
			...latency,
			'',
			...search,
			'',
			`bench:answer run time ${((performance.now() - started) / 1000).toFixed(0)} s`,
		].join('\n'),
	);
}

main().then(
	() => process.exit(0),
	(error) => {
		console.error(error);
		process.exit(1);
	},
);
