/**
 * Reads the facts WF20 (seed 003) stores from a raw Telegram Update: the users and chat it names, the
 * message (as sent or edited) with its text/caption, attachments and URLs, and member changes
 * (chat_member, my_chat_member, new_chat_members, left_chat_member). Pure: no I/O.
 * Update types without such facts (callback_query, poll…) parse to `{ message: null, members: [] }`.
 */
import { z } from 'zod';
import { TelegramInt } from '../../../shared/contracts/ids';

const User = z
	.object({
		id: TelegramInt,
		is_bot: z.boolean().default(false),
		username: z.string().optional(),
		first_name: z.string().optional(),
		last_name: z.string().optional(),
		language_code: z.string().optional(),
	})
	.passthrough();
const Chat = z
	.object({
		id: TelegramInt,
		type: z.enum(['private', 'group', 'supergroup', 'channel']),
		title: z.string().optional(),
		username: z.string().optional(),
	})
	.passthrough();
const Entity = z
	.object({
		type: z.string(),
		offset: z.number().int().nonnegative(),
		length: z.number().int().nonnegative(),
		url: z.string().optional(),
	})
	.passthrough();
const FileRef = z
	.object({
		file_id: z.string().min(1),
		file_unique_id: z.string().min(1),
		file_size: z.number().int().optional(),
		file_name: z.string().optional(),
		mime_type: z.string().optional(),
	})
	.passthrough();
const Message = z
	.object({
		message_id: TelegramInt,
		date: TelegramInt,
		edit_date: TelegramInt.optional(),
		chat: Chat,
		from: User.optional(),
		text: z.string().optional(),
		caption: z.string().optional(),
		entities: z.array(Entity).optional(),
		caption_entities: z.array(Entity).optional(),
		new_chat_members: z.array(User).optional(),
		left_chat_member: User.optional(),
	})
	.passthrough();
/** Telegram's ChatMember: `is_member` is sent for `restricted` only (ChatMemberRestricted). */
const ChatMember = z.object({ status: z.string(), user: User, is_member: z.boolean().optional() }).passthrough();
const MemberUpdate = z
	.object({
		chat: Chat,
		from: User,
		date: TelegramInt,
		old_chat_member: ChatMember,
		new_chat_member: ChatMember,
	})
	.passthrough();

export type TgUser = z.infer<typeof User>;
export type TgChat = z.infer<typeof Chat>;

/** Attachment kinds with a single file; `photo` (an array of sizes) keeps the largest size. */
const FILE_KINDS = ['document', 'audio', 'video', 'voice', 'animation', 'video_note', 'sticker'] as const;
const MESSAGE_FIELDS = ['message', 'edited_message', 'channel_post', 'edited_channel_post'] as const;
/** Telegram ChatMember statuses (tg.chat_memberships_current.status). */
const MEMBER_STATUSES = new Set(['creator', 'administrator', 'member', 'restricted', 'left', 'kicked']);

export interface Attachment {
	kind: string;
	file_id: string;
	file_unique_id: string;
	file_name: string | null;
	mime_type: string | null;
	file_size: number | null;
}

export interface MemberChange {
	tg_user_id: number;
	old_status: string | null;
	new_status: string;
	/**
	 * Telegram's membership after the change (tg.chat_memberships_current.is_member): creator, administrator,
	 * member → true; left, kicked → false; restricted → its own `is_member` (absent: false, never a guess).
	 */
	is_member: boolean;
	/** Unix seconds */
	date: number;
}

export interface ParsedUpdate {
	update_type: string;
	chat: TgChat | null;
	users: TgUser[];
	message: {
		message_id: number;
		from_user_id: number | null;
		/** Unix seconds */
		date: number;
		/** 0 for the message as sent, the edit_date (Unix seconds) for an edit */
		version_no: number;
		text: string | null;
		caption: string | null;
		normalized_text: string | null;
		payload: Record<string, unknown>;
		attachments: Attachment[];
		/** URLs of `url` and `text_link` entities, in order, without repeats */
		urls: string[];
		/** A question for the bot (WF51): a DM's text that is not a /command, or a group text mentioning the bot */
		question: string | null;
	} | null;
	members: MemberChange[];
}

/** Text as searched: Unicode NFKC, whitespace runs collapsed to one space, trimmed; null when empty. */
export function normalizeText(text: string | null): string | null {
	if (!text) return null;
	const normalized = text.normalize('NFKC').replace(/\s+/gu, ' ').trim();
	return normalized || null;
}

/** URLs of the `url` entities (the text they cover; offsets are UTF-16 units, as JS strings) and `text_link`s. */
export function entityUrls(text: string | undefined, entities: z.infer<typeof Entity>[] | undefined): string[] {
	const urls: string[] = [];
	for (const entity of entities ?? []) {
		if (entity.type === 'url' && text) urls.push(text.slice(entity.offset, entity.offset + entity.length));
		else if (entity.type === 'text_link' && entity.url) urls.push(entity.url);
	}
	return urls;
}

