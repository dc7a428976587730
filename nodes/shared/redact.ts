/**
 * Redaction of credential secrets (bot tokens, passwords, API keys, JWTs, webhook secrets) from anything
 * that leaves a transport: strings, error messages and stacks, `cause` chains and nested details.
 *
 * A `Redactor` is built from the secrets of one credential. Every occurrence of a secret is replaced by
 * `[REDACTED]`, case-insensitively, in each of the forms it can take on the way out: as is, URL-encoded
 * (`encodeURIComponent`, `encodeURI`, `+` for spaces), JSON-escaped, and Base64/Base64url (HTTP Basic
 * headers echoed by a server). Secrets shorter than `MIN_SECRET_LENGTH` (4) characters are ignored: they
 * cannot be told apart from ordinary text.
 *
 * The search is a plain multi-string search over the lower-cased text (no regular expression is built
 * from a secret, so no secret length is too long and no secret can reach a SyntaxError). A form longer
 * than 64 characters is found by its first 64 and removed as far as the text agrees with it: a secret
 * cut short (a truncated message) is removed too. Object keys are never changed.
 *
 * Every transport also remembers its secrets process-wide (`rememberSecrets`, at most
 * `MAX_REMEMBERED` (256), only distinctive secrets: see `isDistinctiveSecret`); `ContractError` redacts
 * those in its message, details and cause, so an error built anywhere in the package cannot carry them.
 */
import { UNREADABLE } from './json';

/** What a secret is replaced with. */
export const REDACTED = '[REDACTED]';
/** Secrets shorter than this (characters) are not redacted by a credential's Redactor. */
export const MIN_SECRET_LENGTH = 4;
/** Secrets shorter than this (characters) are not remembered process-wide. */
export const MIN_REMEMBERED_LENGTH = 8;
/** How many secrets are remembered process-wide (the oldest are forgotten first). */
export const MAX_REMEMBERED = 256;
/** How deep a cause chain is copied (deeper causes are dropped). */
const MAX_CAUSES = 8;

function variants(secret: string): string[] {
	const forms = new Set<string>([secret]);
	const tryAdd = (make: () => string) => {
		try {
			forms.add(make());
		} catch {
			// a lone surrogate cannot be URI-encoded; the raw form is still matched
		}
	};
	tryAdd(() => encodeURIComponent(secret));
	tryAdd(() => encodeURIComponent(secret).replace(/%20/g, '+'));
	tryAdd(() => encodeURI(secret));
	tryAdd(() => JSON.stringify(secret).slice(1, -1));
	tryAdd(() => Buffer.from(secret, 'utf8').toString('base64'));
	tryAdd(() => Buffer.from(secret, 'utf8').toString('base64url'));
	return [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH);
}

/** Forms longer than this are found by their first `PREFIX_LENGTH` characters, then extended (see `Needle`). */
export const PREFIX_LENGTH = 64;

/**
 * Lower-cases `text` one code point at a time, without context (so a secret and a text holding it fold
 * the same way), keeping every index: a code point whose lower case has another length (like `İ`) is kept.
 */
function fold(text: string): string {
	// eslint-disable-next-line no-control-regex
	if (/^[\x00-\x7f]*$/.test(text)) return text.toLowerCase();
	let out = '';
	for (const c of text) {
		const lower = c.toLowerCase();
		out += lower.length === c.length ? lower : c;
	}
	return out;
}

/** One form of a secret, lower-cased: searched by its first `PREFIX_LENGTH` characters. */
interface Needle {
	readonly form: string;
	readonly key: string;
}

function needlesOf(secret: string): Needle[] {
	return variants(secret).map((f) => {
		const form = fold(f);
		return { form, key: form.slice(0, PREFIX_LENGTH) };
	});
}

/**
 * The ranges [start, end) of `folded` to redact: every place a needle's key occurs, extended for as long
 * as the text keeps agreeing with the whole form (so a long secret is removed whole, and a truncated copy
 * of at least its first `PREFIX_LENGTH` characters too). Plain `indexOf` searches: no regular expression
 * is ever built from a secret, so no secret can reach a SyntaxError and no size limit applies.
 */
function rangesOf(folded: string, needles: readonly Needle[]): [number, number][] {
	const ranges: [number, number][] = [];
	for (const { form, key } of needles) {
		let at = folded.indexOf(key);
		while (at !== -1) {
			let end = at + key.length;
			if (key.length < form.length) {
				let j = key.length;
				while (j < form.length && end < folded.length && folded.charCodeAt(end) === form.charCodeAt(j)) {
					end++;
					j++;
				}
			}
			ranges.push([at, end]);
			at = folded.indexOf(key, at + 1);
		}
	}
	return ranges;
}

