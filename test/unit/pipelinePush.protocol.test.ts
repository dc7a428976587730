/**
 * The Pipeline Push message parser (nodes/PipelinePush/transport/protocol.ts): the two client messages
 * are accepted; hostile frames (non-JSON, huge, deeply nested, NUL / lone surrogates, non-UUID or numeric
 * ids, unknown fields, binary) are refused with a message naming the field, never a throw.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from '@jest/globals';
import fc from 'fast-check';
import {
	DEFAULT_LIMITS,
	jsonDepth,
	LOG_SAFE_MAX,
	logSafe,
	MAX_JSON_DEPTH,
	parseClientMessage,
	parseQueryString,
	type Parsed,
} from '../../nodes/PipelinePush/transport/protocol';
import { hostileId, hostileString, propertyParams } from '../helpers/property';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const parse = (value: unknown) => parseClientMessage(JSON.stringify(value));
function refusal(parsed: Parsed) {
	assert.equal(parsed.ok, false, JSON.stringify(parsed));
	return (parsed as Extract<Parsed, { ok: false }>).refusal;
}

test('accepts auth, subscribe, subscribe with inline auth; ids lower-cased and de-duplicated', () => {
	const id = randomUUID();
	assert.deepEqual(parse({ type: 'auth', user_id: 'alice', token: 't' }), {
		ok: true,
		message: { type: 'auth', user_id: 'alice', token: 't' },
	});
	assert.deepEqual(parse({ type: 'subscribe', request_ids: [id, id.toUpperCase()] }), {
		ok: true,
		message: { type: 'subscribe', request_ids: [id] },
	});
	const inline = parse({ type: 'subscribe', request_ids: [id], user_id: 'bob', token: 'x' });
	assert.equal(inline.ok, true);
});

test('refusals name the field: non-JSON, array, numeric id, non-UUID, unknown type/field, half auth, NUL, too big, too deep, binary', () => {
	const id = randomUUID();
	const cases: [string | Buffer, RegExp, boolean?][] = [
		['not json', /message: not valid JSON/],
		['[1,2]', /must be a JSON object/],
		['null', /must be a JSON object/],
		[JSON.stringify({ type: 'subscribe', request_ids: [42] }), /^request_ids\.0: /],
		[JSON.stringify({ type: 'subscribe', request_ids: ['not-a-uuid'] }), /^request_ids\.0: must be a UUID/],
		[JSON.stringify({ type: 'subscribe', request_ids: [] }), /^request_ids: /],
		[JSON.stringify({ type: 'subscribe', request_ids: id }), /^request_ids: /],
		[JSON.stringify({ type: 'hello' }), /^type: must be "auth" or "subscribe"/],
		[JSON.stringify({ type: 'auth', user_id: 'a', token: 't', extra: 1 }), /^message: 1 unknown field\(s\)/],
		[JSON.stringify({ type: 'subscribe', request_ids: [id], user_id: 'a' }), /^token: user_id and token come together/],
		[JSON.stringify({ type: 'auth', user_id: 'a\u0000b', token: 't' }), /^user_id: .*control/],
		[JSON.stringify({ type: 'auth', user_id: 'a\ud800', token: 't' }), /^user_id: .*lone surrogates/],
		[JSON.stringify({ type: 'auth', user_id: 7, token: 't' }), /^user_id: /],
		['{"type":"auth","user_id":"' + 'x'.repeat(20_000) + '"}', /MESSAGE|at most 16384 bytes/],
		['['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1), /nested deeper than 8/],
		['{"a":'.repeat(2000) + '1' + '}'.repeat(2000), /nested deeper than 8/],
	];
	for (const [frame, pattern] of cases) {
		const r = refusal(parseClientMessage(frame));
		assert.equal(r.type, 'error');
		assert.match(r.message, pattern, `${String(frame).slice(0, 60)} → ${r.message}`);
	}
	assert.equal(refusal(parseClientMessage('x'.repeat(20_000))).code, 'MESSAGE_TOO_LARGE');
	// 1 MiB of nesting under a 1 MiB limit: refused by the depth scan before JSON.parse
	const deep = '['.repeat(500_000) + ']'.repeat(500_000);
	assert.match(
		refusal(parseClientMessage(deep, false, { ...DEFAULT_LIMITS, maxMessageBytes: 1 << 20 })).message,
		/deeper/,
	);
	assert.match(refusal(parseClientMessage(Buffer.from('{}'), true)).message, /not binary/);
	const many = Array.from({ length: DEFAULT_LIMITS.maxIdsPerMessage + 1 }, () => randomUUID());
	assert.equal(refusal(parse({ type: 'subscribe', request_ids: many })).code, 'TOO_MANY_SUBSCRIPTIONS');
});

test('query string: user_id, token and request_id (comma-separated or repeated); nothing → null', () => {
	const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
	assert.equal(parseQueryString(''), null);
	assert.deepEqual(parseQueryString(`user_id=al%20ice&token=t&request_id=${a},${b}&request_id=${c}`), {
		ok: true,
		message: { type: 'subscribe', request_ids: [a, b, c], user_id: 'al ice', token: 't' },
	});
	assert.deepEqual(parseQueryString('user_id=u&token=t'), {
		ok: true,
		message: { type: 'auth', user_id: 'u', token: 't' },
	});
	assert.match(refusal(parseQueryString('user_id=u')!).message, /^token: /);
	assert.match(refusal(parseQueryString('request_id=12')!).message, /^request_ids\.0: must be a UUID/);
});

test('jsonDepth ignores brackets inside strings (escaped quotes included)', () => {
	assert.equal(jsonDepth('{"a":"[[[[[[[[[[\\"{{{{"}'), 1);
	assert.equal(jsonDepth('[[{}]]'), 3);
});

/** Arbitrary JSON-ish values, hostile ids and strings mixed into message-shaped objects. */
const messageLike = fc.record(
	{
		type: fc.oneof(fc.constantFrom('auth', 'subscribe', 'AUTH', ''), hostileString(8), fc.integer()),
		user_id: fc.oneof(hostileString(40), fc.integer(), fc.constant(null)),
		token: fc.oneof(hostileString(60), fc.integer()),
		request_ids: fc.oneof(fc.array(fc.oneof(hostileId(), fc.uuid()), { maxLength: 5 }), hostileId()),
		extra: fc.anything({ maxDepth: 3 }),
	},
	{ requiredKeys: [] },
);

