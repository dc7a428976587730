/**
 * The Bot API calls of the knowledge bot: a file download (WF32) — `getFile` (file_id → file_path, valid
 * ≥ 1 hour) and the download from `<baseUrl>/file/bot<token>/<file_path>`, up to 20 MB — and the
 * answer's `sendMessage` (WF51), and `getMe` / `getWebhookInfo` for the transport watchdog (WF11).
 * Credentials: the Contracts Telegram Bot API credential (`contractsTelegramApi`: accessToken, baseUrl).
 * The download URL: the Bot API base URL is the admin's (as configured); the `file_path` getFile answers is
 * checked (`staysInFileDirectory`) so it cannot point the download at another path, host or port, and no
 * Bot API call follows a redirect (issue 25).
 * Secrets: the base URL is checked before a URL is built (`checkedBaseUrl`: http(s), no whitespace, no
 * user info; a ContractError 500 `validation` BAD_CREDENTIAL_URL otherwise), and every error that leaves
 * this module — BotApiError (message and Telegram's description, which a server may echo the path into)
 * and network failures (rethrown as a RedactedError copy: name, message, stack, code and the cause chain,
 * nothing else) — has the token redacted, as is and URL-encoded (../../shared/redact.ts).
 */
import { ContractError } from '../../shared/errors';
import { checkedBaseUrl, type UrlField } from '../../shared/credentialUrl';
import { REDIRECT_HINT, redactorFor, type Redactor } from '../../shared/redact';
import { TooLargeError, type HttpGet, type HttpPostJson, type HttpResponse } from './http';

/** Bot API getFile limit: larger files cannot be downloaded by a bot (bytes). */
export const BOT_API_MAX_FILE_BYTES = 20 * 1024 * 1024;

export interface TelegramCredential {
	accessToken: string;
	baseUrl?: string;
}

/** A Bot API answer that is not a success: HTTP status and Telegram's description (token redacted). */
export class BotApiError extends Error {
	constructor(
		message: string,
		readonly status: number,
		readonly description: string | null,
	) {
		super(message);
		this.name = 'BotApiError';
	}
}

/** The Base URL field of the credential, for validation messages. */
export const TELEGRAM_BASE_URL: UrlField = {
	credential: 'Contracts Telegram Bot API',
	field: 'Base URL',
	name: 'baseUrl',
	example: 'https://api.telegram.org',
};

/** The credential's checked base URL and the redactor of its token. @throws ContractError 500 BAD_CREDENTIAL_URL */
export function telegramTransport(credential: TelegramCredential): { base: string; redact: Redactor } {
	const redact = redactorFor([credential.accessToken]);
	const raw =
		credential.baseUrl === undefined || credential.baseUrl === null || credential.baseUrl === ''
			? 'https://api.telegram.org'
			: credential.baseUrl;
	return { base: checkedBaseUrl(raw, TELEGRAM_BASE_URL), redact };
}

/** What left an HTTP call, with the token redacted (TooLargeError and ContractError carry none). */
function transportFailure(error: unknown, redact: Redactor): Error {
	if (error instanceof TooLargeError || error instanceof ContractError) return error;
	if (error instanceof BotApiError)
		return new BotApiError(
			redact.string(error.message),
			error.status,
			error.description === null ? null : redact.string(error.description),
		);
	return redact.error(error);
}

/** A failed answer: `<what> failed: HTTP <status> <description>`, redacted. */
function answerError(what: string, status: number, description: string | undefined, redact: Redactor): BotApiError {
	const told = typeof description === 'string' ? redact.string(description) : null;
	const hint = status >= 300 && status < 400 ? REDIRECT_HINT : '';
	return new BotApiError(`${what} failed: HTTP ${status}${told ? ` ${told}` : ''}${hint}`, status, told);
}