function attachmentsOf(message: Record<string, unknown>): Attachment[] {
	const found: Attachment[] = [];
	const add = (kind: string, value: unknown) => {
		const file = FileRef.safeParse(value);
		if (!file.success) return;
		const f = file.data;
		found.push({
			kind,
			file_id: f.file_id,
			file_unique_id: f.file_unique_id,
			file_name: f.file_name ?? null,
			mime_type: f.mime_type ?? null,
			file_size: f.file_size ?? null,
		});
	};
	for (const kind of FILE_KINDS) if (message[kind]) add(kind, message[kind]);
	if (Array.isArray(message.photo) && message.photo.length > 0) {
		const sizes = message.photo as { file_size?: number; width?: number; height?: number }[];
		const largest = sizes.reduce((a, b) =>
			(b.width ?? 0) * (b.height ?? 0) >= (a.width ?? 0) * (a.height ?? 0) ? b : a,
		);
		add('photo', largest);
	}
	return found;
}

function statusOf(status: string): string {
	return MEMBER_STATUSES.has(status) ? status : 'member';
}

/** Telegram's membership of a ChatMember (see MemberChange.is_member). */
export function isMemberOf(member: { status: string; is_member?: boolean }): boolean {
	const status = statusOf(member.status);
	if (status === 'restricted') return member.is_member === true;
	return status === 'creator' || status === 'administrator' || status === 'member';
}

/**
 * The question a message asks the bot, or null: in a private chat its text (not a /command); elsewhere
 * a text with a `mention` entity of `@<botUsername>` (case-insensitive), without the mention.
 */
export function questionOf(message: z.infer<typeof Message>, botUsername: string | null): string | null {
	const text = message.text?.trim();
	if (!text) return null;
	if (message.chat.type === 'private') return text.startsWith('/') ? null : text;
	if (!botUsername) return null;
	const handle = `@${botUsername.toLowerCase()}`;
	const mention = (message.entities ?? []).find(
		(e) => e.type === 'mention' && message.text!.slice(e.offset, e.offset + e.length).toLowerCase() === handle,
	);
	if (!mention) return null;
	const rest = `${message.text!.slice(0, mention.offset)}${message.text!.slice(mention.offset + mention.length)}`
		.replace(/\s+/g, ' ')
		.trim();
	return rest || null;
}

/**
 * @param botUsername the receiving bot's username (core.bots.username), to recognise mentions
 * @throws z.ZodError when a known field (message, chat_member…) lacks what Telegram always sends
 */
export function parseUpdate(update: Record<string, unknown>, botUsername: string | null = null): ParsedUpdate {
	const updateType = Object.keys(update).find((k) => k !== 'update_id') ?? 'unknown';
	const result: ParsedUpdate = { update_type: updateType, chat: null, users: [], message: null, members: [] };
	const addUser = (user: TgUser | undefined) => {
		if (user && !result.users.some((u) => u.id === user.id)) result.users.push(user);
	};
	if ((MESSAGE_FIELDS as readonly string[]).includes(updateType)) {
		const message = Message.parse(update[updateType]);
		result.chat = message.chat;
		addUser(message.from);
		const edited = updateType.startsWith('edited_');
		const text = message.text ?? null;
		const caption = message.caption ?? null;
		const urls = [
			...entityUrls(message.text, message.entities),
			...entityUrls(message.caption, message.caption_entities),
		];
		result.message = {
			message_id: message.message_id,
			from_user_id: message.from?.id ?? null,
			date: message.date,
			version_no: edited ? (message.edit_date ?? message.date) : 0,
			text,
			caption,
			normalized_text: normalizeText(text ?? caption),
			payload: message as Record<string, unknown>,
			attachments: attachmentsOf(message as Record<string, unknown>),
			urls: [...new Set(urls)],
			question: edited ? null : questionOf(message, botUsername),
		};
		for (const user of message.new_chat_members ?? []) {
			addUser(user);
			result.members.push({
				tg_user_id: user.id,
				old_status: null,
				new_status: 'member',
				is_member: true,
				date: message.date,
			});
		}
		if (message.left_chat_member) {
			addUser(message.left_chat_member);
			result.members.push({
				tg_user_id: message.left_chat_member.id,
				old_status: null,
				new_status: 'left',
				is_member: false,
				date: message.date,
			});
		}
	} else if (updateType === 'chat_member' || updateType === 'my_chat_member') {
		const change = MemberUpdate.parse(update[updateType]);
		result.chat = change.chat;
		addUser(change.from);
		addUser(change.new_chat_member.user);
		result.members.push({
			tg_user_id: change.new_chat_member.user.id,
			old_status: statusOf(change.old_chat_member.status),
			new_status: statusOf(change.new_chat_member.status),
			is_member: isMemberOf(change.new_chat_member),
			date: change.date,
		});
	}
	return result;
}
