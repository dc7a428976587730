/**
 * Telegram updates that change who is in a chat, shaped as the Bot API documents ChatMemberUpdated and the
 * ChatMember variants (ChatMemberMember, ChatMemberLeft, ChatMemberBanned = `kicked`, ChatMemberRestricted with
 * its `is_member`, ChatMemberAdministrator): `chat_member` for a user (the bot must be an administrator and
 * ask for it in allowed_updates), `my_chat_member` for the bot itself.
 */
import { newUpdateId } from './updates';

export interface TgChatRef {
	id: number;
	title: string;
	type: 'group' | 'supergroup';
}

export interface TgUserRef {
	id: number;
	is_bot: boolean;
	first_name: string;
	username?: string;
}

export type MemberStatus = 'creator' | 'administrator' | 'member' | 'restricted' | 'left' | 'kicked';

/** A ChatMember of `status`; `isMember` is sent for `restricted` only (Telegram: whether the user is in the chat). */
export function chatMember(user: TgUserRef, status: MemberStatus, isMember?: boolean): Record<string, unknown> {
	switch (status) {
		case 'restricted':
			return {
				user,
				status,
				is_member: isMember === true,
				can_send_messages: false,
				can_send_audios: false,
				can_send_documents: false,
				can_send_photos: false,
				can_send_videos: false,
				can_send_video_notes: false,
				can_send_voice_notes: false,
				can_send_polls: false,
				can_send_other_messages: false,
				can_add_web_page_previews: false,
				can_change_info: false,
				can_invite_users: false,
				can_pin_messages: false,
				can_manage_topics: false,
				until_date: 0,
			};
		case 'kicked':
			return { user, status, until_date: 0 };
		case 'administrator':
			return {
				user,
				status,
				can_be_edited: false,
				is_anonymous: false,
				can_manage_chat: true,
				can_delete_messages: true,
				can_manage_video_chats: false,
				can_restrict_members: true,
				can_promote_members: false,
				can_change_info: false,
				can_invite_users: true,
				can_post_stories: false,
				can_edit_stories: false,
				can_delete_stories: false,
			};
		default:
			return { user, status };
	}
}

/**
 * `chat_member` (a user's membership changed) or, with `mine`, `my_chat_member` (the bot's own).
 * @param date Unix seconds of the change
 * @param by the user who made the change (the user themself for a join or a leave)
 */
export function memberUpdate(options: {
	chat: TgChatRef;
	user: TgUserRef;
	from: MemberStatus;
	to: MemberStatus;
	isMember?: boolean;
	date: number;
	by?: TgUserRef;
	mine?: boolean;
}): Record<string, unknown> {
	return {
		update_id: newUpdateId(),
		[options.mine ? 'my_chat_member' : 'chat_member']: {
			chat: options.chat,
			from: options.by ?? options.user,
			date: options.date,
			old_chat_member: chatMember(options.user, options.from, options.from === 'restricted' ? true : undefined),
			new_chat_member: chatMember(options.user, options.to, options.isMember),
		},
	};
}
