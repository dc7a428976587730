/**
 * The Bot API calls of the knowledge bot: a file download (WF32) — `getFile` (file_id → file_path, valid
 * ≥ 1 hour) and the download from `<baseUrl>/file/bot<token>/<file_path>`, up to 20 MB — and the
 * answer's `sendMessage` (WF51), and `getMe` / `getWebhookInfo` for the transport watchdog (WF11).
 * Credentials: the Contracts Telegram Bot API credential (`contractsTelegramApi`: accessToken, baseUrl).
 */
import type { HttpGet, HttpPostJson, HttpResponse } from './http';

/** Bot API getFile limit: larger files cannot be downloaded by a bot (bytes). */
export const BOT_API_MAX_FILE_BYTES = 20 * 1024 * 1024;

export interface TelegramCredential {
	accessToken: string;
	baseUrl?: string;
}

export class BotApiError extends Error {
	constructor(message: string, readonly status: number, readonly description: string | null) {
		super(message);
	}
}

function base(credential: TelegramCredential): string {
	return (credential.baseUrl || 'https://api.telegram.org').replace(/\/+$/, '');
}

/**
 * @returns `{ file_path, file_size }`
 * @throws BotApiError (HTTP status and Telegram's description, e.g. 400 "Bad Request: file is too big")
 */
export async function getFile(http: HttpGet, credential: TelegramCredential, fileId: string, timeoutMs: number): Promise<{ file_path: string; file_size: number | null }> {
	const res = await http(`${base(credential)}/bot${credential.accessToken}/getFile?file_id=${encodeURIComponent(fileId)}`, { timeoutMs, maxBytes: 64 * 1024 });
	let json: { ok?: boolean; result?: { file_path?: string; file_size?: number }; description?: string } = {};
	try {
		json = JSON.parse(res.body.toString('utf8'));
	} catch {
		// not JSON: reported below with the HTTP status
	}
	if (res.status !== 200 || !json.ok || !json.result?.file_path) {
		throw new BotApiError(`getFile failed: HTTP ${res.status}${json.description ? ` ${json.description}` : ''}`, res.status, json.description ?? null);
	}
	return { file_path: json.result.file_path, file_size: json.result.file_size ?? null };
}

/** @throws BotApiError for a non-200 answer; TooLargeError past `maxBytes` */
export async function downloadFile(http: HttpGet, credential: TelegramCredential, filePath: string, timeoutMs: number, maxBytes: number): Promise<HttpResponse> {
	const res = await http(`${base(credential)}/file/bot${credential.accessToken}/${filePath}`, { timeoutMs, maxBytes });
	if (res.status !== 200) throw new BotApiError(`file download failed: HTTP ${res.status}`, res.status, null);
	return res;
}

/** Telegram's limit on a message's text (characters after entity parsing). */
export const MAX_MESSAGE_CHARS = 4096;

/**
 * sendMessage (plain text, no parse mode), as a reply when `replyTo` is given; text cut to 4096 characters.
 * @returns the sent message's message_id
 * @throws BotApiError (status and Telegram's description)
 */
export async function sendMessage(post: HttpPostJson, credential: TelegramCredential, chatId: number, text: string, replyTo: number | null, timeoutMs: number): Promise<number> {
	const body = {
		chat_id: chatId,
		text: text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS - 1)}…` : text,
		...(replyTo ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {}),
		link_preview_options: { is_disabled: true },
	};
	const res = await post(`${base(credential)}/bot${credential.accessToken}/sendMessage`, body, { timeoutMs });
	const json = (res.body ?? {}) as { ok?: boolean; result?: { message_id?: number }; description?: string };
	if (res.status !== 200 || !json.ok || typeof json.result?.message_id !== 'number') {
		throw new BotApiError(`sendMessage failed: HTTP ${res.status}${json.description ? ` ${json.description}` : ''}`, res.status, json.description ?? null);
	}
	return json.result.message_id;
}

/** getWebhookInfo's fields the watchdog records (WF11). */
export interface WebhookInfo {
	url: string;
	pending_update_count: number;
	/** Unix seconds */
	last_error_date?: number;
	last_error_message?: string;
	max_connections?: number;
	ip_address?: string;
}

async function call<T>(http: HttpGet, credential: TelegramCredential, method: string, timeoutMs: number): Promise<T> {
	const res = await http(`${base(credential)}/bot${credential.accessToken}/${method}`, { timeoutMs, maxBytes: 256 * 1024 });
	let json: { ok?: boolean; result?: T; description?: string } = {};
	try {
		json = JSON.parse(res.body.toString('utf8'));
	} catch {
		// reported below with the HTTP status
	}
	if (res.status !== 200 || !json.ok || json.result === undefined) {
		throw new BotApiError(`${method} failed: HTTP ${res.status}${json.description ? ` ${json.description}` : ''}`, res.status, json.description ?? null);
	}
	return json.result;
}

/** getMe: the bot's own Telegram id and username. @throws BotApiError */
export function getMe(http: HttpGet, credential: TelegramCredential, timeoutMs: number): Promise<{ id: number; username?: string }> {
	return call(http, credential, 'getMe', timeoutMs);
}

/** getWebhookInfo. @throws BotApiError */
export function getWebhookInfo(http: HttpGet, credential: TelegramCredential, timeoutMs: number): Promise<WebhookInfo> {
	return call(http, credential, 'getWebhookInfo', timeoutMs);
}
