/**
 * The sweep behind Q&A → Answer's retrieval defaults (issue 30; `EVAL_SWEEP=1 npm run eval:answer`): for every
 * question of the set, the k = 5 candidates are retrieved once per scoring (`vector`, and `hybrid` at each
 * lexical weight) through the node's own retrieve.ts with the asker's ctx (Context Loader, so the privacy
 * filter applies), then, for each pair of floors (minScore × relativeScore), the same pure steps as Answer
 * (citations.ts relevantChunks → groupByDocument → answerPrompt → the extractive stand-in → renumberAnswer) give
 * the cited documents, scored as the run itself (score.ts). Only the offline stand-ins are swept: the model
 * runs in-process, no network. Output: one table per scoring, a row per minScore, a column per relativeScore,
 * each cell `precision / recall / "nothing found" right`.
 */
import type { Pool } from 'pg';
import { loadContext } from '../../nodes/shared/acl/loadContext';
import type { AclCtx } from '../../nodes/shared/contracts/ctx';
import {
	answerPrompt,
	groupByDocument,
	relevantChunks,
	renumberAnswer,
	type RelevanceRule,
} from '../../nodes/KnowledgeBot/actions/qa/citations';
import { retrieveChunks, type RetrievedChunk } from '../../nodes/KnowledgeBot/actions/qa/retrieve';
import { extractiveAnswer } from '../../test/helpers/extractiveAnswer';
import type { EvalSet } from './evalSet';
import type { IngestedCorpus } from './ingest';
import { score, type QuestionResult, type Scores } from './score';
import { markdownTable } from '../report';

export const SWEEP_MIN_SCORES = [0.25, 0.3, 0.35, 0.38, 0.4, 0.42, 0.44, 0.46, 0.5];
export const SWEEP_RELATIVE_SCORES = [0, 0.7, 0.8, 0.85, 0.88, 0.9, 0.92, 0.95];
/** the scorings swept: `vector`, and `hybrid` at these lexical weights */
export const SWEEP_WEIGHTS = [0.5, 0.6, 0.7, 0.8];

export interface SweepCell {
	scoring: string;
	rule: RelevanceRule;
	scores: Scores;
}

/**
 * @param embedQuestion the question's vector, as Answer embeds it (RETRIEVAL_QUERY)
 * @returns every cell of the sweep and its tables as Markdown lines
 */
export async function sweep(options: {
	pool: Pool;
	tenantId: string;
	modelId: number;
	set: EvalSet;
	corpus: IngestedCorpus;
	embedQuestion: (text: string) => Promise<number[]>;
}): Promise<{ cells: SweepCell[]; lines: string[] }> {
	const { pool, set, corpus } = options;
	const scorings: { name: string; weight: number | null }[] = [
		{ name: 'vector', weight: null },
		...SWEEP_WEIGHTS.map((w) => ({ name: `hybrid w=${w}`, weight: w })),
	];
	const candidates = new Map<string, RetrievedChunk[][]>(scorings.map((s) => [s.name, []]));
	for (const q of set.questions) {
		const { ctx } = (await loadContext(
			pool,
			{
				tenant_id: options.tenantId,
				tg_user_id: corpus.userOf(q.asker),
				chat_id: corpus.chatOf(q.group, q.asker),
				channel: q.channel,
			},
			{ ctx: {} },
		)) as { ctx: AclCtx };
		const vector = await options.embedQuestion(q.question);
		for (const s of scorings)
			candidates.get(s.name)!.push(
				await retrieveChunks(pool, ctx, vector, {
					model_id: options.modelId,
					k: 5,
					hybrid: s.weight === null ? undefined : { question: q.question, weight: s.weight },
				}),
			);
	}
	const cells: SweepCell[] = [];
	const lines: string[] = [];
	const evalIdOf = (d: number) => corpus.evalIds.get(d) ?? `#${d}`;
	for (const s of scorings) {
		const rows: string[][] = [];
		for (const minScore of SWEEP_MIN_SCORES) {
			const row = [minScore.toFixed(2)];
			for (const relativeScore of SWEEP_RELATIVE_SCORES) {
				const rule = { minScore, relativeScore };
				const results: QuestionResult[] = set.questions.map((question, i) => {
					const groups = groupByDocument(relevantChunks(candidates.get(s.name)![i], rule));
					if (groups.length === 0) return { question, cited: [], referenced: [], ms: 0, answer: '', topScore: null };
					const model = extractiveAnswer({ prompt: answerPrompt(groups, question.question) }).text;
					const { cited } = renumberAnswer(model, groups.length);
					const documents = cited.map((n) => evalIdOf(groups[n - 1].document_id));
					return { question, cited: documents, referenced: documents, ms: 0, answer: model, topScore: null };
				});
				const scores = score(set.corpus, results);
				cells.push({ scoring: s.name, rule, scores });
				row.push(
					`${scores.precision.toFixed(2)} / ${scores.recall.toFixed(2)} / ${scores.nothingFoundRight.toFixed(2)}${scores.leakedAnswers ? ` LEAK ${scores.leakedAnswers}` : ''}`,
				);
			}
			rows.push(row);
		}
		lines.push(
			'',
			`### ${s.name}: precision / recall / "nothing found" right`,
			'',
			markdownTable(['minScore ↓ relativeScore →', ...SWEEP_RELATIVE_SCORES.map((r) => r.toFixed(2))], rows),
		);
	}
	return { cells, lines };
}
