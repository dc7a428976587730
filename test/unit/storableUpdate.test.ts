/** storableUpdate (Update → Process): NUL and lone surrogates become U+FFFD in strings and keys, nothing else changes. */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import { storableUpdate } from '../../nodes/KnowledgeBot/actions/update/storable';

test('an update without NUL or lone surrogates is returned as is (same object), emoji pairs kept', () => {
	const update = {
		update_id: 1,
		message: { text: 'hi 👋 \\u0000 as text', entities: [{ offset: 3, length: 2 }], flag: true, none: null },
	};
	const out = storableUpdate(update);
	assert.equal(out.update, update);
	assert.equal(out.replaced, false);
});

test('NUL and lone surrogates in strings and keys become U+FFFD, one code unit for one (entity offsets stay right), the input untouched', () => {
	const update = {
		update_id: 2,
		message: {
			text: 'a\u0000b\ud800c\udc00d 👋',
			entities: [{ type: 'url', offset: 1 }],
			'k\u0000': ['x\ud83d', 7, false, null],
		},
	};
	const out = storableUpdate(update);
	assert.equal(out.replaced, true);
	assert.deepEqual(out.update, {
		update_id: 2,
		message: {
			text: 'a\ufffdb\ufffdc\ufffdd 👋',
			entities: [{ type: 'url', offset: 1 }],
			'k\ufffd': ['x\ufffd', 7, false, null],
		},
	});
	assert.equal(out.update.message.text.length, update.message.text.length);
	assert.equal(update.message.text, 'a\u0000b\ud800c\udc00d 👋', 'the input is not changed');
});

test('a __proto__ key stays an own data property; 100,000 levels of nesting do not overflow the stack', () => {
	const hostile = JSON.parse('{"__proto__": {"polluted": "\\u0000"}}') as Record<string, unknown>;
	const out = storableUpdate(hostile).update as Record<string, unknown>;
	assert.deepEqual(Object.getOwnPropertyDescriptor(out, '__proto__')?.value, { polluted: '\ufffd' });
	assert.equal(({} as Record<string, unknown>).polluted, undefined);
	let deep: unknown = 'end\u0000';
	for (let i = 0; i < 100_000; i++) deep = [deep];
	let cursor = storableUpdate({ deep }).update.deep;
	for (let i = 0; i < 100_000; i++) cursor = (cursor as unknown[])[0];
	assert.equal(cursor, 'end\ufffd');
});
