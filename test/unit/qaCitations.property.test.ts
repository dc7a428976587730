/**
 * Property: renumberAnswer (nodes/KnowledgeBot/actions/qa/citations.ts) reads the model's answer — text from
 * outside — mixed from hostile strings (NUL, lone surrogates, control characters, huge numbers in brackets) and
 * citation markers. It never throws; `cited` holds distinct source numbers within 1..sourceCount; every marker
 * left in the text names a new number within 1..cited.length; and the new numbers first appear in order 1, 2, 3…
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { renumberAnswer } from '../../nodes/KnowledgeBot/actions/qa/citations';
import { hostileString, propertyParams } from '../helpers/property';

const marker = fc
	.array(fc.integer({ min: 0, max: 120 }), { minLength: 1, maxLength: 3 })
	.map((ns) => `[${ns.join(', ')}]`);
const answer = fc
	.array(fc.oneof(hostileString(40), marker, fc.constant(' ')), { maxLength: 30 })
	.map((parts) => parts.join(''));

test('renumberAnswer on hostile answers: no throw, cited distinct and in range, markers renumbered in order of first reference', () => {
	fc.assert(
		fc.property(answer, fc.integer({ min: 0, max: 12 }), (text, sourceCount) => {
			const out = renumberAnswer(text, sourceCount);
			assert.equal(new Set(out.cited).size, out.cited.length, 'cited numbers are distinct');
			for (const old of out.cited) assert.ok(Number.isInteger(old) && old >= 1 && old <= sourceCount, `cited ${old}`);
			// markers that renumberAnswer wrote: [k] with k a new number; the first appearance of each is in order
			const seen: number[] = [];
			for (const m of out.text.matchAll(/\[([1-9]\d?)\]/g)) {
				const k = Number(m[1]);
				if (k > out.cited.length) continue; // a bracket of the hostile text that is no marker here
				if (!seen.includes(k)) seen.push(k);
			}
			for (const [i, k] of seen.entries()) assert.ok(k <= i + 1, `first appearances in order: ${seen}`);
		}),
		propertyParams('renumberAnswer'),
	);
});

test('renumberAnswer: a huge answer (1 MB) with thousands of markers is renumbered', () => {
	const text = 'x [2] y [1] '.repeat(90_000);
	const out = renumberAnswer(text, 2);
	assert.deepEqual(out.cited, [2, 1]);
	assert.ok(out.text.startsWith('x [1] y [2]'));
});
