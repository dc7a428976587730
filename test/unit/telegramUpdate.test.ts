import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import { TelegramUpdate, updateKeys } from '../../nodes/shared/contracts/telegramUpdate';
import {
	channelPost,
	editedMessage,
	myChatMember,
	photoWithCaption,
	textWithUrls,
	unknownType,
} from '../helpers/updates';

test('message-like updates give chat, message and sender keys', () => {
	const update = textWithUrls(10);
	const keys = updateKeys(TelegramUpdate.parse(update));
	assert.deepEqual(keys, {
		update_id: 10,
		update_type: 'message',
		chat_id: update.message.chat.id,
		message_id: update.message.message_id,
		from_id: update.message.from.id,
	});
	assert.equal(updateKeys(TelegramUpdate.parse(editedMessage(11))).update_type, 'edited_message');
	assert.equal(updateKeys(TelegramUpdate.parse(photoWithCaption(12))).chat_id, photoWithCaption(12).message.chat.id);
});

test('channel posts key on the sender chat; member updates on chat and from', () => {
	const post = channelPost(13);
	assert.equal(updateKeys(TelegramUpdate.parse(post)).from_id, post.channel_post.sender_chat.id);
	const member = myChatMember(14);
	const keys = updateKeys(TelegramUpdate.parse(member));
	assert.equal(keys.chat_id, member.my_chat_member.chat.id);
	assert.equal(keys.message_id, null);
});

test('unknown update types are accepted and keep every field', () => {
	const update = unknownType(15);
	const parsed = TelegramUpdate.parse(update);
	assert.deepEqual(parsed, update);
	assert.deepEqual(updateKeys(parsed), {
		update_id: 15,
		update_type: 'purchased_paid_media',
		chat_id: null,
		message_id: null,
		from_id: 111222333,
	});
});

test('malformed updates are rejected with the failing field named', () => {
	const cases: Array<[unknown, RegExp]> = [
		[{ message: { message_id: 1, chat: { id: 1 } } }, /update_id/],
		[{ update_id: '7', message: {} }, /update_id/],
		[{ update_id: 7 }, /exactly one update field/],
		[{ update_id: 7, message: textWithUrls().message, edited_message: textWithUrls().message }, /found 2/],
		[{ update_id: 7, message: { message_id: 1 } }, /message\.chat/],
		[{ update_id: 7, callback_query: 'x' }, /callback_query/],
		['not an object', /object/i],
	];
	for (const [input, pattern] of cases) {
		const result = TelegramUpdate.safeParse(input);
		assert.equal(result.success, false, JSON.stringify(input));
		const text = result.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
		assert.match(text, pattern, JSON.stringify(input));
	}
});

test('the update is validated as received: parse returns the same object, a __proto__ key is seen and kept', () => {
	const alone = JSON.parse('{"update_id":7,"__proto__":{"chat":{"id":5}}}');
	const parsed = TelegramUpdate.parse(alone);
	assert.equal(parsed, alone, 'no copy');
	assert.deepEqual(Object.keys(parsed), ['update_id', '__proto__']);
	assert.deepEqual(updateKeys(parsed), {
		update_id: 7,
		update_type: '__proto__',
		chat_id: 5,
		message_id: null,
		from_id: null,
	});
	const beside = JSON.parse(`{"update_id":7,"__proto__":{"a":1},"message":${JSON.stringify(textWithUrls().message)}}`);
	const result = TelegramUpdate.safeParse(beside);
	assert.equal(result.success, false, 'two update fields, as received');
	assert.match(result.error!.issues[0].message, /found 2 \(__proto__, message\)/);
});
