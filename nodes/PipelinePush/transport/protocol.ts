/**
 * The Pipeline Push wire protocol (seed 001 §3 step 4, variant B; docs/nodes/pipeline-push.md).
 *
 * Client → server (JSON text frames):
 * - `{ "type": "auth", "user_id": string, "token": string }`
 * - `{ "type": "subscribe", "request_ids": [uuid, …], "user_id"?: string, "token"?: string }`
 *   (user_id + token authenticate in the same message)
 * The connection URL may carry the same, `/api/ws?user_id=…&token=…&request_id=<uuid>[,<uuid>…]`, only when the
 * server allows it (PushServerOptions.allowQueryToken, node option Allow Token in URL; off by default).
 *
 * Server → client: the answers, exactly `{ request_id, status: "completed", answer }` or
 * `{ request_id, status: "failed", error }`, and control messages that all have a `type`:
 * `authenticated`, `subscribed`, `error` (`{ type: "error", code, message, request_ids? }`).
 *
 * Hostile input never throws here: every refusal is a `Refusal` naming the field.
 */
import { z } from 'zod';
import { userIdProblem } from './token';

export interface ProtocolLimits {
	/** Largest client message accepted (UTF-8 bytes); larger ones are refused (MESSAGE_TOO_LARGE). */
	maxMessageBytes: number;
	/** Most request_ids one message may carry (also the per-connection cap, see PushServer). */
	maxIdsPerMessage: number;
}

/** Deepest JSON nesting accepted (our messages need 2). */
export const MAX_JSON_DEPTH = 8;

export const DEFAULT_LIMITS: ProtocolLimits = { maxMessageBytes: 16 * 1024, maxIdsPerMessage: 100 };

export type ClientMessage =
	| { type: 'auth'; user_id: string; token: string }
	| { type: 'subscribe'; request_ids: string[]; user_id?: string; token?: string };

export type RefusalCode =
	| 'INVALID_MESSAGE'
	| 'MESSAGE_TOO_LARGE'
	| 'UNAUTHORIZED'
	| 'NOT_AUTHENTICATED'
	| 'TOO_MANY_SUBSCRIPTIONS'
	| 'SUBSCRIPTION_REFUSED'
	| 'UNAVAILABLE'
	| 'RATE_LIMITED';

export interface Refusal {
	type: 'error';
	code: RefusalCode;
	message: string;
	request_ids?: string[];
}

export type Parsed = { ok: true; message: ClientMessage } | { ok: false; refusal: Refusal };

/** Lower-case canonical UUID (any version), as PostgreSQL prints it. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const userId = z.string().superRefine((value, ctx) => {
	const problem = userIdProblem(value);
	if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem });
});
const token = z.string().min(1).max(256);

function schemas(limits: ProtocolLimits) {
	const requestId = z
		.string()
		.max(36)
		.transform((s) => s.toLowerCase())
		.refine((s) => UUID.test(s), 'must be a UUID string');
	const auth = z.object({ type: z.literal('auth'), user_id: userId, token }).strict();
	const subscribe = z
		.object({
			type: z.literal('subscribe'),
			request_ids: z.array(requestId).min(1).max(limits.maxIdsPerMessage),
			user_id: userId.optional(),
			token: token.optional(),
		})
		.strict()
		.refine((m) => (m.user_id === undefined) === (m.token === undefined), {
			message: 'user_id and token come together',
			path: ['token'],
		});
	return { auth, subscribe };
}

export function refuse(code: RefusalCode, message: string, request_ids?: string[]): Refusal {
	return request_ids ? { type: 'error', code, message, request_ids } : { type: 'error', code, message };
}

/** Nesting depth of a JSON text, counted without parsing (brackets inside strings skipped). */
export function jsonDepth(text: string): number {
	let depth = 0;
	let max = 0;
	let inString = false;
	for (let i = 0; i < text.length; i++) {
		const c = text.charCodeAt(i);
		if (inString) {
			if (c === 92)
				i++; // backslash: skip the escaped character
			else if (c === 34) inString = false;
		} else if (c === 34) inString = true;
		else if (c === 91 || c === 123) max = Math.max(max, ++depth);
		else if (c === 93 || c === 125) depth--;
	}
	return max;
}

/** Longest client-chosen text `logSafe` keeps (characters, before escaping). */
export const LOG_SAFE_MAX = 80;

/**
 * A client-chosen string made safe for a log line and a refusal: cut to LOG_SAFE_MAX characters (then "…"),
 * quoted and escaped as JSON, and every remaining character that could break or disguise a line (DEL, C1
 * controls, U+2028/U+2029, bidi and zero-width controls) written as `\uXXXX` (JSON.stringify already escapes
 * C0 controls and lone surrogates). The result is one line of at most 6 × LOG_SAFE_MAX + 3 characters.
 */
