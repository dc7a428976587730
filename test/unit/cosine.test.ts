/**
 * The arithmetic of the exact vector route (nodes/KnowledgeBot/actions/cosine.ts): float32 bytes round-trip
 * at any byte offset, cosine as defined (computed here from the definition), and TopK = the first k of a full
 * sort by (score desc, id asc, NaN last) — property-based, ids compared as the exact int8 they are.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { cosineScorer, float32Bytes, TopK, type Scored } from '../../nodes/KnowledgeBot/actions/cosine';
import { propertyParams } from '../helpers/property';

const definition = (a: number[], b: number[]) => {
	const dot = a.reduce((s, x, i) => s + x * b[i], 0);
	return dot / Math.sqrt(a.reduce((s, x) => s + x * x, 0) * b.reduce((s, x) => s + x * x, 0));
};

test('float32Bytes: little-endian float32, refuses what float32 cannot hold', () => {
	assert.deepEqual([...float32Bytes([1, -2])], [0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0]);
	assert.throws(() => float32Bytes([0, 1e39]), RangeError);
	assert.throws(() => float32Bytes([Number.NaN]), RangeError);
});

test('cosineScorer: the cosine of the float32 values, at any byte offset; NaN for a zero vector or a wrong length', () => {
	const finite = fc.float({ min: -1e3, max: 1e3, noNaN: true, noDefaultInfinity: true }).map(Math.fround);
	fc.assert(
		fc.property(
			fc
				.integer({ min: 1, max: 40 })
				.chain((n) =>
					fc.tuple(
						fc.array(finite, { minLength: n, maxLength: n }),
						fc.array(finite, { minLength: n, maxLength: n }),
						fc.integer({ min: 0, max: 7 }),
					),
				),
			([q, v, offset]) => {
				const stored = float32Bytes(v);
				const shifted = Buffer.alloc(stored.length + offset);
				stored.copy(shifted, offset);
				const got = cosineScorer(q)(shifted.subarray(offset));
				const want = definition(q, v);
				if (Number.isNaN(want)) return Number.isNaN(got);
				return Math.abs(got - Math.max(-1, Math.min(1, want))) < 1e-9;
			},
		),
		propertyParams('cosineScorer'),
	);
	assert.ok(Number.isNaN(cosineScorer([1, 2])(float32Bytes([1, 2, 3]))));
	assert.ok(Number.isNaN(cosineScorer([1, 2])(float32Bytes([0, 0]))));
	assert.equal(cosineScorer([1, 0])(float32Bytes([2, 0])), 1);
	assert.equal(cosineScorer([1, 0])(float32Bytes([-3, 0])), -1);
});

test('TopK: the first k of the full order (score desc, then id as an int8 asc, NaN last)', () => {
	const item = fc.record({
		id: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }).map(String),
		score: fc.oneof(fc.constantFrom(0.5, -0.5, 1, Number.NaN), fc.double({ min: -1, max: 1, noNaN: true })),
	});
	fc.assert(
		fc.property(
			fc.uniqueArray(item, { selector: (i) => i.id, maxLength: 60 }),
			fc.integer({ min: 1, max: 20 }),
			(items, k) => {
				const top = new TopK(k);
				for (const i of items) top.offer(i);
				const order = (a: Scored, b: Scored) =>
					(Number.isNaN(a.score) ? 1 : 0) - (Number.isNaN(b.score) ? 1 : 0) ||
					(Number.isNaN(a.score) ? 0 : b.score - a.score) ||
					(BigInt(a.id) < BigInt(b.id) ? -1 : 1);
				assert.deepEqual(top.result(), [...items].sort(order).slice(0, k));
			},
		),
		propertyParams('TopK'),
	);
});