/** A GET with the token in its path: never follows a redirect (a 3xx is reported as a failed answer). */
async function get(
	http: HttpGet,
	redact: Redactor,
	url: string,
	options: { timeoutMs: number; maxBytes: number },
): Promise<HttpResponse> {
	try {
		return await http(url, { ...options, redirect: 'manual' });
	} catch (error) {
		throw transportFailure(error, redact);
	}
}

/**
 * @returns `{ file_path, file_size }`: a relative path (e.g. `documents/file_0.pdf`)
 * @throws ContractError 502 `upstream` LOCAL_MODE_FILE_PATH, not retryable, when the path is absolute or
 *         holds the token (a `--local` Bot API server answers `/var/lib/telegram-bot-api/<token>/…`: the
 *         path is never returned, stored or quoted); ContractError 502 UNSAFE_FILE_PATH, not retryable, when the
 *         path would leave the file directory (staysInFileDirectory); BotApiError (HTTP status and Telegram's description, e.g. 400 "Bad Request: file is too big");
 *         ContractError 500 BAD_CREDENTIAL_URL; a RedactedError for a network failure or a timeout
 */
export async function getFile(
	http: HttpGet,
	credential: TelegramCredential,
	fileId: string,
	timeoutMs: number,
): Promise<{ file_path: string; file_size: number | null }> {
	const { base, redact } = telegramTransport(credential);
	const res = await get(
		http,
		redact,
		`${base}/bot${credential.accessToken}/getFile?file_id=${encodeURIComponent(fileId)}`,
		{ timeoutMs, maxBytes: 64 * 1024 },
	);
	let json: { ok?: boolean; result?: { file_path?: string; file_size?: number }; description?: string } = {};
	try {
		json = JSON.parse(res.body.toString('utf8'));
	} catch {
		// not JSON: reported below with the HTTP status
	}
	if (res.status !== 200 || !json.ok || !json.result?.file_path) {
		throw answerError('getFile', res.status, json.description, redact);
	}
	const filePath = json.result.file_path;
	if (filePath.startsWith('/') || /^[a-z]:[\\/]/i.test(filePath) || redact.string(filePath) !== filePath) {
		throw ContractError.upstream(
			'getFile answered an absolute file_path (or one holding the bot token): the Bot API server runs in --local mode, whose files are read from its disk and cannot be downloaded over HTTP; use a Bot API server without --local',
			502,
			false,
			{ code: 'LOCAL_MODE_FILE_PATH' },
			{ operation: 'download' },
		);
	}
	if (!staysInFileDirectory(filePath)) throw unsafeFilePath();
	return { file_path: filePath, file_size: json.result.file_size ?? null };
}

/**
 * One segment of a getFile `file_path` as the Bot API writes them (`documents/file_5.pdf`, `photos/file_0.jpg`):
 * ASCII letters, digits, `_`, `-` and `.`, not starting with a dot.
 */
const FILE_PATH_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/**
 * Whether a getFile `file_path` names a file under the download directory `<base>/file/bot<token>/` and
 * nothing else: every `/`-separated segment matches FILE_PATH_SEGMENT (an allowlist, so no reading of it by a
 * server or proxy — percent-decoded once or more, path parameters stripped (`..;`), Unicode folded (NFKC:
 * full-width dots and slashes), trailing dots or spaces trimmed — can make a dot segment, an empty segment, a
 * separator, a query, a fragment, a control character or a space). So the path the Bot API answers can never
 * turn the download into a request for another path, host or port (the download itself never follows a
 * redirect).
 */
export function staysInFileDirectory(filePath: string): boolean {
	return filePath.split('/').every((segment) => FILE_PATH_SEGMENT.test(segment));
}

function unsafeFilePath(): ContractError {
	return ContractError.upstream(
		"getFile answered a file_path that is not plain segments of letters, digits, '_', '-' and '.' (it could leave the Bot API's file directory: a dot segment, query, fragment, backslash, percent-escape or control character): not downloaded",
		502,
		false,
		{ code: 'UNSAFE_FILE_PATH' },
		{ operation: 'download' },
	);
}

