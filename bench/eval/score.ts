/**
 * Scoring of `npm run eval:answer` (bench/answerEval.bench.ts): which documents an answer cites, and the set's
 * numbers. Pure functions, no I/O.
 *
 * Definitions (a "document" is an eval document id; an answer's cited documents are counted once each):
 *  - citation precision: cited documents that are expected or acceptable for their question ÷ all cited
 *    documents, over every question (a citation in an answer that should have found nothing counts against it);
 *  - citation recall: expected documents cited ÷ expected documents, over the `answer` questions;
 *  - nothing found right: `off-topic` and `not-visible` questions whose answer cites no document ÷ those questions;
 *  - wrongly nothing found: `answer` questions whose answer cites no document ÷ those questions;
 *  - privacy leaks: answers citing a document the asker may not see where they asked (evalSet.ts visibleTo),
 *    and the number of such citations; must be 0;
 *  - latency: the Answer operation's wall time per question, nearest-rank p50 / p95, ms.
 */
import { visibleTo, type Corpus, type EvalQuestion } from './evalSet';

/** One citation as an answer reports it, before or after issue 30's change to one entry per document. */
interface CitationLike {
	rank?: unknown;
	document_id?: unknown;
	chunk_id?: unknown;
	chunk_ids?: unknown;
	source_ref?: { document_id?: unknown } | null;
}

const asId = (v: unknown): number | null => {
	const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
	return typeof n === 'number' && Number.isSafeInteger(n) ? n : null;
};

/**
 * The content.documents ids the citations name, in order, each once: an entry's `document_id`, else its
 * `source_ref.document_id`, else the document of its `chunk_id` (or of each of its `chunk_ids`) by `chunkDocuments`.
 * With `onlyRanks`, only the entries whose `rank` is in it (markerRanks: the sources the answer's text refers to).
 * @returns `{ documents, unresolved }`: unresolved counts entries naming no document at all
 */
export function citedDocumentIds(
	citations: unknown,
	chunkDocuments: ReadonlyMap<number, number>,
	onlyRanks?: ReadonlySet<number>,
): { documents: number[]; unresolved: number } {
	const documents: number[] = [];
	let unresolved = 0;
	for (const entry of Array.isArray(citations) ? (citations as CitationLike[]) : []) {
		if (onlyRanks && !onlyRanks.has(asId(entry?.rank) ?? -1)) continue;
		const direct = asId(entry?.document_id) ?? asId(entry?.source_ref?.document_id);
		const chunks = [entry?.chunk_id, ...(Array.isArray(entry?.chunk_ids) ? entry.chunk_ids : [])]
			.map(asId)
			.filter((c): c is number => c !== null);
		const found =
			direct !== null ? [direct] : chunks.map((c) => chunkDocuments.get(c)).filter((d): d is number => d !== undefined);
		if (found.length === 0) unresolved++;
		for (const d of found) if (!documents.includes(d)) documents.push(d);
	}
	return { documents, unresolved };
}

/** The source numbers an answer's text refers to: every n of `[n]`, `[n][m]` and `[n, m]`. */
export function markerRanks(answer: string): Set<number> {
	const ranks = new Set<number>();
	for (const group of answer.matchAll(/\[(\d+(?:\s*,\s*\d+)*)\]/g))
		for (const n of group[1].split(',')) ranks.add(Number(n.trim()));
	return ranks;
}

export interface QuestionResult {
	question: EvalQuestion;
	/** eval document ids cited, each once (a content.documents id outside the corpus as `#<id>`) */
	cited: string[];
	/** the cited documents whose citation the answer's text refers to with [n] (markerRanks) */
	referenced: string[];
	ms: number;
	answer: string;
	/** the highest `score` among the answer's citations (cosine similarity), null without one */
	topScore: number | null;
}

/** The highest numeric `score` of the citation entries, or null. */
export function topScoreOf(citations: unknown): number | null {
	const scores = (Array.isArray(citations) ? (citations as { score?: unknown }[]) : [])
		.map((c) => Number(c?.score))
		.filter((x) => Number.isFinite(x));
	return scores.length ? Math.max(...scores) : null;
}

export interface Scores {
	questions: number;
	answerable: number;
	none: number;
	precision: number;
	recall: number;
	nothingFoundRight: number;
	offTopicRight: { right: number; of: number };
	notVisibleRight: { right: number; of: number };
	wronglyNothingFound: number;
	/** answers citing a document outside the asker's visibility there */
	leakedAnswers: number;
	leakedCitations: number;
	p50: number;
	p95: number;
	/** the questions whose answer was not exactly right (missed, extra, wrongly nothing found, leaked) */
	misses: { id: string; kind: EvalQuestion['kind']; expect: string[]; cited: string[]; leaked: string[] }[];
}

/** nearest-rank percentile of `xs` */
export function percentile(xs: number[], p: number): number {
	if (xs.length === 0) return NaN;
	return [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * xs.length) - 1)];
}

const ratio = (a: number, b: number) => (b === 0 ? NaN : a / b);

/**
 * @param reading `cited`: the answers' citations as output (the score of record); `referenced`: only those
 *   the answer's text refers to with [n] (a reading of the same answers, for comparison)
 */
export function score(corpus: Corpus, results: QuestionResult[], reading: 'cited' | 'referenced' = 'cited'): Scores {
	let cited = 0;
	let citedRight = 0;
	let expected = 0;
	let expectedCited = 0;
	let leakedAnswers = 0;
	let leakedCitations = 0;
	const offTopic = { right: 0, of: 0 };
	const notVisible = { right: 0, of: 0 };
	let answerable = 0;
	let emptyAnswers = 0;
	const misses: Scores['misses'] = [];
	for (const { question: q, [reading]: docs } of results) {
		const visible = visibleTo(corpus, q);
		const ok = new Set([...q.expect, ...(q.acceptable ?? [])]);
		const leaked = docs.filter((d) => !visible.has(d));
		if (leaked.length) {
			leakedAnswers++;
			leakedCitations += leaked.length;
		}
		cited += docs.length;
		citedRight += docs.filter((d) => ok.has(d)).length;
		if (q.kind === 'answer') {
			answerable++;
			expected += q.expect.length;
			expectedCited += q.expect.filter((d) => docs.includes(d)).length;
			if (docs.length === 0) emptyAnswers++;
		} else {
			const bucket = q.kind === 'off-topic' ? offTopic : notVisible;
			bucket.of++;
			if (docs.length === 0) bucket.right++;
		}
		const exact = q.expect.every((d) => docs.includes(d)) && docs.every((d) => ok.has(d));
		if (!exact || leaked.length) misses.push({ id: q.id, kind: q.kind, expect: q.expect, cited: docs, leaked });
	}
	const ms = results.map((r) => r.ms);
	return {
		questions: results.length,
		answerable,
		none: offTopic.of + notVisible.of,
		// no citation at all is vacuously precise
		precision: cited === 0 ? 1 : citedRight / cited,
		recall: ratio(expectedCited, expected),
		nothingFoundRight: ratio(offTopic.right + notVisible.right, offTopic.of + notVisible.of),
		offTopicRight: offTopic,
		notVisibleRight: notVisible,
		wronglyNothingFound: ratio(emptyAnswers, answerable),
		leakedAnswers,
		leakedCitations,
		p50: percentile(ms, 50),
		p95: percentile(ms, 95),
		misses,
	};
}
