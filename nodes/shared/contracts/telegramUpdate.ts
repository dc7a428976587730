/**
 * The few fields of a Telegram Bot API `Update` that TelegramIngest needs (seed 003 WF10).
 *
 * Passthrough on purpose: the raw update is stored untouched, and update types this schema does not
 * know (Telegram adds new ones) are accepted and stored raw. What is checked: `update_id` is an
 * integer and exactly one update field (any key other than `update_id`) is present.
 */
import { z } from 'zod';
import { field, recordAt } from '../json';

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

export const TelegramUpdate = z
	.object({ update_id: z.number().int().nonnegative() })
	.passthrough()
	.superRefine((update, ctx) => {
		const fields = Object.keys(update).filter((key) => key !== 'update_id');
		if (fields.length !== 1) {
			ctx.addIssue({
				code: z.ZodIssueCode.custom,
				path: [],
				message: `an Update has exactly one update field besides update_id; found ${fields.length}${
					fields.length ? ` (${fields.join(', ')})` : ''
				}`,
			});
			return;
		}
		const [field] = fields;
		const value = (update as Record<string, unknown>)[field];
		if (value === null || typeof value !== 'object' || Array.isArray(value)) {
			ctx.addIssue({ code: z.ZodIssueCode.custom, path: [field], message: 'must be an object' });
			return;
		}
		if ((MESSAGE_LIKE_UPDATES as readonly string[]).includes(field)) {
			const parsed = TelegramMessage.safeParse(value);
			if (!parsed.success) {
				for (const issue of parsed.error.issues) {
					ctx.addIssue({ ...issue, path: [field, ...issue.path] });
				}
			}
		}
	});
export type TelegramUpdate = z.infer<typeof TelegramUpdate>;

/** The indexed keys of an update, written to `raw.telegram_update_keys`. */
export interface UpdateKeys {
	update_id: number;
	update_type: string;
	chat_id: number | null;
	message_id: number | null;
	from_id: number | null;
}

function intOrNull(value: unknown): number | null {
	return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

/**
 * Extracts the keys of a validated update. Works for every update type: message-like updates give
 * chat/message/from; callback_query, my_chat_member, chat_member, message_reaction and the like give
 * what they carry (`chat`, `from`/`user`, `message.chat`); unknown types give the type and update_id.
 */
export function updateKeys(update: TelegramUpdate): UpdateKeys {
	const record = update as Record<string, unknown>;
	const type = Object.keys(record).find((key) => key !== 'update_id') as string;
	const body = record[type];
	const nested = recordAt(body, 'message');
	const chat = recordAt(body, 'chat') ?? recordAt(nested, 'chat');
	const from = recordAt(body, 'from') ?? recordAt(body, 'user') ?? recordAt(body, 'sender_chat');
	return {
		update_id: update.update_id,
		update_type: type,
		chat_id: intOrNull(chat?.id),
		message_id: intOrNull(field(body, 'message_id') ?? field(nested, 'message_id')),
		from_id: intOrNull(from?.id),
	};
}