/**
 * @returns the answer; its `url` with the token redacted
 * @throws BotApiError for a non-200 answer; TooLargeError past `maxBytes`; ContractError 502 UNSAFE_FILE_PATH
 *   when `filePath` would leave `<base>/file/bot<token>/` (nothing is requested); as getFile otherwise
 */
export async function downloadFile(
	http: HttpGet,
	credential: TelegramCredential,
	filePath: string,
	timeoutMs: number,
	maxBytes: number,
): Promise<HttpResponse> {
	const { base, redact } = telegramTransport(credential);
	if (!staysInFileDirectory(filePath)) throw unsafeFilePath();
	const directory = `${base}/file/bot${credential.accessToken}/`;
	const url = `${directory}${filePath}`;
	// the URL parser's view agrees: same origin, still under the directory, no query or fragment
	const parsed = new URL(url);
	const parsedDirectory = new URL(directory);
	if (
		parsed.origin !== parsedDirectory.origin ||
		!parsed.pathname.startsWith(parsedDirectory.pathname) ||
		parsed.search !== '' ||
		parsed.hash !== ''
	)
		throw unsafeFilePath();
	const res = await get(http, redact, url, { timeoutMs, maxBytes });
	if (res.status !== 200) throw answerError('file download', res.status, undefined, redact);
	return { ...res, url: redact.string(res.url) };
}

/** Telegram's limit on a message's text (characters after entity parsing). */
export const MAX_MESSAGE_CHARS = 4096;

/**
 * sendMessage (plain text, no parse mode), as a reply when `replyTo` is given; text cut to 4096 characters.
 * @returns the sent message's message_id
 * @throws BotApiError (status and Telegram's description); as getFile otherwise
 */
export async function sendMessage(
	post: HttpPostJson,
	credential: TelegramCredential,
	chatId: number | string,
	text: string,
	replyTo: number | null,
	timeoutMs: number,
): Promise<number> {
	const body = {
		chat_id: chatId,
		text: text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS - 1)}…` : text,
		...(replyTo ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {}),
		link_preview_options: { is_disabled: true },
	};
	const { base, redact } = telegramTransport(credential);
	let res: { status: number; body: unknown };
	try {
		res = await post(`${base}/bot${credential.accessToken}/sendMessage`, body, { timeoutMs });
	} catch (error) {
		throw transportFailure(error, redact);
	}
	const json = (res.body ?? {}) as { ok?: boolean; result?: { message_id?: number }; description?: string };
	if (res.status !== 200 || !json.ok || typeof json.result?.message_id !== 'number') {
		throw answerError('sendMessage', res.status, json.description, redact);
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
	const { base, redact } = telegramTransport(credential);
	const res = await get(http, redact, `${base}/bot${credential.accessToken}/${method}`, {
		timeoutMs,
		maxBytes: 256 * 1024,
	});
	let json: { ok?: boolean; result?: T; description?: string } = {};
	try {
		json = JSON.parse(res.body.toString('utf8'));
	} catch {
		// reported below with the HTTP status
	}
	if (res.status !== 200 || !json.ok || json.result === undefined) {
		throw answerError(method, res.status, json.description, redact);
	}
	return json.result;
}

/** getMe: the bot's own Telegram id and username. @throws as getFile */
export function getMe(
	http: HttpGet,
	credential: TelegramCredential,
	timeoutMs: number,
): Promise<{ id: number; username?: string }> {
	return call(http, credential, 'getMe', timeoutMs);
}

/** getWebhookInfo, as answered (the caller redacts what it stores). @throws as getFile */
export function getWebhookInfo(http: HttpGet, credential: TelegramCredential, timeoutMs: number): Promise<WebhookInfo> {
	return call(http, credential, 'getWebhookInfo', timeoutMs);
}
