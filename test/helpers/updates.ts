/**
 * Realistic Telegram updates (shapes as the Bot API documents them) for tests, the demo and the bench.
 */
let nextUpdateId = 900_000_000 + Math.floor(Math.random() * 1_000_000);

export function newUpdateId(): number {
	return nextUpdateId++;
}

const chatGroup = { id: -1001234567890, title: 'Research group', type: 'supergroup' };
const alice = { id: 111222333, is_bot: false, first_name: 'Alice', username: 'alice', language_code: 'en' };

/** A text message with two url entities (offsets in UTF-16 units, as String#indexOf counts: the emoji is two). */
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
				{
					type: 'url',
					offset: text.indexOf('https://example.org'),
					length: 'https://example.org/a?utm_source=x'.length,
				},
				{ type: 'url', offset: text.indexOf('https://n8n.io'), length: 'https://n8n.io'.length },
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

/** A PDF sent to the group with a caption. */
export function documentMessage(updateId = newUpdateId(), messageId = 4300 + (updateId % 1000)) {
	return {
		update_id: updateId,
		message: {
			message_id: messageId,
			from: alice,
			chat: chatGroup,
			date: 1_763_800_400,
			document: {
				file_id: `BQACAgIAAxkBAAIC${messageId}`,
				file_unique_id: `AgADdoc${messageId}`,
				file_name: 'notes.pdf',
				mime_type: 'application/pdf',
				file_size: 48_213,
			},
			caption: 'meeting notes',
		},
	};
}

/** A member joining the group (chat_member update, needs allowed_updates to include it). */
export function memberJoined(updateId = newUpdateId(), userId = 222333444, date = 1_763_800_600) {
	const bob = { id: userId, is_bot: false, first_name: 'Bob' };
	return {
		update_id: updateId,
		chat_member: {
			chat: chatGroup,
			from: bob,
			date,
			old_chat_member: { user: bob, status: 'left' },
			new_chat_member: { user: bob, status: 'member' },
		},
	};
}

/**
 * `count` distinct realistic updates (messages with URLs and files in a group and a DM, edits, member
 * changes, channel posts), deterministic for a given `seed`.
 */
export function mixedUpdates(count: number, seed = 1): Record<string, unknown>[] {
	const updates: Record<string, unknown>[] = [];
	for (let i = 0; i < count; i++) {
		const updateId = 700_000_000 + seed * 10_000 + i;
		const messageId = 10_000 + i;
		const kind = i % 6;
		if (kind === 0) {
			const text = `link ${i}: https://example.org/page/${i % 40}?utm_medium=tg#top and more`;
			updates.push({
				update_id: updateId,
				message: {
					message_id: messageId,
					from: alice,
					chat: chatGroup,
					date: 1_763_800_000 + i,
					text,
					entities: [
						{
							type: 'url',
							offset: 8 + String(i).length,
							length: `https://example.org/page/${i % 40}?utm_medium=tg#top`.length,
						},
					],
				},
			});
		} else if (kind === 1) {
			updates.push(documentMessage(updateId, messageId));
		} else if (kind === 2) {
			updates.push({
				update_id: updateId,
				message: {
					message_id: messageId,
					from: alice,
					chat: { id: alice.id, first_name: 'Alice', type: 'private' },
					date: 1_763_800_000 + i,
					text: `private note ${i}`,
					entities: [{ type: 'text_link', offset: 0, length: 7, url: `https://private.example/${i}` }],
				},
			});
		} else if (kind === 3) {
			updates.push({
				update_id: updateId,
				edited_message: {
					message_id: 10_000 + i - 3,
					from: alice,
					chat: chatGroup,
					date: 1_763_800_000 + i - 3,
					edit_date: 1_763_900_000 + i,
					text: `edited ${i}`,
				},
			});
		} else if (kind === 4) {
			updates.push(memberJoined(updateId, 300_000 + (i % 25), 1_763_800_000 + i));
		} else {
			updates.push({
				...channelPost(updateId),
				channel_post: { ...channelPost(updateId).channel_post, message_id: messageId },
			});
		}
	}
	return updates;
}

/** An update type this code does not know (stored raw, not rejected). */
export function unknownType(updateId = newUpdateId()) {
	return { update_id: updateId, purchased_paid_media: { from: alice, paid_media_payload: 'x' } };
}

export const realisticUpdates = [textWithUrls, photoWithCaption, editedMessage, channelPost, myChatMember];
