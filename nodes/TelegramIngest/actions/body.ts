/**
 * Classifies one webhook body before anything is written (pure, never throws): either a Telegram update
 * that PostgreSQL can store normally (raw.telegram_updates, with its ids as exact int8 text), or a body
 * to keep in raw.telegram_quarantine, with the reason and the HTTP status to answer.
 *
 * "Can never be stored normally" means, checked in this order (the first that applies is the reason):
 *  200 `too_large`: more than MAX_BODY_BYTES (1 MiB) of body — checked first, on the byte count alone,
 *   before any decoding or parsing (so a 16 MiB body costs a sha256, not a parse); its update_id is not
 *   read (null), so a re-delivery is recognised by its bytes only;
 *  400 (not a Telegram update; Telegram never sends these):
 *   - `not_json`: the bytes are not UTF-8, or the text is not JSON (RFC 8259; a BOM or an empty body
 *     included);
 *   - `not_object`: JSON, but not an object;
 *   - `invalid_update`: an object that is not an Update (see TelegramUpdate: update_id, one update field…);
 *  200 (a real update that jsonb/bigint cannot hold; answered 2xx so Telegram stops re-sending it):
 *   - `too_deep`: objects/arrays nested more than MAX_DEPTH (64) levels (the update object is level 1);
 *   - `nul_character`: a string or key holding U+0000 (jsonb refuses `\u0000`, SQLSTATE 22P05);
 *   - `lone_surrogate`: a string or key holding a lone UTF-16 surrogate (jsonb refuses it, 22P02);
 *   - `id_not_int8`: update_id, chat.id, message_id or from.id (the ids raw.telegram_update_keys
 *     indexes) is an integer outside int8 (-2^63 … 2^63-1), or a number that is not exactly an integer
 *     as written (`1.0000000000000000001`), or, when only the parsed JSON is available (no raw body),
 *     beyond ±2^53 (already rounded by JSON.parse, so not exact).
 *  A 22xxx/54xxx error of the insert itself (e.g. a number beyond PostgreSQL's numeric range) is the
 *  safety net: `rejected_by_database`, 200 (see ingest.operation.ts).
 */
import { createHash } from 'node:crypto';
import { TextDecoder } from 'node:util';
import { keyPaths, TelegramUpdate, valueAt, type IdField } from '../../shared/contracts/telegramUpdate';
import { isRecord } from '../../shared/json';
import { exactInteger, hasLoneSurrogate, numberTokens, pathKey, stringifyDeep, wtf8 } from './exactJson';
import { replaceUnstorable } from '../../shared/sanitize';

/** Bodies above this many bytes are quarantined (`too_large`). Telegram updates are a few KiB. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Objects/arrays nested deeper than this are quarantined (`too_deep`); the update object is level 1. */
export const MAX_DEPTH = 64;

export type QuarantineReason =
	| 'not_json'
	| 'not_object'
	| 'invalid_update'
	| 'too_large'
	| 'too_deep'
	| 'nul_character'
	| 'lone_surrogate'
	| 'id_not_int8'
	| 'rejected_by_database';

/** Reasons answered 400 (the body is not a Telegram update); every other reason is answered 200. */
export const REJECTED_REASONS: ReadonlySet<QuarantineReason> = new Set(['not_json', 'not_object', 'invalid_update']);

/** The body as kept: its exact bytes, where they came from, and their sha256 (hex). */
export interface Body {
	/** raw: the webhook's bytes as received; text: the string given (WTF-8); json: the parsed JSON n8n gave, re-serialised. */
	source: 'raw' | 'text' | 'json';
	bytes: Buffer;
	sha256: string;
}

/** The indexed ids of an update as exact decimal text (int8), for the bigint columns. */
export interface ExactKeys {
	update_id: string;
	update_type: string;
	chat_id: string | null;
	message_id: string | null;
	from_id: string | null;
}

export type Classified =
	| { kind: 'update'; body: Body; text: string; update: TelegramUpdate; keys: ExactKeys }
	| {
			kind: 'quarantine';
			body: Body;
			reason: QuarantineReason;
			/** 400 for REJECTED_REASONS, else 200. */
			status: 200 | 400;
			/** Why, naming the field (safe to store: no NUL, no lone surrogate, at most 500 characters). */
			message: string;
			/** Where in the update (keys joined with "."), when known. */
			path: string | null;
			/** update_id as exact int8 text when the body has one that is readable, else null (dedup key). */
			update_id: string | null;
	  };

