/**
 * `npm run eval:answer`: how well Q&A → Answer (WF51) answers the evaluation set of issue 30 (bench/eval/: a
 * small company's 32 documents in HTML, Markdown, plain text, PDF and DOCX, shared in two groups and in private
 * chats, and 72 questions with the documents they should cite — some with none: off-topic, or about a document
 * the asker may not see where they ask).
 *
 * Per side, in a fresh migrated PostgreSQL database (test/helpers/db.ts):
 *  1. the corpus goes in through the bot's own path, in-process (bench/eval/ingest.ts): Telegram updates →
 *     Update → Process → URL → Normalize / Fetch (a page server on 127.0.0.1) and File → Download (the Bot API
 *     stand-in on 127.0.0.1) → Document → Extract → Chunk → Embed;
 *  2. every question is asked through the Answer operation in-process (as bench:answer's in-process path: ACL,
 *     session, search, model, audit rows, the reply sent to the Bot API stand-in), one at a time, after 3 warm-up
 *     questions; the wall time of each call is its latency;
 *  3. the documents an answer cites are read from its output's `citations` (an entry's document_id, else its
 *     source_ref.document_id, else its chunk's document: bench/eval/score.ts), and the same from the turn's
 *     audit.qa_citations rows (the output is scored; a difference between the two is reported);
 *  4. scores (bench/eval/score.ts): citation precision and recall, the share of expected "nothing found" answers
 *     that found nothing, the share of answerable questions wrongly answered with nothing, privacy leaks (answers
 *     citing a document outside the asker's visibility there), latency p50/p95 ms; a table with three decimals
 *     and the goal rows of issue 30 (with the offline stand-ins: precision ≥ 0.9, recall ≥ 0.8, leaks = 0).
 *
 * Sides:
 *  - offline stand-ins (always): the word-hashing embeddings stand-in (test/helpers/embeddingStandIn.ts) and
 *    the extractive model (test/helpers/extractiveAnswer.ts: source [1]'s first sentence, cited [1]), both on
 *    127.0.0.1;
 *  - OpenAI-compatible endpoint, only when OPENAI_BASE_URL is set (e.g. https://api.openai.com/v1 or a local
 *    server; a trailing /v1 is dropped, the node adds its own paths), with OPENAI_API_KEY (optional for a local
 *    server), OPENAI_MODEL (chat model, default gpt-4o-mini) and OPENAI_EMBEDDING_MODEL (default
 *    text-embedding-3-small, asked for 1,536 dimensions; `stand-in` keeps the word-hashing embedder, for an
 *    endpoint without embeddings). This is the one run that may send packets beyond loopback, to the endpoint
 *    the user configured; without OPENAI_BASE_URL it is skipped and says so.
 * Env: EVAL_SHOW_MISSES=0 hides the list of questions not answered exactly right (shown by default);
 * EVAL_STRICT=1 exits 1 when a goal is not met. A privacy leak always exits 1.
 * Not part of `npm test` (test/unit/answerEvalSet.test.ts checks the set itself).
 */
import crypto from 'node:crypto';
import { answerOperation } from '../nodes/KnowledgeBot/actions/qa/answer.operation';
import { vectorRoute } from '../nodes/KnowledgeBot/actions/vectorRoute';
import { embedTexts, type EmbeddingsCredential } from '../nodes/KnowledgeBot/transport/embeddings';
import { httpPostJson } from '../nodes/KnowledgeBot/transport/http';
import type { LlmCredential } from '../nodes/shared/llm/generate';
import { startBotApi } from '../test/helpers/botApiStandIn';
import { seedBot, setupDatabase } from '../test/helpers/db';
import { startEmbeddings } from '../test/helpers/embeddingStandIn';
import { extractiveAnswer } from '../test/helpers/extractiveAnswer';
import { knowledgeRunner } from '../test/helpers/knowledgeOps';
import { ModelStandIn } from '../test/helpers/modelStandIn';
import { loadEvalSet, type EvalSet } from './eval/evalSet';
import { ingestCorpus, startPages } from './eval/ingest';
import {
	citedDocumentIds,
	markerRanks,
	percentile,
	score,
	topScoreOf,
	type QuestionResult,
	type Scores,
} from './eval/score';
import { sweep } from './eval/sweep';
import { markdownTable } from './report';

const WARMUP = 3;
const GOALS = { precision: 0.9, recall: 0.8 };