export function logSafe(value: string): string {
	const cut = value.length > LOG_SAFE_MAX ? `${value.slice(0, LOG_SAFE_MAX)}…` : value;
	return JSON.stringify(cut).replace(
		/[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g,
		(c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
	);
}

/**
 * The first zod issue as "field: problem" (the field path joined with dots; never the value). Unknown
 * fields are not named: their names are the client's own text (F6, log injection).
 */
function describe(error: z.ZodError): string {
	const issue = error.issues[0];
	const field = issue.path.length ? issue.path.join('.') : 'message';
	if (issue.code === 'unrecognized_keys')
		return `message: ${issue.keys.length} unknown field(s); the fields are type, user_id, token, request_ids`;
	return `${field}: ${issue.message}`;
}

/** Validates an already-decoded message object (from JSON or the query string). */
export function validateMessage(value: unknown, limits: ProtocolLimits = DEFAULT_LIMITS): Parsed {
	if (Array.isArray((value as { request_ids?: unknown })?.request_ids)) {
		const n = (value as { request_ids: unknown[] }).request_ids.length;
		if (n > limits.maxIdsPerMessage)
			return {
				ok: false,
				refusal: refuse(
					'TOO_MANY_SUBSCRIPTIONS',
					`request_ids: at most ${limits.maxIdsPerMessage} per message (got ${n})`,
				),
			};
	}
	const type = (value as { type?: unknown } | null)?.type;
	if (type !== 'auth' && type !== 'subscribe')
		return { ok: false, refusal: refuse('INVALID_MESSAGE', 'type: must be "auth" or "subscribe"') };
	const result = schemas(limits)[type].safeParse(value);
	if (!result.success) return { ok: false, refusal: refuse('INVALID_MESSAGE', describe(result.error)) };
	const message = result.data as ClientMessage;
	if (message.type === 'subscribe') message.request_ids = [...new Set(message.request_ids)];
	return { ok: true, message };
}

/**
 * Parses one client frame. `data` is the frame's text (or its bytes: UTF-8 is decoded with replacement,
 * `isBinary` frames are refused). Refusals: MESSAGE_TOO_LARGE over `limits.maxMessageBytes`,
 * INVALID_MESSAGE for binary frames, non-JSON, nesting deeper than MAX_JSON_DEPTH, or a shape that is
 * not one of the two messages (naming the field: ids must be UUID strings, not numbers).
 */
export function parseClientMessage(
	data: string | Buffer,
	isBinary = false,
	limits: ProtocolLimits = DEFAULT_LIMITS,
): Parsed {
	const bytes = typeof data === 'string' ? Buffer.byteLength(data, 'utf8') : data.length;
	if (bytes > limits.maxMessageBytes)
		return {
			ok: false,
			refusal: refuse('MESSAGE_TOO_LARGE', `message: at most ${limits.maxMessageBytes} bytes (got ${bytes})`),
		};
	if (isBinary) return { ok: false, refusal: refuse('INVALID_MESSAGE', 'message: send JSON text frames, not binary') };
	const text = typeof data === 'string' ? data : data.toString('utf8');
	if (jsonDepth(text) > MAX_JSON_DEPTH)
		return { ok: false, refusal: refuse('INVALID_MESSAGE', `message: nested deeper than ${MAX_JSON_DEPTH} levels`) };
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch {
		return { ok: false, refusal: refuse('INVALID_MESSAGE', 'message: not valid JSON') };
	}
	if (value === null || typeof value !== 'object' || Array.isArray(value))
		return { ok: false, refusal: refuse('INVALID_MESSAGE', 'message: must be a JSON object') };
	return validateMessage(value, limits);
}

/**
 * The subscription a connection URL carries (`?user_id=…&token=…&request_id=a,b&request_id=c`), or null
 * when it carries none of the three. `request_ids` is accepted as a synonym of `request_id`.
 */
export function parseQueryString(search: string, limits: ProtocolLimits = DEFAULT_LIMITS): Parsed | null {
	let params: URLSearchParams;
	try {
		params = new URLSearchParams(search);
	} catch {
		return { ok: false, refusal: refuse('INVALID_MESSAGE', 'query string: not decodable') };
	}
	const ids = [...params.getAll('request_id'), ...params.getAll('request_ids')]
		.flatMap((v) => v.split(','))
		.map((v) => v.trim())
		.filter(Boolean);
	const user = params.get('user_id');
	const tok = params.get('token');
	if (!ids.length && user === null && tok === null) return null;
	if (!ids.length)
		return validateMessage({ type: 'auth', user_id: user ?? undefined, token: tok ?? undefined }, limits);
	return validateMessage(
		{
			type: 'subscribe',
			request_ids: ids,
			...(user !== null ? { user_id: user } : {}),
			...(tok !== null ? { token: tok } : {}),
		},
		limits,
	);
}
