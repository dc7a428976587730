/**
 * nodes/KnowledgeBot/actions/qa/citations.ts (issue 30): the relevance rule, one source per document, the
 * renumbering of the model's [n] markers, the Sources labels; and the extractive stand-in model citing only
 * the sources it quotes.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import {
	answerPrompt,
	DEFAULT_MIN_SCORE,
	DEFAULT_RELATIVE_SCORE,
	groupByDocument,
	relevanceRule,
	relevantChunks,
	renumberAnswer,
	sourceLabel,
	sourceLine,
	sourcesOf,
} from '../../nodes/KnowledgeBot/actions/qa/citations';
import { extractiveAnswer, sourcesOfPrompt } from '../helpers/extractiveAnswer';

const c = (id: number, document_id: number, score: number) => ({ id, document_id, score });

test('relevantChunks: both floors, the order kept; the issue-30 example keeps only the 0.60 chunk', () => {
	const issue = [c(1, 10, 0.6), c(2, 11, 0.0024), c(3, 11, 0.0024), c(4, 11, 0.0001), c(5, 11, 0)];
	assert.deepEqual(
		relevantChunks(issue, relevanceRule()).map((x) => x.id),
		[1],
	);
	const close = [c(1, 1, 0.5), c(2, 2, 0.4), c(3, 3, 0.3), c(4, 4, 0.2)];
	assert.deepEqual(
		relevantChunks(close, { minScore: 0.25, relativeScore: 0.7 }).map((x) => x.id),
		[1, 2],
		'0.3 < 0.7 × 0.5',
	);
	assert.deepEqual(
		relevantChunks(close, { minScore: 0.25, relativeScore: 0 }).map((x) => x.id),
		[1, 2, 3],
		'relative floor off: the absolute one alone',
	);
	assert.deepEqual(
		relevantChunks(close, { minScore: 0.6, relativeScore: 0 }),
		[],
		'nothing reaches the absolute floor',
	);
	assert.deepEqual(relevantChunks([c(1, 1, 0), c(2, 1, -0.2)], { minScore: 0, relativeScore: 0 }), []);
	assert.deepEqual(relevantChunks([], relevanceRule()), []);
});

test('relevanceRule: defaults for empty fields, numbers as strings read, outside 0–1 refused naming the field', () => {
	assert.deepEqual(relevanceRule(), { minScore: DEFAULT_MIN_SCORE, relativeScore: DEFAULT_RELATIVE_SCORE });
	assert.deepEqual(relevanceRule({ minScore: '', relativeScore: null }), relevanceRule());
	assert.deepEqual(relevanceRule({ minScore: '0.4', relativeScore: 0 }), { minScore: 0.4, relativeScore: 0 });
	assert.throws(() => relevanceRule({ minScore: 1.5 }), /^RangeError: minScore/);
	assert.throws(() => relevanceRule({ relativeScore: 'x' }), /^RangeError: relativeScore/);
	assert.throws(() => relevanceRule({ minScore: Number.NaN }), /minScore/);
});

test('groupByDocument: one numbered source per document, in the order of its best chunk', () => {
	const groups = groupByDocument([c(1, 7, 0.9), c(2, 8, 0.8), c(3, 7, 0.7), c(4, 9, 0.6)]);
	assert.deepEqual(
		groups.map((g) => [g.n, g.document_id, g.chunks.map((x) => x.id)]),
		[
			[1, 7, [1, 3]],
			[2, 8, [2]],
			[3, 9, [4]],
		],
	);
});

test('renumberAnswer: only referenced sources, renumbered by first reference; unknown markers dropped', () => {
	assert.deepEqual(renumberAnswer('A [3]. B [1][3]. C [2, 3].', 3), {
		text: 'A [1]. B [2][1]. C [3][1].',
		cited: [3, 1, 2],
	});
	assert.deepEqual(renumberAnswer('Only this [2].', 4), { text: 'Only this [1].', cited: [2] });
	assert.deepEqual(renumberAnswer('Made up [7] and real [1].', 2), { text: 'Made up and real [1].', cited: [1] });
	assert.deepEqual(renumberAnswer('Twice [2][2] then [2, 2].', 2), { text: 'Twice [1] then [1].', cited: [2] });
	assert.deepEqual(renumberAnswer('I do not know.', 3), { text: 'I do not know.', cited: [] });
	assert.deepEqual(
		renumberAnswer('In 2024 [2024] the list[0] grew [1].', 1),
		{ text: 'In 2024 [2024] the list[0] grew [1].', cited: [1] },
		'brackets that are not markers stay',
	);
});

test('sourceLabel / sourceLine: title → file name → URL → document N; the URL beside a title or a file name', () => {
	assert.equal(sourceLabel({ document_id: 4, title: 'Retrieval notes', url: 'http://x/a' }), 'Retrieval notes');
	assert.equal(sourceLabel({ document_id: 4, title: ' ', file_name: 'notes.pdf' }), 'notes.pdf');
	assert.equal(sourceLabel({ document_id: 4, title: null, file_name: null, url: 'http://x/p.pdf' }), 'http://x/p.pdf');
	assert.equal(sourceLabel({ document_id: 4 }), 'document 4');
	assert.equal(
		sourceLine(1, { document_id: 4, title: 'Retrieval notes', url: 'http://x/a' }),
		'[1] Retrieval notes — http://x/a',
	);
	assert.equal(sourceLine(2, { document_id: 5, url: 'http://x/p.pdf' }), '[2] http://x/p.pdf');
	assert.equal(sourceLine(3, { document_id: 6, file_name: 'notes.pdf' }), '[3] notes.pdf');
});

test('sourcesOf: chunk citations grouped per document by source_ref.source; rows without it count by rank', () => {
	const rows = [
		{ rank: 1, chunk_id: 11, source_ref: { source: 1, document_id: 7, title: 'A' } },
		{ rank: 2, chunk_id: 12, source_ref: { source: 1, document_id: 7, title: 'A' } },
		{ rank: 3, chunk_id: 20, source_ref: { source: 2, document_id: 8, title: null } },
	];
	assert.deepEqual(
		sourcesOf(rows).map((s) => [s.n, s.ref.document_id, s.chunk_ids]),
		[
			[1, 7, [11, 12]],
			[2, 8, [20]],
		],
	);
	const old = [
		{ rank: 1, chunk_id: 5, source_ref: { document_id: 3 } },
		{ rank: 2, chunk_id: 6, source_ref: { document_id: 3 } },
	];
	assert.deepEqual(
		sourcesOf(old).map((s) => s.n),
		[1, 2],
	);
});

test('the extractive stand-in quotes and cites [n] only the sources that hold the question’s words', () => {
	const prompt = [
		'Sources:',
		'[1] Retrieval notes http://x/article\nParagraph 1 explains overlap and recall in retrieval.',
		'[2] notes.pdf\nMeeting notes on vector indexes',
		'[3] paper\nVector search needs an index. Unrelated.',
		'Question: What do the meeting notes say about vector indexes?',
	].join('\n\n');
	const { text } = extractiveAnswer({ messages: [{ role: 'user', content: prompt }] });
	assert.equal(text, 'The shared documents say: "Meeting notes on vector indexes" [2]');
	const none = extractiveAnswer({ prompt: 'Sources:\n[1] a\nabc def\n\nQuestion: what is xyz?' });
	assert.equal(none.text, 'I do not know: the sources do not say.');
	assert.doesNotMatch(none.text, /\[\d+\]/);
});

test('the extractive stand-in reads a multi-line source to its end, not only its first line', () => {
	const prompt = [
		'Sources:',
		'[1] Refund policy\nOur refund policy.\nWindows differ by plan.\nCustomers may ask for a refund within 30 days of purchase.',
		'[2] Pricing\nPricing plans\nThe team plan costs 12 euros.\nThe business plan costs 30 euros.',
		'Question: Within how many days may customers ask for a refund?',
	].join('\n\n');
	// the sentence that answers sits on a later line of each source than its first
	assert.deepEqual(
		sourcesOfPrompt(prompt).map((x) => x.text.split('\n').length),
		[3, 3],
	);
	assert.equal(
		extractiveAnswer({ messages: [{ role: 'user', content: prompt }] }).text,
		'The shared documents say: "Customers may ask for a refund within 30 days of purchase." [1]',
	);
});

test('answerPrompt: one numbered source per document with its passages; the stand-in reads it back and cites the right number', () => {
	const chunk = (document_id: number, text: string, extra: Record<string, unknown> = {}) => ({
		document_id,
		text,
		score: 0.5,
		...extra,
	});
	const groups = groupByDocument([
		chunk(8, 'Paragraph 1 explains overlap and recall in retrieval.', { title: 'Retrieval notes', url: 'http://x/a' }),
		chunk(9, 'Meeting notes on vector indexes', { file_name: 'notes.pdf' }),
		chunk(8, 'Paragraph 2 explains overlap.', { title: 'Retrieval notes', url: 'http://x/a' }),
	]);
	const prompt = answerPrompt(groups, 'What do the meeting notes say about vector indexes?');
	assert.equal(
		prompt,
		'Sources:\n[1] Retrieval notes http://x/a\nParagraph 1 explains overlap and recall in retrieval.\n…\nParagraph 2 explains overlap.\n\n[2] notes.pdf\nMeeting notes on vector indexes\n\nQuestion: What do the meeting notes say about vector indexes?',
	);
	assert.deepEqual(
		sourcesOfPrompt(prompt).map((x) => x.n),
		[1, 2],
	);
	const answer = extractiveAnswer({ messages: [{ role: 'user', content: prompt }] }).text;
	assert.deepEqual(renumberAnswer(answer, groups.length), {
		text: 'The shared documents say: "Meeting notes on vector indexes" [1]',
		cited: [2],
	});
});