function replaceRanges(text: string, ranges: [number, number][]): string {
	if (ranges.length === 0) return text;
	ranges.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
	let out = '';
	let from = 0;
	let [start, end] = ranges[0];
	for (let i = 1; i <= ranges.length; i++) {
		const next = ranges[i];
		if (next !== undefined && next[0] <= end) {
			if (next[1] > end) end = next[1];
			continue;
		}
		out += text.slice(from, start) + REDACTED;
		from = end;
		if (next !== undefined) [start, end] = next;
	}
	return out + text.slice(from);
}

/** A copy of an error with every secret redacted; keeps name, message, stack, code, errno, syscall, status. */
export class RedactedError extends Error {
	code?: string | number;
	errno?: number;
	syscall?: string;
	status?: number;
}

/** Redacts the secrets of one credential (see the module comment for the forms matched). */
export class Redactor {
	private readonly needles: readonly Needle[];

	/**
	 * @param secrets the credential's secret values; empty, short and non-string ones are ignored
	 * @param needles already computed forms (internal: the remembered set reuses them)
	 */
	constructor(secrets: Iterable<unknown>, needles: readonly Needle[] = []) {
		const all = [...needles];
		const seen = new Set(all.map((n) => n.form));
		for (const s of secrets) {
			if (typeof s !== 'string' || s.length < MIN_SECRET_LENGTH) continue;
			for (const n of needlesOf(s)) {
				if (seen.has(n.form)) continue;
				seen.add(n.form);
				all.push(n);
			}
		}
		this.needles = all;
	}

	/** Whether this redactor has anything to redact. */
	get active(): boolean {
		return this.needles.length > 0;
	}

	/**
	 * The string with every secret replaced by `[REDACTED]` (overlapping matches become one). Never
	 * throws: if the search fails (out of memory), the whole string is replaced by `[REDACTED]`.
	 */
	string(value: string): string {
		if (this.needles.length === 0) return value;
		try {
			return replaceRanges(value, rangesOf(fold(value), this.needles));
		} catch {
			return REDACTED;
		}
	}

	/**
	 * A deep copy of `value` with every string value redacted (object keys are kept as they are: renaming
	 * them could make two keys collide). Iterative (no recursion limit), shares repeated and cyclic
	 * references like the input; Dates, Buffers and typed arrays are kept as they are, other objects copied
	 * as plain objects (own enumerable keys). A getter that throws makes it throw.
	 * `options.dropKeys`: lower-case key names whose values become `[REDACTED]` wherever they are (e.g.
	 * `authorization`); with it the value is always copied, even when there is no secret to redact.
	 */
	value<T>(value: T, options: { dropKeys?: ReadonlySet<string> } = {}): T {
		const dropKeys = options.dropKeys;
		if (this.needles.length === 0 && (dropKeys === undefined || dropKeys.size === 0)) return value;
		const seen = new Map<object, unknown>();
		const copyOf = (v: unknown): unknown => {
			if (typeof v === 'string') return this.string(v);
			if (v === null || typeof v !== 'object') return v;
			if (seen.has(v)) return seen.get(v);
			if (v instanceof Error) {
				const copy = this.error(v);
				seen.set(v, copy);
				return copy;
			}
			if (Buffer.isBuffer(v) || ArrayBuffer.isView(v) || v instanceof Date) return v;
			const copy: Record<string, unknown> | unknown[] = Array.isArray(v) ? [] : {};
			seen.set(v, copy);
			work.push([v as Record<string, unknown>, copy as Record<string, unknown>]);
			return copy;
		};
		const work: [Record<string, unknown>, Record<string, unknown>][] = [];
		const root = copyOf(value);
		while (work.length > 0) {
			const [from, to] = work.pop()!;
			let keys: string[] = [];
			try {
				keys = Object.keys(from);
			} catch {
				// a proxy whose ownKeys trap throws: copied as an empty object
			}
			for (const key of keys) {
				let item: unknown;
				try {
					item = dropKeys?.has(key.toLowerCase()) ? REDACTED : copyOf(from[key]);
				} catch {
					item = UNREADABLE; // a getter (or proxy trap) that throws: the copy says so instead of failing
				}
				Object.defineProperty(to, key, { value: item, enumerable: true, writable: true, configurable: true });
			}
		}
		return root as T;
	}

