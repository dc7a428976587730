/**
 * Which retrieved chunks an answer may use and cite (issue 30), as pure functions so the eval bench runs the
 * same code as Q&A → Answer (WF51):
 *  1. `relevantChunks`: of the k candidates, the ones that pass both floors — an absolute cosine floor
 *     (`minScore`) and a floor relative to the best candidate (`relativeScore` × best score);
 *  2. `groupByDocument`: the passing chunks as numbered sources, one per document (its chunks in score order),
 *     numbered in the order of each document's best chunk — what the model sees as `[1]`, `[2]`…;
 *  3. `renumberAnswer`: the `[n]` markers of the model's answer: only the sources it references are cited,
 *     renumbered 1, 2… in the order of their first reference (markers naming no source are dropped);
 *  4. `sourceLabel` / `sourceLines`: one "Sources" line per cited document, its label from the fallback chain
 *     title → file name → URL → `document <id>`.
 * No I/O, no randomness.
 */

/** The two floors of the relevance rule; scores are cosine similarities (1 = same direction). */
export interface RelevanceRule {
	/** absolute floor: a candidate scoring below it is never used (0–1) */
	minScore: number;
	/** relative floor: a candidate scoring below `relativeScore` × the best candidate's score is not used (0–1) */
	relativeScore: number;
}

/**
 * Default absolute floor, for the default retrieval `hybrid` (retrieve.ts: 0.4 × cosine + 0.6 × PostgreSQL
 * full-text rank). Measured on the issue-30 evaluation set (`EVAL_SWEEP=1 npm run eval:answer`: 32 documents, 72
 * questions, k = 5, the offline stand-ins; cells are citation precision / recall / "nothing found" right):
 *
 *   minScore ↓ relativeScore →  0.85            0.88            0.90            0.92            0.95
 *   0.30                        0.82/0.93/0.88  0.85/0.93/0.88  0.87/0.90/0.88  0.89/0.90/0.88  0.90/0.90/0.88
 *   0.35                        0.87/0.90/0.94  0.89/0.90/0.94  0.91/0.88/0.94  0.93/0.88/0.94  0.95/0.88/0.94
 *   0.38                        0.89/0.84/0.94  0.91/0.84/0.94  0.94/0.83/0.94  0.94/0.83/0.94  0.96/0.83/0.94
 *   0.40                        0.89/0.83/0.94  0.91/0.83/0.94  0.94/0.81/0.94  0.94/0.81/0.94  0.96/0.81/0.94
 *   0.42                        0.90/0.72/1.00  0.91/0.72/1.00  0.96/0.72/1.00  0.96/0.72/1.00  0.98/0.72/1.00
 *
 * Issue 30's goal (precision ≥ 0.9, recall ≥ 0.8) holds for minScore 0.35–0.40 × relativeScore 0.90–0.95 (and
 * 0.38–0.40 × 0.88); 0.38 / 0.90 is the middle of that region. With retrieval `vector` and the word-hashing
 * embedder no pair meets it (recall ≥ 0.8 only at precision ≤ 0.52: relevant answers score from 0.28 in cosine,
 * off-topic questions up to 0.46; the previous defaults 0.25 / 0.7 gave 0.48 / 0.79). Real embedding models
 * score on other scales: re-tune both floors per model and retrieval mode.
 */
export const DEFAULT_MIN_SCORE = 0.38;

/**
 * Default relative floor: a candidate below 90 % of the best candidate's score is not used. Measured as
 * DEFAULT_MIN_SCORE (the table there): from 0.85 down, documents sharing only common words with the question
 * pass and precision falls below 0.9; up to 0.95 the goal still holds.
 */
export const DEFAULT_RELATIVE_SCORE = 0.9;

export const DEFAULT_RELEVANCE: RelevanceRule = { minScore: DEFAULT_MIN_SCORE, relativeScore: DEFAULT_RELATIVE_SCORE };

/**
 * A rule from the node's fields: each value a finite number in 0–1, else its default (an empty field in n8n).
 * @throws RangeError a number outside 0–1 (the node turns it into a 422 naming the field)
 */
export function relevanceRule(values: { minScore?: unknown; relativeScore?: unknown } = {}): RelevanceRule {
	const one = (name: keyof RelevanceRule, value: unknown): number => {
		if (value === undefined || value === null || value === '') return DEFAULT_RELEVANCE[name];
		const n = typeof value === 'string' ? Number(value) : value;
		if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > 1)
			throw new RangeError(`${name} must be a number from 0 to 1, got ${JSON.stringify(value)}`);
		return n;
	};
	return { minScore: one('minScore', values.minScore), relativeScore: one('relativeScore', values.relativeScore) };
}

/**
 * The candidates that pass both floors, in their given order: score ≥ minScore and score ≥ relativeScore ×
 * the best score. A best score ≤ 0 (nothing points the question's way) passes nothing.
 */
export function relevantChunks<T extends { score: number }>(candidates: readonly T[], rule: RelevanceRule): T[] {
	const best = candidates.reduce((m, c) => (c.score > m ? c.score : m), -Infinity);
	if (!(best > 0)) return [];
	const floor = Math.max(rule.minScore, rule.relativeScore * best);
	return candidates.filter((c) => c.score >= floor);
}

