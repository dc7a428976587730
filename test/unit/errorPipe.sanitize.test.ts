/**
 * nodes/shared/sanitize.ts, the boundary the Error Pipe cleans its input at (issue 10 §1): storable strings
 * and keys, the caps (depth, string length, bytes) with their flags, and no stack or heap blow-up.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import fc from 'fast-check';
import {
	MAX_DEPTH,
	MAX_DETAILS_BYTES,
	MAX_STRING_LENGTH,
	replaceUnstorable,
	sanitizeJson,
	Sanitizer,
} from '../../nodes/shared/sanitize';
import { toJsonSafe } from '../../nodes/shared/json';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { hostileString, propertyParams } from '../helpers/property';

/** NUL or a lone surrogate left in a string. */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function depthOf(root: unknown): number {
	let depth = 0;
	const stack: Array<[unknown, number]> = [[root, 0]];
	while (stack.length) {
		const [value, level] = stack.pop()!;
		if (value === null || typeof value !== 'object') continue;
		depth = Math.max(depth, level + 1);
		for (const entry of Object.values(value)) stack.push([entry, level + 1]);
	}
	return depth;
}

/** Every string and key in `root`, iteratively. */
function stringsOf(root: unknown): string[] {
	const out: string[] = [];
	const stack: unknown[] = [root];
	while (stack.length) {
		const value = stack.pop();
		if (typeof value === 'string') out.push(value);
		if (value === null || typeof value !== 'object') continue;
		for (const [k, entry] of Object.entries(value)) {
			out.push(k);
			stack.push(entry);
		}
	}
	return out;
}

test('the caps are exported with their units', () => {
	assert.equal(MAX_DEPTH, 64);
	assert.equal(MAX_DETAILS_BYTES, 256 * 1024);
	assert.equal(MAX_STRING_LENGTH, 16 * 1024);
});

test('NUL and lone surrogates become U+FFFD, valid pairs stay, flags say so', () => {
	assert.deepEqual(replaceUnstorable('a\u0000b\ud800c\udfffd😀'), { text: 'a\ufffdb\ufffdc\ufffdd😀', replaced: true });
	assert.deepEqual(replaceUnstorable('plain é 😀'), { text: 'plain é 😀', replaced: false });
	const out = sanitizeJson({ ['k\u0000']: ['\ud83d', 'ok'], clean: 'x' });
	assert.deepEqual(out, { value: { 'k\ufffd': ['\ufffd', 'ok'], clean: 'x' }, sanitized: true, truncated: false });
	assert.deepEqual(sanitizeJson({ a: 'x', b: [1, true, null] }), {
		value: { a: 'x', b: [1, true, null] },
		sanitized: false,
		truncated: false,
	});
});

test('keys that collide once cleaned are all kept', () => {
	const { value } = sanitizeJson({ 'a\u0000': 1, 'a\ufffd': 2, 'a\ud800': 3 });
	assert.deepEqual(Object.values(value as object).sort(), [1, 2, 3]);
});

/** n distinct keys of two lone surrogates (a low one, then a high one): every one cleans to "\ufffd\ufffd". */
function collidingKeys(n: number): Record<string, number> {
	const out: Record<string, number> = {};
	for (let i = 0; i < n; i++) out[String.fromCharCode(0xdc00 + (i % 1024), 0xd800 + (i >> 10))] = i;
	return out;
}

/**
 * Runs `fn` counting the Sanitizer's `text()` calls (every key and string is cleaned through it); throws as
 * soon as more than `limit` are made, so quadratic work fails fast instead of running for minutes.
 */
function countingTextCalls<T>(limit: number, fn: () => T): { result: T; calls: number } {
	const original = Sanitizer.prototype.text;
	let calls = 0;
	Sanitizer.prototype.text = function (this: Sanitizer, ...args: Parameters<Sanitizer['text']>) {
		if (++calls > limit) throw new Error(`more than ${limit} text() calls`);
		return original.apply(this, args);
	};
	try {
		return { result: fn(), calls };
	} finally {
		Sanitizer.prototype.text = original;
	}
}

test('50,000 keys that clean to the same name: each key is cleaned once (linear work), every kept key distinct and holding its own value', () => {
	const input = collidingKeys(50_000);
	assert.equal(Object.keys(input).length, 50_000);
	const { result, calls } = countingTextCalls(50_000 + 100, () =>
		new Sanitizer({ budgetBytes: MAX_DETAILS_BYTES }).object(input),
	);
	const kept = Object.entries(result);
	assert.ok(kept.length > 1_000, `${kept.length} keys kept`);
	assert.ok(calls <= kept.length + 100, `${calls} text() calls for ${kept.length} kept keys`);
	// the first kept keys in order, each with its own value: nothing was overwritten by a collision
	assert.deepEqual(
		kept.map(([, v]) => v),
		Array.from({ length: kept.length }, (_, i) => i),
	);
	assert.deepEqual(
		kept.slice(0, 3).map(([k]) => k),
		['\ufffd\ufffd', '\ufffd\ufffd~2', '\ufffd\ufffd~3'],
	);
	assert.ok(Buffer.byteLength(JSON.stringify(result)) <= MAX_DETAILS_BYTES);
});

test('a key already named like a resolved duplicate ("a\ufffd~2") is not overwritten either', () => {
	const { value } = sanitizeJson({ 'a\u0000': 1, 'a\ufffd~2': 2, 'a\ud800': 3, 'a\udc00': 4, 'a\ufffd~3': 5 });
	assert.deepEqual(Object.values(value as object).sort(), [1, 2, 3, 4, 5]);
});

