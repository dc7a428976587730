/**
 * The few fields of a Telegram Bot API `Update` that TelegramIngest needs (seed 003 WF10).
 *
 * Checked on the input itself, never on a copy: zod's object parsing rebuilds objects and skips a key
 * named `__proto__`, so a schema that validated (or returned) zod's output would see, and store, another
 * update than the one received. `TelegramUpdate.parse` returns the very object it was given.
 *
 * What is checked: the body is an object, `update_id` is a non-negative integer, and exactly one update
 * field (any own key other than `update_id`, `__proto__` included) is present and is an object; the
 * message-like fields carry an integer `message_id` and `chat.id` (and `from.id` when `from` is there).
 * Unknown update types are accepted (Telegram adds new ones) and stored raw.
 */
import { z } from 'zod';
import { field, isRecord, recordAt } from '../json';

const Chat = z.object({ id: z.number().int() }).passthrough();
const User = z.object({ id: z.number().int() }).passthrough();

/** A message-like object (message, edited_message, channel_post, edited_channel_post, business_message…). */
export const TelegramMessage = z
	.object({
		message_id: z.number().int(),
		chat: Chat,
		from: User.optional(),
	})
	.passthrough();

/** Update fields whose value carries `chat`/`from`/`message_id` the key table indexes. */
export const MESSAGE_LIKE_UPDATES = [
	'message',
	'edited_message',
	'channel_post',
	'edited_channel_post',
	'business_message',
	'edited_business_message',
] as const;

/** A validated update: the object as received (own keys untouched). */
export type TelegramUpdate = { update_id: number } & Record<string, unknown>;

const UpdateId = z.object({ update_id: z.number().int().nonnegative() }).passthrough();

/** The update fields of an object: its own keys other than `update_id` (a `__proto__` key counts). */
export function updateFields(update: Record<string, unknown>): string[] {
	return Object.keys(update).filter((key) => key !== 'update_id');
}

/**
 * A Telegram Update (seed 003 WF10): any value with a non-negative integer `update_id` and exactly one update
 * field besides it, an object; message-like fields are checked with `TelegramMessage`. Validated on the
 * input itself (passthrough: the update is stored as received, `__proto__` included).
 */
export const TelegramUpdate = z.unknown().superRefine((input, refinement) => {
	const base = UpdateId.safeParse(input);
	if (!base.success) {
		for (const issue of base.error.issues) refinement.addIssue(issue);
		return;
	}
	const update = input as Record<string, unknown>;
	const fields = updateFields(update);
	if (fields.length !== 1) {
		refinement.addIssue({
			code: z.ZodIssueCode.custom,
			path: [],
			message: `an Update has exactly one update field besides update_id; found ${fields.length}${
				fields.length ? ` (${fields.join(', ')})` : ''
			}`,
		});
		return;
	}
	const [name] = fields;
	const value = update[name];
	if (!isRecord(value)) {
		refinement.addIssue({ code: z.ZodIssueCode.custom, path: [name], message: 'must be an object' });
		return;
	}
	if ((MESSAGE_LIKE_UPDATES as readonly string[]).includes(name)) {
		const parsed = TelegramMessage.safeParse(value);
		if (!parsed.success) {
			for (const issue of parsed.error.issues) {
				refinement.addIssue({ ...issue, path: [name, ...issue.path] });
			}
		}
	}
}) as unknown as z.ZodType<TelegramUpdate, z.ZodTypeDef, unknown>;

/** The indexed keys of an update, written to `raw.telegram_update_keys`. */
export interface UpdateKeys {
	update_id: number;
	update_type: string;
	chat_id: number | null;
	message_id: number | null;
	from_id: number | null;
}

/** The id columns of `raw.telegram_update_keys` (all bigint). */
export type IdField = 'update_id' | 'chat_id' | 'message_id' | 'from_id';

/** Where each indexed id sits in an update (a path of keys), or null when the update has none. */
export interface KeyPaths {
	update_type: string;
	paths: Record<IdField, string[] | null>;
}

function present(value: unknown): boolean {
	return value !== undefined && value !== null;
}

/**
 * Where the keys of a validated update are. Works for every update type: message-like updates give
 * chat/message/from; callback_query, my_chat_member, chat_member, message_reaction and the like give
 * what they carry (`chat`, `from`/`user`/`sender_chat`, `message.chat`); unknown types give the type
 * and update_id.
 */
export function keyPaths(update: TelegramUpdate): KeyPaths {
	const record = update as Record<string, unknown>;
	const type = updateFields(record)[0];
	const body = record[type];
	const nested = recordAt(body, 'message');
	const chat = recordAt(body, 'chat') ? [type, 'chat'] : recordAt(nested, 'chat') ? [type, 'message', 'chat'] : null;
	const from = ['from', 'user', 'sender_chat'].find((key) => recordAt(body, key));
	const messageId = present(field(body, 'message_id'))
		? [type, 'message_id']
		: present(field(nested, 'message_id'))
			? [type, 'message', 'message_id']
			: null;
	return {
		update_type: type,
		paths: {
			update_id: ['update_id'],
			chat_id: chat ? [...chat, 'id'] : null,
			message_id: messageId,
			from_id: from ? [type, from, 'id'] : null,
		},
	};
}

/** The value at `path` of `value` (own keys only), or undefined. */
export function valueAt(value: unknown, path: readonly string[]): unknown {
	let current = value;
	for (const key of path) {
		if (!isRecord(current) || !Object.prototype.hasOwnProperty.call(current, key)) return undefined;
		current = current[key];
	}
	return current;
}

function intOrNull(value: unknown): number | null {
	return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

/** The indexed keys of a validated update as JavaScript numbers (exact only up to 2^53; see keyPaths). */
export function updateKeys(update: TelegramUpdate): UpdateKeys {
	const { update_type, paths } = keyPaths(update);
	const at = (path: string[] | null) => (path ? intOrNull(valueAt(update, path)) : null);
	return {
		update_id: update.update_id,
		update_type,
		chat_id: at(paths.chat_id),
		message_id: at(paths.message_id),
		from_id: at(paths.from_id),
	};
}
