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
 * Every transport also remembers its secrets process-wide (`rememberSecrets`, at most
 * `MAX_REMEMBERED` (256), secrets of at least 8 characters); `ContractError` redacts those in its
 * message, details and cause, so an error built anywhere in the package cannot carry them either.
 */

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

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function patternOf(secrets: Iterable<string>): RegExp | null {
	const all = new Set<string>();
	for (const secret of secrets) for (const form of variants(secret)) all.add(form);
	if (all.size === 0) return null;
	// Longest first, so a form that contains another is replaced whole.
	const alternatives = [...all].sort((a, b) => b.length - a.length).map(escapeRegExp);
	return new RegExp(alternatives.join('|'), 'gi');
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
	private readonly pattern: RegExp | null;

	/** @param secrets the credential's secret values; empty, short and non-string ones are ignored */
	constructor(secrets: Iterable<unknown>) {
		const usable: string[] = [];
		for (const s of secrets) if (typeof s === 'string' && s.length >= MIN_SECRET_LENGTH) usable.push(s);
		this.pattern = patternOf(usable);
	}

	/** Whether this redactor has anything to redact. */
	get active(): boolean {
		return this.pattern !== null;
	}

	/** The string with every secret replaced by `[REDACTED]`. */
	string(value: string): string {
		if (!this.pattern) return value;
		return value.replace(this.pattern, REDACTED);
	}

	/**
	 * A deep copy of `value` with every string (and object key) redacted; errors become RedactedErrors.
	 * Iterative (no recursion limit), shares repeated and cyclic references like the input; Dates, Buffers
	 * and typed arrays are kept as they are, other objects copied as plain objects (own enumerable keys).
	 */
	value<T>(value: T): T {
		if (!this.pattern) return value;
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
			for (const key of Object.keys(from)) {
				const target = Array.isArray(to) ? key : this.string(key);
				Object.defineProperty(to, target, { value: copyOf(from[key]), enumerable: true, writable: true, configurable: true });
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
		const source = error as Error & { code?: unknown; errno?: unknown; syscall?: unknown; status?: unknown; cause?: unknown };
		const cause = depth < MAX_CAUSES && source.cause !== undefined ? this.error(source.cause, depth + 1) : undefined;
		const copy = new RedactedError(this.string(String(source.message ?? '')), cause === undefined ? undefined : { cause });
		copy.name = this.string(String(source.name ?? 'Error'));
		copy.stack = this.string(String(source.stack ?? `${copy.name}: ${copy.message}`));
		if (typeof source.code === 'string' || typeof source.code === 'number') copy.code = typeof source.code === 'string' ? this.string(source.code) : source.code;
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

/** A Redactor with nothing to redact. */
export const NO_SECRETS = new Redactor([]);

const remembered = new Set<string>();
let rememberedRedactor: Redactor = NO_SECRETS;

/** Remembers secrets process-wide for `redactRemembered` (only those of at least 8 characters). */
export function rememberSecrets(secrets: Iterable<unknown>): void {
	let changed = false;
	for (const s of secrets) {
		if (typeof s !== 'string' || s.length < MIN_REMEMBERED_LENGTH) continue;
		if (remembered.has(s)) {
			remembered.delete(s);
			remembered.add(s);
			continue;
		}
		remembered.add(s);
		changed = true;
		if (remembered.size > MAX_REMEMBERED) remembered.delete(remembered.values().next().value as string);
	}
	if (changed) rememberedRedactor = new Redactor(remembered);
}

/** The Redactor of every remembered secret. */
export function rememberedSecrets(): Redactor {
	return rememberedRedactor;
}

/** A Redactor for a credential's secrets, which are also remembered process-wide. */
export function redactorFor(secrets: Iterable<unknown>): Redactor {
	const list = [...secrets];
	rememberSecrets(list);
	return new Redactor(list);
}