const nonBlank = (s: string | null | undefined): string | null => (typeof s === 'string' && s.trim() ? s.trim() : null);

/** A numbered source: one document and its chunks (best first). `n` starts at 1. */
export interface SourceGroup<T> {
	n: number;
	document_id: number;
	chunks: T[];
}

/**
 * The chunks as one source per document, numbered 1, 2… in the order each document first appears (the
 * chunks come best first, so by each document's best chunk); a document's chunks keep their order.
 */
export function groupByDocument<T extends { document_id: number }>(chunks: readonly T[]): SourceGroup<T>[] {
	const groups = new Map<number, SourceGroup<T>>();
	for (const chunk of chunks) {
		let group = groups.get(chunk.document_id);
		if (!group) {
			group = { n: groups.size + 1, document_id: chunk.document_id, chunks: [] };
			groups.set(chunk.document_id, group);
		}
		group.chunks.push(chunk);
	}
	return [...groups.values()];
}

/**
 * The model's input (the user part; the system part is answer.operation.ts ANSWER_SYSTEM_PROMPT):
 * `Sources:` then each source as `[n] <label>[ <url>]` and its passages (best first, separated by a `…` line),
 * a blank line between sources, then `Question: <question>`.
 */
export function answerPrompt(groups: readonly SourceGroup<SourceRef & { text: string }>[], question: string): string {
	const sources = groups.map((g) => {
		const first = g.chunks[0];
		const label = sourceLabel(first);
		const url = nonBlank(first.url);
		return `[${g.n}] ${label}${url && url !== label ? ` ${url}` : ''}\n${g.chunks.map((c) => c.text).join('\n…\n')}`;
	});
	return `Sources:\n${sources.join('\n\n')}\n\nQuestion: ${question}`;
}

/**
 * A citation marker: brackets holding numbers 1–99 separated by commas, like `[1]`, `[2][3]` (two markers)
 * or `[1, 3]`, with the blanks before it. Other brackets (`[0]`, `[2024]`, `[a]`) are left as text.
 */
const MARKER = /([ \t]*)\[\s*([1-9]\d?(?:\s*,\s*[1-9]\d?)*)\s*\]/g;

/**
 * The answer with its `[n]` markers renumbered: `cited[i]` is the old number of new source i + 1, in the
 * order of first reference; a marker of several numbers becomes one marker each (`[3, 1]` → `[1][2]`), a
 * number outside 1–`sourceCount` is dropped (a marker naming no source disappears with the blanks before it),
 * the same source twice in a row (`[1][1]`) is written once. An answer without markers cites nothing.
 */
export function renumberAnswer(answer: string, sourceCount: number): { text: string; cited: number[] } {
	const cited: number[] = [];
	const newNumber = (old: number) => {
		let i = cited.indexOf(old);
		if (i < 0) i = cited.push(old) - 1;
		return i + 1;
	};
	const replaced = answer.replace(MARKER, (_marker, blanks: string, list: string) => {
		const numbers = list
			.split(',')
			.map((x) => Number(x.trim()))
			.filter((x) => x <= sourceCount);
		const markers = [...new Set(numbers.map(newNumber))].map((x) => `[${x}]`).join('');
		return markers ? blanks + markers : '';
	});
	return { text: replaced.replace(/(\[\d+\])(?:[ \t]*\1)+/g, '$1').trim(), cited };
}

/** What names a document in the Sources list. */
export interface SourceRef {
	document_id: number | string;
	title?: string | null;
	file_name?: string | null;
	url?: string | null;
}

/** The label of a document: its title, else its file name, else its URL, else `document <id>`. */
export function sourceLabel(ref: SourceRef): string {
	return nonBlank(ref.title) ?? nonBlank(ref.file_name) ?? nonBlank(ref.url) ?? `document ${String(ref.document_id)}`;
}

/** A Sources line: `[n] <label>`, and ` — <url>` when the label is a title or a file name and there is a URL. */
export function sourceLine(n: number, ref: SourceRef): string {
	const label = sourceLabel(ref);
	const url = nonBlank(ref.url);
	return `[${n}] ${label}${url && url !== label ? ` — ${url}` : ''}`;
}

/**
 * The cited sources of an answer, one per document, from the chunk-level citations of a turn (each with
 * `source_ref.source`, the document's number in the reply; rows written before issue 30 have none and count
 * as their own source `rank`): `[{ n, ref, chunk_ids }]` by n.
 */
export function sourcesOf(
	citations: readonly { rank: number; chunk_id: number | null; source_ref: Record<string, unknown> }[],
): { n: number; ref: SourceRef; chunk_ids: number[] }[] {
	const byN = new Map<number, { n: number; ref: SourceRef; chunk_ids: number[] }>();
	for (const c of citations) {
		const n = typeof c.source_ref.source === 'number' ? c.source_ref.source : c.rank;
		let source = byN.get(n);
		if (!source) {
			source = { n, ref: c.source_ref as unknown as SourceRef, chunk_ids: [] };
			byN.set(n, source);
		}
		if (c.chunk_id !== null) source.chunk_ids.push(c.chunk_id);
	}
	return [...byN.values()].sort((a, b) => a.n - b.n);
}
