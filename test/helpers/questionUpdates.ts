/**
 * Telegram updates that ask the knowledge bot a question (WF20 turns them into `qa_answer` jobs): a text in
 * the user's private chat with the bot, or a group text that @mentions the bot (a `mention` entity; offsets
 * in UTF-16 units).
 */
import type { TgChatRef, TgUserRef } from './memberUpdates';
import { newUpdateId } from './updates';

/** A text the user sends the bot in their private chat (chat id = user id, as Telegram numbers it). */
export function dmQuestion(user: TgUserRef, text: string, messageId: number, date: number): Record<string, unknown> {
	return {
		update_id: newUpdateId(),
		message: {
			message_id: messageId,
			from: user,
			chat: {
				id: user.id,
				first_name: user.first_name,
				...(user.username ? { username: user.username } : {}),
				type: 'private',
			},
			date,
			text,
		},
	};
}

/** `@<botUsername> <text>` sent in a group, with the mention entity Telegram adds. */
export function groupMention(
	chat: TgChatRef,
	user: TgUserRef,
	botUsername: string,
	text: string,
	messageId: number,
	date: number,
): Record<string, unknown> {
	const handle = `@${botUsername}`;
	return {
		update_id: newUpdateId(),
		message: {
			message_id: messageId,
			from: user,
			chat,
			date,
			text: `${handle} ${text}`,
			entities: [{ type: 'mention', offset: 0, length: handle.length }],
		},
	};
}
