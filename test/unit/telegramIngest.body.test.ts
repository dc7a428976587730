/**
 * Telegram Ingest's body classification (issue 10 item 3): which bodies are stored, which quarantined
 * and why, exact ids from the raw text; a property over arbitrary bodies (PROPERTY_RUNS, default 10,000).
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import { TextDecoder } from 'node:util';
import fc from 'fast-check';
import { classifyBody, MAX_DEPTH, REJECTED_REASONS, safeText } from '../../nodes/TelegramIngest/actions/body';
import {
	exactInteger,
	INT8_MAX,
	MAX_TOKEN_KEY_LENGTH,
	numberTokens,
	pathKey,
	stringifyDeep,
	wtf8,
} from '../../nodes/TelegramIngest/actions/exactJson';
import { propertyParams } from '../helpers/property';
import { anyBody } from '../helpers/telegramIngest.bodies';
import { textWithUrls } from '../helpers/updates';

test('exactInteger reads a number token exactly, without rounding', () => {
	const cases: Array<[string, ReturnType<typeof exactInteger>]> = [
		['0', { integer: true, text: '0', int8: true }],
		['-0', { integer: true, text: '0', int8: true }],
		['9007199254740993', { integer: true, text: '9007199254740993', int8: true }],
		['9223372036854775807', { integer: true, text: '9223372036854775807', int8: true }],
		['9223372036854775808', { integer: true, text: '9223372036854775808', int8: false }],
		['-9223372036854775808', { integer: true, text: '-9223372036854775808', int8: true }],
		['-9223372036854775809', { integer: true, text: '-9223372036854775809', int8: false }],
		['1e3', { integer: true, text: '1000', int8: true }],
		['12.5e1', { integer: true, text: '125', int8: true }],
		['1.0', { integer: true, text: '1', int8: true }],
		['100e-2', { integer: true, text: '1', int8: true }],
		['1e300', { integer: true, text: '1e300', int8: false }],
		['1.5', { integer: false }],
		['1e-5', { integer: false }],
		['1.0000000000000000001', { integer: false }],
		['abc', { integer: false }],
	];
	for (const [token, expected] of cases) assert.deepEqual(exactInteger(token), expected, token);
});

test('numberTokens keeps the written tokens by path (last of a repeated key), at any depth', () => {
	const text =
		'{"update_id":9007199254740993,"message":{"chat":{"id":-1e3,"x":"\\"}"},"list":[1,2.50],"message_id":1,"message_id":2},"deep":' +
		'['.repeat(5000) +
		'7' +
		']'.repeat(5000) +
		'}';
	const tokens = numberTokens(text, 4);
	assert.equal(tokens.get(pathKey(['update_id'])), '9007199254740993');
	assert.equal(tokens.get(pathKey(['message', 'chat', 'id'])), '-1e3');
	assert.equal(tokens.get(pathKey(['message', 'list', 1])), '2.50');
	assert.equal(tokens.get(pathKey(['message', 'message_id'])), '2');
	assert.equal(
		[...tokens.keys()].some((key) => key.startsWith('["deep"')),
		false,
		'deeper than maxDepth: not recorded',
	);
});

test('numberTokens stays linear: numbers under a key longer than MAX_TOKEN_KEY_LENGTH are not recorded (no path stringified per token)', () => {
	const long = 'k'.repeat(20_000);
	const text = `{"${long}":[${Array(20_000).fill('1').join(',')}],"update_id":5,"message":{"chat":{"id":7}}}`;
	const tokens = numberTokens(text, 4);
	assert.deepEqual([...tokens.keys()].sort(), [pathKey(['message', 'chat', 'id']), pathKey(['update_id'])]);
	const edge = 'e'.repeat(MAX_TOKEN_KEY_LENGTH - 2);
	assert.equal(
		numberTokens(`{"${edge}":1}`, 4).get(pathKey([edge])),
		'1',
		'a key of exactly the limit (quotes included) is recorded',
	);
});

test('too_large is decided on the byte count first: a large body that is not JSON, not UTF-8 or not an update is too_large (200), update_id not read', () => {
	const size = 2 * 1024 * 1024;
	const bodies = [
		Buffer.alloc(size, 'x'),
		Buffer.alloc(size, 0xff),
		Buffer.from(`{"update_id":5,"junk":"${'y'.repeat(size)}"}`),
	];
	for (const bytes of bodies) {
		const out = classifyBody(bytes, undefined);
		assert.equal(out.kind, 'quarantine');
		if (out.kind !== 'quarantine') continue;
		assert.deepEqual(
			[out.reason, out.status, out.update_id, out.body.bytes.length],
			['too_large', 200, null, bytes.length],
		);
	}
});

test('wtf8 is UTF-8 for well-formed text and keeps a lone surrogate; stringifyDeep matches JSON.stringify at any depth', () => {
	assert.ok(wtf8('héllo 😀').equals(Buffer.from('héllo 😀')));
	assert.deepEqual([...wtf8('a\ud800b')], [0x61, 0xed, 0xa0, 0x80, 0x62]);
	fc.assert(
		fc.property(fc.jsonValue(), (value) => stringifyDeep(value) === JSON.stringify(value)),
		{ numRuns: 500 },
	);
	const deep = JSON.parse(`${'{"a":['.repeat(20_000)}1${']}'.repeat(20_000)}`);
	assert.throws(() => JSON.stringify(deep), RangeError);
	assert.equal(stringifyDeep(deep).length, 20_000 * 8 + 1);
});

test('classifyBody: the reasons, in order, with the HTTP status of each', () => {
	const ok = JSON.stringify(textWithUrls());
	const cases: Array<[Buffer, string, number]> = [
		[Buffer.from([0xc3, 0x28]), 'not_json', 400],
		[Buffer.from('\ufeff' + ok), 'not_json', 400],
		[Buffer.from('"a string"'), 'not_object', 400],
		[Buffer.from('{"update_id":1}'), 'invalid_update', 400],
		[Buffer.from('{"update_id":1.5,"message":{}}'), 'invalid_update', 400],
		[Buffer.from(ok.replace('"text":', `"big":"${'x'.repeat(1024 * 1024)}","text":`)), 'too_large', 200],
		[
			Buffer.from(ok.replace('"text":', `"deep":${'['.repeat(MAX_DEPTH)}1${']'.repeat(MAX_DEPTH)},"text":`)),
			'too_deep',
			200,
		],
		[Buffer.from(ok.replace('"text":', '"\\u0000key":1,"text":')), 'nul_character', 200],
		[Buffer.from(ok.replace('"text":', '"s":"\\udfff","text":')), 'lone_surrogate', 200],
		[Buffer.from(ok.replace(/"update_id":\d+/, '"update_id":9223372036854775808')), 'id_not_int8', 200],
		[Buffer.from(ok.replace(/"update_id":\d+/, '"update_id":1.0000000000000000001')), 'id_not_int8', 200],
	];
	for (const [bytes, reason, status] of cases) {
		const result = classifyBody(bytes, undefined);
		assert.equal(result.kind, 'quarantine', reason);
		if (result.kind !== 'quarantine') continue;
		assert.deepEqual([result.reason, result.status], [reason, status], result.message);
		assert.ok(result.body.bytes.equals(bytes));
		assert.equal(result.body.source, 'raw');
	}
	const edge = classifyBody(
		Buffer.from(ok.replace('"text":', `"deep":${'['.repeat(MAX_DEPTH - 2)}1${']'.repeat(MAX_DEPTH - 2)},"text":`)),
		undefined,
	);
	assert.equal(edge.kind, 'update', `${MAX_DEPTH} levels in all are fine`);
	const exact = classifyBody(Buffer.from(ok.replace(/"update_id":\d+/, '"update_id":9007199254740993')), undefined);
	assert.equal(exact.kind === 'update' && exact.keys.update_id, '9007199254740993');
	const parsed = classifyBody(undefined, JSON.parse(ok.replace(/"update_id":\d+/, '"update_id":9007199254740993')));
	assert.deepEqual(
		parsed.kind === 'quarantine' && [parsed.reason, parsed.body.source],
		['id_not_int8', 'json'],
		'a parsed id beyond 2^53 is not exact',
	);
	assert.equal(safeText('a\u0000b\ud800c'), 'a\ufffdb\ufffdc');
});

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function depthOf(root: unknown): number {
	let max = 0;
	const stack: Array<[unknown, number]> = [[root, 1]];
	while (stack.length) {
		const [value, depth] = stack.pop() as [unknown, number];
		if (value === null || typeof value !== 'object') continue;
		max = Math.max(max, depth);
		for (const entry of Object.values(value)) stack.push([entry, depth + 1]);
	}
	return max;
}

function strings(root: unknown): string[] {
	const out: string[] = [];
	const stack: unknown[] = [root];
	while (stack.length) {
		const value = stack.pop();
		if (typeof value === 'string') out.push(value);
		else if (value !== null && typeof value === 'object') {
			for (const [key, entry] of Object.entries(value)) {
				out.push(key);
				stack.push(entry);
			}
		}
	}
	return out;
}

const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

test('property: any body is classified without throwing, kept byte for byte, and the reason is true', () => {
	fc.assert(
		fc.property(anyBody(), (bytes) => {
			const result = classifyBody(bytes, undefined);
			assert.ok(result.body.bytes.equals(bytes), 'the kept bytes are the body');
			let parsed: unknown;
			let json = true;
			try {
				parsed = JSON.parse(UTF8.decode(bytes));
			} catch {
				json = false;
			}
			if (!json) {
				assert.deepEqual(result.kind === 'quarantine' && [result.reason, result.status], ['not_json', 400]);
				return;
			}
			if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
				assert.deepEqual(result.kind === 'quarantine' && [result.reason, result.status], ['not_object', 400]);
				return;
			}
			if (result.kind === 'update') {
				assert.ok(depthOf(parsed) <= MAX_DEPTH);
				assert.ok(strings(parsed).every((s) => !s.includes('\u0000') && !LONE.test(s)));
				for (const id of [result.keys.update_id, result.keys.chat_id, result.keys.message_id, result.keys.from_id]) {
					if (id === null) continue;
					assert.match(id, /^-?\d+$/);
					assert.ok(BigInt(id) <= INT8_MAX && BigInt(id) >= -INT8_MAX - 1n);
				}
				assert.equal(
					Number(result.keys.update_id),
					(parsed as { update_id: number }).update_id,
					'the exact id rounds to what JSON.parse read',
				);
				return;
			}
			assert.equal(result.status, REJECTED_REASONS.has(result.reason) ? 400 : 200);
			assert.doesNotMatch(result.message, /\u0000/);
			assert.doesNotMatch(result.message, LONE);
			if (result.reason === 'too_deep') assert.ok(depthOf(parsed) > MAX_DEPTH);
			if (result.reason === 'nul_character') assert.ok(strings(parsed).some((s) => s.includes('\u0000')));
			if (result.reason === 'lone_surrogate') assert.ok(strings(parsed).some((s) => LONE.test(s)));
		}),
		propertyParams('telegramIngest classifyBody'),
	);
});

test('classifyBody: a quarantine names where the value is (the path through objects and arrays, a bad key last)', () => {
	const update = (message: Record<string, unknown>) =>
		Buffer.from(
			JSON.stringify({
				update_id: 7,
				message: { message_id: 1, date: 1, chat: { id: 5, type: 'private' }, ...message },
			}),
		);
	const cases: Array<[Buffer, string, string]> = [
		[update({ entities: [{ t: 'ok' }, { t: 'a\u0000b' }] }), 'nul_character', 'message.entities.1.t'],
		[update({ caption: 'x\udc00' }), 'lone_surrogate', 'message.caption'],
		// a key jsonb cannot hold: the path ends with that key, shown storable (U+FFFD)
		[update({ reply: { ['k\u0000']: 1 } }), 'nul_character', 'message.reply.k\ufffd'],
		// the first container beyond MAX_DEPTH: `message.deep` is level 3, so level MAX_DEPTH + 1 is MAX_DEPTH keys down
		[
			Buffer.from(
				`{"update_id":7,"message":{"message_id":1,"date":1,"chat":{"id":5,"type":"private"},"deep":${'['.repeat(MAX_DEPTH)}1${']'.repeat(MAX_DEPTH)}}}`,
			),
			'too_deep',
			`message.deep.0.0.0.0.0.0.…(${MAX_DEPTH} levels)`,
		],
	];
	for (const [bytes, reason, path] of cases) {
		const result = classifyBody(bytes, undefined);
		assert.equal(result.kind, 'quarantine', reason);
		if (result.kind !== 'quarantine') continue;
		assert.deepEqual([result.reason, result.path], [reason, path], result.message);
		assert.ok(result.message.includes(path), result.message);
	}
});