interface Side {
	name: string;
	/** what the side runs against, for the table's heading */
	describe: string;
	embeddings: () => EmbeddingsCredential;
	embedding: { provider: string; name: string };
	llm: () => LlmCredential;
	/** whether issue 30's goals apply (the offline stand-ins) */
	goals: boolean;
}

interface SideResult {
	side: Side;
	scores: Scores;
	/** the same answers, counting only the citations their text refers to with [n] */
	referenced: Scores;
	results: QuestionResult[];
	documents: number;
	chunks: number;
	route: string;
	ingestSeconds: number;
	unresolvedCitations: number;
	auditDifferences: string[];
	/** EVAL_SWEEP=1, offline side: the floors × scorings tables (eval/sweep.ts) */
	sweepLines: string[];
}

const fmt = (x: number) => (Number.isNaN(x) ? 'n/a' : x.toFixed(3));

async function evaluate(set: EvalSet, side: Side): Promise<SideResult> {
	const db = await setupDatabase();
	const botApi = await startBotApi();
	const pages = await startPages();
	try {
		const bot = await seedBot(db.pool, 'eval_answer_bot', 'eval-Secret_1');
		const { port } = new URL(pages.base);
		const runner = knowledgeRunner(
			() => db.pool,
			crypto.randomUUID(),
			{
				telegram: () => ({ accessToken: botApi.token, baseUrl: botApi.baseUrl }),
				embeddings: side.embeddings,
				llm: side.llm,
			},
			// the page server is on 127.0.0.1: URL → Fetch's Options name it, as the e2e tests and the demo do
			{ allowedAddresses: '127.0.0.1', allowedPorts: port },
		);
		const run = async (op: Parameters<typeof runner.run>[0], req: unknown) =>
			(await runner.run(op, req)) as { data: Record<string, unknown> };
		const t = performance.now();
		const corpus = await ingestCorpus({
			pool: db.pool,
			tenantId: bot.tenantId,
			botId: bot.botId,
			set,
			run,
			pages,
			botApi,
			embedding: side.embedding,
		});
		const ingestSeconds = (performance.now() - t) / 1000;
		const route = (await vectorRoute(db.pool)).route;
		process.stderr.write(
			`${side.name}: ${corpus.documentIds.size} documents, ${corpus.chunkDocuments.size} chunks ingested in ${ingestSeconds.toFixed(1)} s (jobs ${JSON.stringify(corpus.jobs)}), vector route ${route}\n`,
		);

		const ask = (q: EvalSet['questions'][number]) =>
			run(answerOperation, {
				tenant_id: bot.tenantId,
				tg_user_id: corpus.userOf(q.asker),
				channel: q.channel,
				chat_id: corpus.chatOf(q.group, q.asker),
				question: q.question,
			});
		for (const q of set.questions.slice(0, WARMUP)) await ask(q);
		const results: QuestionResult[] = [];
		let unresolvedCitations = 0;
		const auditDifferences: string[] = [];
		const evalIdOf = (d: number) => corpus.evalIds.get(d) ?? `#${d}`;
		for (const q of set.questions) {
			const started = performance.now();
			const { data } = await ask(q);
			const ms = performance.now() - started;
			const audit = await db.pool.query(
				'SELECT rank, chunk_id, source_ref FROM audit.qa_citations WHERE turn_id = $1 ORDER BY rank',
				[data.turn_id],
			);
			const fromAudit = citedDocumentIds(audit.rows, corpus.chunkDocuments);
			// an output without a citations array: the audit rows say what was cited
			const fromOutput = Array.isArray(data.citations)
				? citedDocumentIds(data.citations, corpus.chunkDocuments)
				: fromAudit;
			unresolvedCitations += fromOutput.unresolved;
			const cited = fromOutput.documents.map(evalIdOf);
			const audited = fromAudit.documents.map(evalIdOf);
			if ([...cited].sort().join() !== [...audited].sort().join())
				auditDifferences.push(`${q.id}: output ${cited.join(',') || '-'} / audit ${audited.join(',') || '-'}`);
			const answer = String(data.answer_text ?? '');
			const referenced = citedDocumentIds(
				Array.isArray(data.citations) ? data.citations : audit.rows,
				corpus.chunkDocuments,
				markerRanks(answer),
			).documents.map(evalIdOf);
			const topScore = topScoreOf(Array.isArray(data.citations) ? data.citations : audit.rows);
			results.push({ question: q, cited, referenced, ms, answer, topScore });
		}
		let sweepLines: string[] = [];
		if (process.env.EVAL_SWEEP === '1' && side.goals) {
			const model = (
				await db.pool.query(
					'SELECT id, name, dims FROM kg.embedding_models WHERE is_active AND dims = 1536 ORDER BY id LIMIT 1',
				)
			).rows[0] as { id: number; name: string; dims: number };
			const swept = await sweep({
				pool: db.pool,
				tenantId: bot.tenantId,
				modelId: Number(model.id),
				set,
				corpus,
				embedQuestion: async (text) =>
					(
						await embedTexts(
							httpPostJson,
							side.embeddings(),
							{ name: model.name, dims: 1536 },
							[text],
							'RETRIEVAL_QUERY',
						)
					)[0],
			});
			sweepLines = ['', '## Sweep of the retrieval defaults (EVAL_SWEEP=1, offline stand-ins, k = 5)', ...swept.lines];
		}
		return {
			sweepLines,
			side,
			scores: score(set.corpus, results),
			referenced: score(set.corpus, results, 'referenced'),
			results,
			documents: corpus.documentIds.size,
			chunks: corpus.chunkDocuments.size,
			route,
			ingestSeconds,
			unresolvedCitations,
			auditDifferences,
		};
	} finally {
		await pages.close();
		await botApi.close();
		await db.drop();
	}
}