test('the Error Pipe with a ctx of 50,000 colliding keys: linear work, a normal envelope (no normalize_failure)', () => {
	const { result, calls } = countingTextCalls(50_000 + 1_000, () =>
		normalizeErrorItem({ ctx: collidingKeys(50_000), message: 'wide ctx' }, { source: 'WF99' }),
	);
	const details = result.envelope.error.details;
	assert.equal(details.normalize_failure, undefined);
	assert.equal(result.envelope.error.message, 'wide ctx');
	assert.equal(details.truncated, true);
	const values = Object.values(details.ctx as object);
	assert.equal(new Set(values).size, values.length, 'every kept key holds its own value');
	assert.ok(calls <= values.length + 1_000, `${calls} text() calls`);
});

test('what JSON cannot carry becomes JSON: NaN/Infinity null, BigInt text, Date ISO, cycles marked, undefined dropped', () => {
	const cyclic: Record<string, unknown> = { n: 1 };
	cyclic.self = cyclic;
	const { value, sanitized } = sanitizeJson({
		a: NaN,
		b: -Infinity,
		c: 10n ** 20n,
		d: new Date(0),
		e: undefined,
		f: () => 1,
		g: [undefined],
		cyclic,
	});
	assert.deepEqual(value, {
		a: null,
		b: null,
		c: '100000000000000000000',
		d: '1970-01-01T00:00:00.000Z',
		g: [null],
		cyclic: { n: 1, self: '[Circular]' },
	});
	assert.equal(sanitized, true);
});

test('__proto__ stays an own data key (no prototype set), in sanitizeJson and toJsonSafe', () => {
	const input = JSON.parse('{"__proto__":{"polluted":1},"x":{"__proto__":[1]}}');
	for (const out of [sanitizeJson(input).value, toJsonSafe(input)] as Array<Record<string, any>>) {
		assert.equal(Object.getPrototypeOf(out), Object.prototype);
		assert.deepEqual(Object.keys(out), ['__proto__', 'x']);
		assert.equal(out.polluted, undefined);
		assert.equal(JSON.stringify(out), '{"__proto__":{"polluted":1},"x":{"__proto__":[1]}}');
	}
});

test('100,000 levels of nesting: no stack overflow, MAX_DEPTH levels kept, truncated', () => {
	for (const asObjects of [false, true]) {
		let deep: unknown = 'bottom';
		for (let i = 0; i < 100_000; i++) deep = asObjects ? { a: deep } : [deep];
		const { value, truncated } = sanitizeJson(deep);
		assert.equal(truncated, true);
		assert.equal(depthOf(value), MAX_DEPTH);
		assert.doesNotThrow(() => JSON.stringify(value));
	}
});

test('a 50 MB string keeps MAX_STRING_LENGTH code units and names its length; a pair is never split', () => {
	const sanitizer = new Sanitizer();
	const text = sanitizer.text('é'.repeat(50 * 1024 * 1024));
	assert.ok(text.startsWith('éé'));
	assert.match(text, /…\[truncated: 52428800 characters\]$/);
	assert.ok(text.length < MAX_STRING_LENGTH + 64);
	assert.equal(sanitizer.truncated, true);
	const split = new Sanitizer().text(`${'a'.repeat(MAX_STRING_LENGTH - 1)}😀tail`);
	assert.ok(!UNSTORABLE.test(split), 'the cut did not leave a lone surrogate');
});

test('the byte budget bounds the copy of wide and long inputs, and the work done', () => {
	const wide = Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`key-${i}`, 'v'.repeat(20)]));
	const long = Array.from({ length: 1_000_000 }, (_, i) => i);
	const started = Date.now();
	for (const input of [wide, long, { a: 'x'.repeat(MAX_STRING_LENGTH), b: 'y'.repeat(MAX_STRING_LENGTH) }]) {
		const budgetBytes = 20_000;
		const { value, truncated } = sanitizeJson(input, { budgetBytes });
		assert.equal(truncated, true);
		assert.ok(Buffer.byteLength(JSON.stringify(value)) <= budgetBytes, 'within the budget');
	}
	assert.ok(Date.now() - started < 2_000, `bounded work (${Date.now() - started} ms)`);
});

test('getters that throw and proxies that refuse their keys do not throw', () => {
	const getter = Object.defineProperty({}, 'boom', {
		enumerable: true,
		get: () => {
			throw new Error('no');
		},
	});
	assert.deepEqual(sanitizeJson({ getter }).value, { getter: { boom: '[unreadable]' } });
	const proxy = new Proxy(
		{},
		{
			ownKeys: () => {
				throw new Error('no keys');
			},
		},
	);
	assert.deepEqual(sanitizeJson({ proxy }).value, { proxy: {} });
});

test('property: any value becomes storable JSON within the caps, without throwing', () => {
	const key = fc.oneof(hostileString(8), fc.constantFrom('__proto__', 'constructor', '\u0000', '\ud800'));
	fc.assert(
		fc.property(
			fc.anything({
				key,
				values: [hostileString(), fc.double(), fc.bigInt(), fc.constant(undefined)],
				withNullPrototype: true,
				withDate: true,
				withTypedArray: true,
				withSparseArray: true,
				maxDepth: 6,
			}),
			(input) => {
				const { value } = sanitizeJson(input, { budgetBytes: 4096, maxDepth: 3 });
				const text = JSON.stringify(value);
				assert.ok(Buffer.byteLength(text) <= 4096);
				assert.deepEqual(
					stringsOf(value).filter((t) => UNSTORABLE.test(t)),
					[],
					'no NUL or lone surrogate left',
				);
				assert.ok(depthOf(value) <= 3);
				assert.deepEqual(JSON.parse(text), value, 'JSON round trip is exact');
			},
		),
		propertyParams('sanitize: storable within the caps'),
	);
});
