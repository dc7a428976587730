/**
 * fast-check arbitraries of webhook bodies for Telegram Ingest's properties: raw bytes of every kind —
 * Telegram-shaped updates with hostile ids (written as exact tokens: beyond 2^53, beyond int8, 1e300,
 * fractions), hostile strings (NUL, lone surrogates), deep nesting, `__proto__` keys; arbitrary JSON;
 * truncated JSON; arbitrary bytes.
 */
import fc from 'fast-check';
import { hostileString } from './property';

/** Number tokens as a body may write an id. */
export function idToken(): fc.Arbitrary<string> {
	return fc.oneof(
		{ weight: 4, arbitrary: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }).map(String) },
		{ weight: 2, arbitrary: fc.integer({ min: 1, max: 2 ** 31 - 1 }).map(String) },
		{
			weight: 2,
			arbitrary: fc.constantFrom(
				'9223372036854775807',
				'9223372036854775808',
				'-9223372036854775808',
				'-9223372036854775809',
				'9007199254740993',
				'1e300',
				'1e400',
				'1e1000000',
				'-1',
				'0',
				'1.5',
				'1.0',
				'1e3',
				'12.5e1',
				'1.0000000000000000001',
			),
		},
	);
}

/** A Telegram-shaped update as JSON text, with hostile parts. */
export function updateText(): fc.Arbitrary<string> {
	return fc
		.record({
			updateId: idToken(),
			chatId: idToken(),
			messageId: idToken(),
			fromId: fc.option(idToken(), { nil: undefined }),
			text: hostileString(24),
			key: fc.option(hostileString(8), { nil: undefined }),
			depth: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 70 }), fc.integer({ min: 60, max: 200 })),
			type: fc.constantFrom(
				'message',
				'edited_message',
				'channel_post',
				'callback_query',
				'brand_new_update',
				'__proto__',
			),
			proto: fc.constantFrom('none', 'top', 'nested'),
			extra: fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined }),
			number: fc.option(fc.constantFrom('1e1000000', '1e400', '-0.0', '123456789012345678901234567890'), {
				nil: undefined,
				freq: 6,
			}),
		})
		.map((r) => {
			const parts = [
				`"message_id":${r.messageId}`,
				`"chat":{"id":${r.chatId},"type":"group"}`,
				r.fromId === undefined ? null : `"from":{"id":${r.fromId},"is_bot":false}`,
				`"text":${JSON.stringify(r.text)}`,
				r.key === undefined ? null : `${JSON.stringify(r.key)}:1`,
				r.depth ? `"deep":${'['.repeat(r.depth)}1${']'.repeat(r.depth)}` : null,
				r.proto === 'nested' ? '"__proto__":{"polluted":true}' : null,
				r.extra === undefined ? null : `"extra":${JSON.stringify(r.extra)}`,
				r.number === undefined ? null : `"number":${r.number}`,
			].filter((part) => part !== null);
			const top = r.proto === 'top' ? ',"__proto__":{"polluted":true}' : '';
			return `{"update_id":${r.updateId},"${r.type}":{${parts.join(',')}}${top}}`;
		});
}

/** Any body, as the bytes a webhook receives. */
export function anyBody(): fc.Arbitrary<Buffer> {
	return fc.oneof(
		{ weight: 6, arbitrary: updateText().map((text) => Buffer.from(text)) },
		{
			weight: 1,
			arbitrary: fc
				.tuple(updateText(), fc.nat())
				.map(([text, cut]) => Buffer.from(text.slice(0, cut % (text.length + 1)))),
		},
		{
			weight: 1,
			arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => Buffer.from(JSON.stringify(value) ?? 'null')),
		},
		{ weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)) },
	);
}