/** Replaces NUL and lone surrogates with U+FFFD and cuts at `max` characters: text PostgreSQL accepts. */
export function safeText(text: string, max = 500): string {
	const clean = replaceUnstorable(text).text;
	return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

function showPath(path: ReadonlyArray<string | number>): string {
	if (path.length === 0) return '(update)';
	const shown = path.slice(0, 8).map(String).join('.');
	return safeText(path.length > 8 ? `${shown}.…(${path.length} levels)` : shown, 200);
}

interface Source {
	source: Body['source'];
	bytes: Buffer;
	/** The text to parse, or an error message when the bytes are not text. */
	text: string | { error: string };
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function sourceOf(raw: Buffer | undefined, update: unknown): Source {
	if (raw && raw.length > MAX_BODY_BYTES)
		return { source: 'raw', bytes: raw, text: { error: 'not decoded: too large' } };
	if (raw) {
		try {
			return { source: 'raw', bytes: raw, text: UTF8.decode(raw) };
		} catch {
			return { source: 'raw', bytes: raw, text: { error: 'body is not UTF-8' } };
		}
	}
	if (typeof update === 'string') return { source: 'text', bytes: wtf8(update), text: update };
	let text: string | undefined;
	try {
		text = JSON.stringify(update);
	} catch (error) {
		text = error instanceof RangeError ? stringifyDeep(update) : undefined;
	}
	if (text === undefined) return { source: 'json', bytes: Buffer.alloc(0), text: { error: 'body is not JSON data' } };
	return { source: 'json', bytes: wtf8(text), text };
}

type Finding = { reason: 'too_deep' | 'nul_character' | 'lone_surrogate'; path: Array<string | number> };

function badString(text: string): Finding['reason'] | null {
	if (text.includes('\u0000')) return 'nul_character';
	if (hasLoneSurrogate(text)) return 'lone_surrogate';
	return null;
}

/** A value still to inspect: its key under its parent (`key`) and the parent's entry, so a path is built only when found. */
interface Pending {
	value: unknown;
	depth: number;
	key: string | number | null;
	parent: Pending | null;
}

/** The keys from the root to `entry` (then `last`, when given). */
function pathTo(entry: Pending | null, last?: string): Array<string | number> {
	const path: Array<string | number> = last === undefined ? [] : [last];
	for (let at = entry; at !== null && at.key !== null; at = at.parent) path.push(at.key);
	return path.reverse();
}

/** The first string/key jsonb cannot hold, or the first container nested beyond MAX_DEPTH (iterative). */
function inspect(root: unknown): Finding | null {
	const stack: Pending[] = [{ value: root, depth: 1, key: null, parent: null }];
	while (stack.length) {
		const entry = stack.pop() as Pending;
		const { value, depth } = entry;
		if (typeof value === 'string') {
			const reason = badString(value);
			if (reason) return { reason, path: pathTo(entry) };
			continue;
		}
		if (value === null || typeof value !== 'object') continue;
		if (depth > MAX_DEPTH) return { reason: 'too_deep', path: pathTo(entry) };
		if (Array.isArray(value)) {
			value.forEach((item, index) => stack.push({ value: item, depth: depth + 1, key: index, parent: entry }));
			continue;
		}
		for (const [key, item] of Object.entries(value)) {
			const reason = badString(key);
			if (reason) return { reason, path: pathTo(entry, key) };
			stack.push({ value: item, depth: depth + 1, key, parent: entry });
		}
	}
	return null;
}

type IdRead = { ok: true; text: string | null } | { ok: false; message: string };

/** The exact int8 text of the number at `path`, null when there is no integer there. */
function readId(parsed: unknown, tokens: Map<string, string>, path: string[] | null, source: Body['source']): IdRead {
	if (!path) return { ok: true, text: null };
	const value = valueAt(parsed, path);
	if (typeof value !== 'number' || !Number.isInteger(value)) return { ok: true, text: null };
	const token = tokens.get(pathKey(path)) ?? String(value);
	const exact = exactInteger(token);
	// the path is shown only in a refusal (most updates have none)
	if (!exact.integer)
		return { ok: false, message: `${showPath(path)} is ${safeText(token, 60)}, not exactly an integer` };
	if (!exact.int8)
		return { ok: false, message: `${showPath(path)} is ${safeText(exact.text, 60)}, outside int8 (-2^63 … 2^63-1)` };
	if (source === 'json' && !Number.isSafeInteger(value)) {
		return {
			ok: false,
			message: `${showPath(path)} is beyond 2^53 and was parsed before this node: not exact (give Telegram Ingest the raw body)`,
		};
	}
	return { ok: true, text: exact.text };
}

/**
 * Classifies one body. `raw` (the webhook's exact bytes) wins; without it, `update` is used: a string is
 * parsed as JSON text, anything else is taken as the already-parsed body.
 */
export function classifyBody(raw: Buffer | undefined, update: unknown): Classified {
	const src = sourceOf(raw, update);
	const body: Body = {
		source: src.source,
		bytes: src.bytes,
		sha256: createHash('sha256').update(src.bytes).digest('hex'),
	};
	const quarantine = (
		reason: QuarantineReason,
		message: string,
		path: Array<string | number> | null,
		updateId: string | null = null,
	): Classified => ({
		kind: 'quarantine',
		body,
		reason,
		status: REJECTED_REASONS.has(reason) ? 400 : 200,
		message: safeText(message),
		path: path ? showPath(path) : null,
		update_id: updateId,
	});
	if (body.bytes.length > MAX_BODY_BYTES) {
		return quarantine(
			'too_large',
			`update quarantined: body is ${body.bytes.length} bytes, more than ${MAX_BODY_BYTES}`,
			null,
		);
	}
	if (typeof src.text !== 'string') return quarantine('not_json', `invalid Telegram update: ${src.text.error}`, null);
	const text = src.text;
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch (error) {
		return quarantine('not_json', `invalid Telegram update: body is not JSON (${(error as Error).message})`, null);
	}
	if (!isRecord(parsed))
		return quarantine(
			'not_object',
			`invalid Telegram update: body is JSON but not an object (${Array.isArray(parsed) ? 'array' : typeof parsed})`,
			null,
		);

	const tokens = numberTokens(text, 4);
	const updateIdRead = readId(parsed, tokens, ['update_id'], src.source);
	const updateId =
		updateIdRead.ok && updateIdRead.text !== null && !updateIdRead.text.startsWith('-') ? updateIdRead.text : null;

	const checked = TelegramUpdate.safeParse(parsed);
	if (!checked.success) {
		const issues = checked.error.issues.map((issue) => `${showPath(issue.path)}: ${issue.message}`);
		return quarantine(
			'invalid_update',
			`invalid Telegram update: ${issues.join('; ')}`,
			checked.error.issues[0]?.path ?? null,
			updateId,
		);
	}
	const finding = inspect(parsed);
	if (finding) {
		const what = {
			too_deep: `nested more than ${MAX_DEPTH} levels`,
			nul_character: 'a NUL character (U+0000), which jsonb cannot store',
			lone_surrogate: 'a lone UTF-16 surrogate, which jsonb cannot store',
		}[finding.reason];
		return quarantine(
			finding.reason,
			`update quarantined: ${showPath(finding.path)} has ${what}`,
			finding.path,
			updateId,
		);
	}
	const { update_type, paths } = keyPaths(checked.data);
	const ids: Partial<Record<IdField, string | null>> = {};
	for (const name of ['update_id', 'chat_id', 'message_id', 'from_id'] as const) {
		const read = readId(parsed, tokens, paths[name], src.source);
		if (!read.ok) return quarantine('id_not_int8', `update quarantined: ${read.message}`, paths[name], updateId);
		ids[name] = read.text;
	}
	return {
		kind: 'update',
		body,
		text,
		update: checked.data,
		keys: {
			update_id: ids.update_id as string,
			update_type,
			chat_id: ids.chat_id ?? null,
			message_id: ids.message_id ?? null,
			from_id: ids.from_id ?? null,
		},
	};
}