test('property: any frame gives an acceptance or a refusal, never a throw; accepted messages are well-formed', () => {
	const frame = fc.oneof(
		messageLike.map((m) => {
			try {
				return JSON.stringify(m, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
			} catch {
				return '{}';
			}
		}),
		hostileString(200),
		fc.json({ maxDepth: 12 }),
		fc.uint8Array({ maxLength: 200 }).map((u) => Buffer.from(u)),
	);
	fc.assert(
		fc.property(frame, fc.boolean(), (data, isBinary) => {
			const parsed = parseClientMessage(data, isBinary);
			if (!parsed.ok) {
				assert.equal(parsed.refusal.type, 'error');
				assert.ok(parsed.refusal.message.length > 0 && parsed.refusal.message.length < 300);
				return;
			}
			assert.equal(isBinary, false);
			const m = parsed.message;
			assert.ok(m.type === 'auth' || m.type === 'subscribe');
			if (m.type === 'subscribe') {
				assert.ok(m.request_ids.length >= 1 && m.request_ids.every((id) => UUID_RE.test(id)));
				assert.equal(new Set(m.request_ids).size, m.request_ids.length);
			}
			if (m.user_id !== undefined) {
				assert.ok(
					Buffer.from(m.user_id, 'utf8').toString('utf8') === m.user_id &&
						!m.user_id.includes('\u0000') &&
						typeof m.token === 'string',
				);
			}
		}),
		propertyParams('push message parser'),
	);
});

test('property: every well-formed message round-trips through JSON unchanged (ids lower-cased)', () => {
	const user = fc
		.string({ minLength: 1, maxLength: 40 })
		.filter((s) => s === s.trim() && !/[\u0000-\u001f\u007f]/.test(s));
	fc.assert(
		fc.property(
			fc.uniqueArray(fc.uuid(), { minLength: 1, maxLength: 100 }),
			user,
			fc.string({ minLength: 1, maxLength: 64 }),
			(ids, u, t) => {
				const parsed = parse({ type: 'subscribe', request_ids: ids, user_id: u, token: t });
				assert.deepEqual(parsed, {
					ok: true,
					message: {
						type: 'subscribe',
						request_ids: [...new Set(ids.map((i) => i.toLowerCase()))],
						user_id: u,
						token: t,
					},
				});
			},
		),
		propertyParams('push message round trip', { numRuns: 2000 }),
	);
});

test('F6: unknown field names (client text) are never repeated in a refusal', () => {
	const key = 'x\n2026-11-24T06:00:00Z [error] FORGED ' + 'B'.repeat(5000);
	const r = refusal(parse({ type: 'auth', user_id: 'mallory', token: 'abc', [key]: 1 }));
	assert.equal(r.code, 'INVALID_MESSAGE');
	const UNKNOWN_FIELD_REFUSAL = 'message: 1 unknown field(s); the fields are type, user_id, token, request_ids';
	assert.equal(r.message, UNKNOWN_FIELD_REFUSAL);
	fc.assert(
		fc.property(hostileString(200), (name) => {
			fc.pre(!['type', 'user_id', 'token', 'request_ids'].includes(name));
			const m = refusal(parse({ type: 'subscribe', request_ids: [randomUUID()], [name]: 1 })).message;
			// the fixed refusal names only our own fields; a short name may be a piece of it by chance (" re")
			assert.ok(m === UNKNOWN_FIELD_REFUSAL || !m.includes(name), m);
			assert.ok(m.length < 120);
		}),
		propertyParams('pipelinePush unknown field names'),
	);
});

test('F6: logSafe gives one bounded line without line breaks, controls or bidi overrides, for any string', () => {
	assert.equal(logSafe('a\nb'), '"a\\nb"');
	assert.equal(logSafe('\u2028\u202e\u0085'), '"\\u2028\\u202e\\u0085"');
	assert.equal(logSafe('x'.repeat(500)), JSON.stringify(`${'x'.repeat(LOG_SAFE_MAX)}…`));
	fc.assert(
		fc.property(fc.oneof(hostileString(300), fc.string({ unit: 'binary', maxLength: 300 })), (value) => {
			const out = logSafe(value);
			// eslint-disable-next-line no-control-regex
			assert.doesNotMatch(out, /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
			assert.ok(out.length <= 6 * LOG_SAFE_MAX + 3, String(out.length));
			// nothing is lost but the cut tail: the line decodes (as JSON) to the value as shown
			assert.equal(JSON.parse(out), value.length > LOG_SAFE_MAX ? `${value.slice(0, LOG_SAFE_MAX)}…` : value);
		}),
		propertyParams('pipelinePush logSafe'),
	);
});