function report(set: EvalSet, r: SideResult): string[] {
	const s = r.scores;
	const formats = [...new Set(set.corpus.documents.map((d) => d.format))].join(', ');
	const goal = (met: boolean) => (met ? 'met' : 'NOT met');
	const lines = [
		`## ${r.side.name}: ${r.side.describe}`,
		`${r.documents} documents (${formats}) → ${r.chunks} chunks, ingested in ${r.ingestSeconds.toFixed(1)} s; vector route ${r.route}; ${s.questions} questions (${s.answerable} answerable, ${s.none} expecting nothing found: ${s.offTopicRight.of} off-topic, ${s.notVisibleRight.of} not visible to the asker)`,
		'',
		markdownTable(
			['measure', 'value'],
			[
				['citation precision (cited documents expected or acceptable ÷ cited documents)', fmt(s.precision)],
				['citation recall (expected documents cited ÷ expected documents)', fmt(s.recall)],
				[
					`"nothing found" right (expected none, cited none ÷ ${s.none})`,
					`${fmt(s.nothingFoundRight)} (off-topic ${s.offTopicRight.right}/${s.offTopicRight.of}, not visible ${s.notVisibleRight.right}/${s.notVisibleRight.of})`,
				],
				[`wrongly "nothing found" (answerable, cited none ÷ ${s.answerable})`, fmt(s.wronglyNothingFound)],
				[
					'privacy leaks (answers citing a document outside the asker’s visibility)',
					`${s.leakedAnswers} (${s.leakedCitations} citations)`,
				],
				['answer latency p50, ms', s.p50.toFixed(3)],
				['answer latency p95, ms', s.p95.toFixed(3)],
			],
		),
	];
	const f = r.referenced;
	lines.push(
		'',
		`The same answers counting only the sources their text refers to with [n]: precision ${fmt(f.precision)}, recall ${fmt(f.recall)}, "nothing found" right ${fmt(f.nothingFoundRight)}, wrongly "nothing found" ${fmt(f.wronglyNothingFound)}, leaks ${f.leakedAnswers}.`,
	);
	// for the relevance floor: how similar the best source was, by what the question should get
	const spread = (kind: 'right' | 'none') => {
		const xs = r.results
			.filter((x) =>
				kind === 'none'
					? x.question.kind !== 'answer'
					: x.question.kind === 'answer' && x.referenced.some((d) => x.question.expect.includes(d)),
			)
			.map((x) => x.topScore)
			.filter((x): x is number => x !== null);
		return xs.length
			? `${xs.length} answers, min ${fmt(Math.min(...xs))} / p50 ${fmt(percentile(xs, 50))} / max ${fmt(Math.max(...xs))}`
			: 'no answer with a source';
	};
	lines.push(
		`Best source score (cosine; retrieval hybrid: the hybrid score): answers whose [n] source is expected: ${spread('right')}; questions expecting nothing found: ${spread('none')}.`,
	);
	if (r.side.goals)
		lines.push(
			'',
			markdownTable(
				['goal (issue 30, offline stand-ins)', 'measured', 'verdict'],
				[
					[`citation precision ≥ ${GOALS.precision}`, fmt(s.precision), goal(s.precision >= GOALS.precision)],
					[`citation recall ≥ ${GOALS.recall}`, fmt(s.recall), goal(s.recall >= GOALS.recall)],
					['privacy leaks = 0', String(s.leakedAnswers), goal(s.leakedAnswers === 0)],
				],
			),
		);
	if (r.unresolvedCitations) lines.push(`${r.unresolvedCitations} citation entries named no document or chunk`);
	if (r.auditDifferences.length)
		lines.push(
			`${r.auditDifferences.length} answers whose output citations differ from their audit.qa_citations rows: ${r.auditDifferences.slice(0, 5).join('; ')}`,
		);
	if (process.env.EVAL_SHOW_MISSES !== '0' && s.misses.length) {
		lines.push('', `${s.misses.length} questions not answered exactly right (expected → cited; [n]-referenced):`);
		const referenced = new Map(r.results.map((x) => [x.question.id, x.referenced]));
		for (const m of s.misses)
			lines.push(
				`  ${m.id} ${m.kind}: ${m.expect.join(',') || 'none'} → ${m.cited.join(',') || 'none'}; ${referenced.get(m.id)?.join(',') || 'none'}${m.leaked.length ? `  LEAK ${m.leaked.join(',')}` : ''}`,
			);
	}
	lines.push(...r.sweepLines);
	return lines;
}