	/**
	 * A RedactedError standing for `error`: name, message and stack redacted, its `cause` chain copied
	 * the same way (up to 8 deep); other properties (a request, its headers, an `input` URL) are dropped.
	 */
	error(error: unknown, depth = 0): RedactedError {
		if (!(error instanceof Error)) {
			const copy = new RedactedError(this.string(typeof error === 'string' ? error : safeString(error)));
			copy.name = 'Error';
			return copy;
		}
		const source = error as Error & {
			code?: unknown;
			errno?: unknown;
			syscall?: unknown;
			status?: unknown;
			cause?: unknown;
		};
		const cause = depth < MAX_CAUSES && source.cause !== undefined ? this.error(source.cause, depth + 1) : undefined;
		const copy = new RedactedError(
			this.string(String(source.message ?? '')),
			cause === undefined ? undefined : { cause },
		);
		copy.name = this.string(String(source.name ?? 'Error'));
		copy.stack = this.string(String(source.stack ?? `${copy.name}: ${copy.message}`));
		if (typeof source.code === 'string' || typeof source.code === 'number')
			copy.code = typeof source.code === 'string' ? this.string(source.code) : source.code;
		if (typeof source.errno === 'number') copy.errno = source.errno;
		if (typeof source.syscall === 'string') copy.syscall = source.syscall;
		if (typeof source.status === 'number') copy.status = source.status;
		return copy;
	}

	/** `name: message` of anything thrown, redacted (for error messages that quote a cause). */
	describe(error: unknown): string {
		if (error instanceof Error) return this.string(`${error.name}: ${error.message}`);
		return this.string(safeString(error));
	}
}

function safeString(value: unknown): string {
	try {
		return String(value);
	} catch {
		return Object.prototype.toString.call(value);
	}
}

/**
 * Appended to the message of a 3xx answer: a request carrying a secret (an API key header, a token in
 * the path) never follows a redirect, since fetch would send custom headers such as `x-goog-api-key` on
 * to another host.
 */
export const REDIRECT_HINT =
	' (a redirect: requests carrying a credential do not follow redirects; set the base URL to the final address)';

/** A Redactor with nothing to redact. */
export const NO_SECRETS = new Redactor([]);

/** Remembered secrets and their forms, oldest first. */
const remembered = new Map<string, readonly Needle[]>();
let rememberedRedactor: Redactor = NO_SECRETS;

/**
 * Whether a secret is distinctive enough to be redacted from every error of the process: at least
 * `MIN_REMEMBERED_LENGTH` (8) characters, from at least two of the classes lower-case letter, upper-case
 * letter, digit, other; and, when it is letters only, at least 16 characters. An ordinary word
 * (`postgres`, `Password`) is not remembered, so one tenant's credential cannot mangle another's errors;
 * it is still redacted by its own credential's Redactor.
 */
export function isDistinctiveSecret(secret: unknown): secret is string {
	if (typeof secret !== 'string' || secret.length < MIN_REMEMBERED_LENGTH) return false;
	const lower = /\p{Ll}/u.test(secret);
	const upper = /\p{Lu}/u.test(secret);
	const digit = /\p{Nd}/u.test(secret);
	const other = /[^\p{Ll}\p{Lu}\p{Nd}]/u.test(secret);
	if (Number(lower) + Number(upper) + Number(digit) + Number(other) < 2) return false;
	const lettersOnly = !/[^\p{L}]/u.test(secret);
	return !lettersOnly || secret.length >= 16;
}

/** Remembers secrets process-wide for `rememberedSecrets` (only distinctive ones: `isDistinctiveSecret`). */
export function rememberSecrets(secrets: Iterable<unknown>): void {
	let changed = false;
	for (const s of secrets) {
		if (!isDistinctiveSecret(s)) continue;
		const known = remembered.get(s);
		if (known !== undefined) {
			remembered.delete(s);
			remembered.set(s, known);
			continue;
		}
		remembered.set(s, needlesOf(s));
		changed = true;
		if (remembered.size > MAX_REMEMBERED) remembered.delete(remembered.keys().next().value as string);
	}
	if (changed) rememberedRedactor = new Redactor([], [...remembered.values()].flat());
}

/** The Redactor of every remembered secret. */
export function rememberedSecrets(): Redactor {
	return rememberedRedactor;
}

/** How many credentials' Redactors `redactorFor` keeps. */
const MAX_CACHED = 64;
const cached = new Map<string, Redactor>();

/**
 * A Redactor for a credential's secrets, which are also remembered process-wide (when distinctive).
 * The same secrets give the same (cached) Redactor.
 */
export function redactorFor(secrets: Iterable<unknown>): Redactor {
	const list = [...secrets];
	rememberSecrets(list);
	const id = JSON.stringify(list.map((s) => (typeof s === 'string' ? s : null)));
	let redactor = cached.get(id);
	if (redactor === undefined) {
		redactor = new Redactor(list);
		if (cached.size >= MAX_CACHED) cached.delete(cached.keys().next().value as string);
	}
	cached.delete(id);
	cached.set(id, redactor);
	return redactor;
}
