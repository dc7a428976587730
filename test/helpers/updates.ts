/**
 * Realistic Telegram updates (shapes as the Bot API documents them) for tests, the demo and the bench.
 */
let nextUpdateId = 900_000_000 + Math.floor(Math.random() * 1_000_000);

export function newUpdateId(): number {
	return nextUpdateId++;
}

const chatGroup = { id: -1001234567890, title: 'Research group', type: 'supergroup' };
const alice = { id: 111222333, is_bot: false, first_name: 'Alice', username: 'alice', language_code: 'en' };

/** A text message with two url entities (offsets in UTF-16 units; the emoji counts as two). */
export function textWithUrls(updateId = newUpdateId()) {
	const text = '👋 see https://example.org/a?utm_source=x and https://n8n.io';
	return {
		update_id: updateId,
		message: {
			message_id: 4100 + (updateId % 1000),
			from: alice,
			chat: chatGroup,
			date: 1_763_800_000,
			text,
			entities: [
				{ type: 'url', offset: text.indexOf('https://example.org'), length: 'https://example.org/a?utm_source=x'.length + 1 },
				{ type: 'url', offset: text.indexOf('https://n8n.io') + 1, length: 'https://n8n.io'.length },
			],
		},
	};
}

export function photoWithCaption(updateId = newUpdateId()) {
	return {
		update_id: updateId,
		message: {
			message_id: 4200 + (updateId % 1000),
			from: alice,
			chat: { id: alice.id, first_name: 'Alice', username: 'alice', type: 'private' },
			date: 1_763_800_100,
			photo: [
				{ file_id: 'AgACAgIAAxkBAAIB1', file_unique_id: 'AQADs1', file_size: 1200, width: 90, height: 60 },
				{ file_id: 'AgACAgIAAxkBAAIB2', file_unique_id: 'AQADs2', file_size: 51200, width: 1280, height: 853 },
			],
			caption: 'paper: https://arxiv.org/abs/1706.03762',
			caption_entities: [{ type: 'url', offset: 7, length: 32 }],
		},
	};
}

export function editedMessage(updateId = newUpdateId()) {
	return {
		update_id: updateId,
		edited_message: {
			message_id: 4101,
			from: alice,
			chat: chatGroup,
			date: 1_763_800_000,
			edit_date: 1_763_800_500,
			text: 'see the docs',
			entities: [{ type: 'text_link', offset: 4, length: 8, url: 'https://docs.n8n.io/' }],
		},
	};
}

export function channelPost(updateId = newUpdateId()) {
	return {
		update_id: updateId,
		channel_post: {
			message_id: 77,
			sender_chat: { id: -1009876543210, title: 'News', type: 'channel' },
			chat: { id: -1009876543210, title: 'News', type: 'channel' },
			date: 1_763_800_200,
			text: 'Release notes are out',
		},
	};
}

export function myChatMember(updateId = newUpdateId()) {
	return {
		update_id: updateId,
		my_chat_member: {
			chat: chatGroup,
			from: alice,
			date: 1_763_800_300,
			old_chat_member: { user: { id: 555, is_bot: true, first_name: 'KB bot' }, status: 'left' },
			new_chat_member: { user: { id: 555, is_bot: true, first_name: 'KB bot' }, status: 'member' },
		},
	};
}

/** An update type this code does not know (stored raw, not rejected). */
export function unknownType(updateId = newUpdateId()) {
	return { update_id: updateId, purchased_paid_media: { from: alice, paid_media_payload: 'x' } };
}

export const realisticUpdates = [textWithUrls, photoWithCaption, editedMessage, channelPost, myChatMember];