/** The OpenAI-compatible side, or why it is skipped. */
function openAiSide(): Side | string {
	const raw = process.env.OPENAI_BASE_URL;
	if (!raw)
		return 'OPENAI_BASE_URL is not set (set it, with OPENAI_API_KEY, OPENAI_MODEL, OPENAI_EMBEDDING_MODEL, to run the set against that endpoint)';
	const baseUrl = raw.replace(/\/+$/, '').replace(/\/v1$/, '');
	const apiKey = process.env.OPENAI_API_KEY || undefined;
	const model = process.env.OPENAI_MODEL || 'gpt-4o-mini';
	const embeddingModel = process.env.OPENAI_EMBEDDING_MODEL || 'text-embedding-3-small';
	const standInEmbeddings = embeddingModel === 'stand-in';
	return {
		name: 'OpenAI-compatible endpoint',
		describe: `${new URL(baseUrl).host}, model ${model}, embeddings ${standInEmbeddings ? 'word-hashing stand-in (127.0.0.1)' : `${embeddingModel} (1,536 dimensions)`}`,
		embeddings: () => ({ api: 'openai', baseUrl, apiKey }),
		embedding: { provider: 'openai', name: embeddingModel },
		llm: () => ({ api: 'openai', baseUrl, apiKey, model }),
		goals: false,
	};
}

async function main() {
	const started = performance.now();
	const set = loadEvalSet();
	const embeddings = await startEmbeddings();
	const model = new ModelStandIn();
	model.respond = extractiveAnswer;
	await model.up();
	const out: string[] = [];
	const results: SideResult[] = [];
	try {
		const offline: Side = {
			name: 'offline stand-ins',
			describe: 'word-hashing embedder and extractive model on 127.0.0.1',
			embeddings: () => ({ api: 'gemini', baseUrl: embeddings.baseUrl, apiKey: 'k' }),
			embedding: { provider: 'gemini', name: 'gemini-embedding-001' },
			llm: () => ({ api: 'openai', baseUrl: model.url, apiKey: 'sk-stand-in', model: 'extractive-stand-in' }),
			goals: true,
		};
		results.push(await evaluate(set, offline));
		out.push('', ...report(set, results[0]));
		const remote = openAiSide();
		if (typeof remote === 'string') out.push('', `## OpenAI-compatible endpoint: skipped — ${remote}`);
		else {
			if (remote.embedding.name === 'stand-in') {
				remote.embeddings = offline.embeddings;
				remote.embedding = offline.embedding;
			}
			results.push(await evaluate(set, remote));
			out.push('', ...report(set, results[1]));
		}
	} finally {
		await model.down().catch(() => undefined);
		await embeddings.close();
	}
	out.push('', `eval:answer run time ${((performance.now() - started) / 1000).toFixed(0)} s`);
	console.log(out.join('\n'));
	const leaks = results.reduce((n, r) => n + r.scores.leakedAnswers, 0);
	const offline = results[0].scores;
	const unmet = offline.precision < GOALS.precision || offline.recall < GOALS.recall;
	if (leaks > 0) {
		console.error(`eval:answer: ${leaks} answers cited a document the asker may not see there`);
		return 1;
	}
	return unmet && process.env.EVAL_STRICT === '1' ? 1 : 0;
}

main().then(
	(code) => process.exit(code),
	(error) => {
		console.error(error);
		process.exit(1);
	},
);
