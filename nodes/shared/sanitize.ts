/**
 * Makes any value storable in PostgreSQL (`text`, `jsonb`) and in an n8n item, and bounded in size, so a
 * hostile input can neither lose a row nor blow the stack or the heap (issue 10 §1, seed 002 §1.3).
 *
 * PostgreSQL refuses in `jsonb` a `\u0000` (22P05) and a lone UTF-16 surrogate (22P02), and in `text` a NUL
 * byte (22021); `JSON.stringify` overflows the stack at a few thousand nesting levels. A `Sanitizer`:
 *  - replaces NUL and lone surrogates by U+FFFD in strings AND object keys (a valid surrogate pair is kept);
 *  - keeps at most `MAX_STRING_LENGTH` UTF-16 code units of a string (the rest is named by a marker);
 *  - keeps at most `maxDepth` levels of nested objects/arrays; a deeper container becomes a marker string;
 *  - charges every value it emits to a byte budget (UTF-8 bytes of the JSON text it will serialise to) and
 *    stops copying, cleanly, when the budget is spent — so the work done is bounded by the budget, whatever
 *    the width of the input;
 *  - turns what JSON cannot carry into JSON: NaN/±Infinity → null, BigInt → decimal string, Date → ISO
 *    string, an Error → `{ name, message, ...own fields }`, a cycle → `"[Circular]"`; `undefined`, functions
 *    and symbols are dropped from objects (null in arrays), as `JSON.stringify` does;
 *  - keeps a `__proto__` key as an own data property (never a prototype).
 * It records what it did in `sanitized` (something was replaced or converted) and `truncated` (something
 * was cut). The walk recurses at most `maxDepth` levels, so it never overflows the stack. Never throws.
 */
import { setOwn, UNREADABLE } from './json';

/** Levels of nested objects/arrays kept below a sanitised value (the value itself is level 1). */
export const MAX_DEPTH = 64;
/** Budget of `error.details`, in bytes: the UTF-8 length of its JSON text (256 KiB). */
export const MAX_DETAILS_BYTES = 256 * 1024;
/** UTF-16 code units kept of one string (a message, a value, a key): 16 Ki; the rest is cut with a marker. */
export const MAX_STRING_LENGTH = 16 * 1024;
/** UTF-16 code units kept of an invalid id or number moved to text (`invalid_*` fields): 1 Ki. */
export const MAX_ID_TEXT_LENGTH = 1024;
/** What replaces a NUL or a lone surrogate. */
export const REPLACEMENT_CHARACTER = '\ufffd';

// NUL is exactly what these match (PostgreSQL refuses it), hence the control character.
// eslint-disable-next-line no-control-regex
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// eslint-disable-next-line no-control-regex
const MAYBE_UNSTORABLE = /[\u0000\ud800-\udfff]/;
/** Returned by a walk step when the budget cannot take the value: the container stops there. */
const SPENT = Symbol('spent');

/** `value` with every NUL and lone UTF-16 surrogate replaced by U+FFFD; `replaced` says whether any was. */
export function replaceUnstorable(value: string): { text: string; replaced: boolean } {
	if (!MAYBE_UNSTORABLE.test(value)) return { text: value, replaced: false };
	const text = value.replace(UNSTORABLE, REPLACEMENT_CHARACTER);
	return { text, replaced: text !== value };
}

/** UTF-8 bytes of `JSON.stringify(value)` for a string. */
export function jsonBytes(value: string): number {
	return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

export interface SanitizerOptions {
	/** Byte budget of everything charged to this sanitizer (default: unbounded). */
	budgetBytes?: number;
	/** Levels of nesting kept (default MAX_DEPTH). */
	maxDepth?: number;
	/** Code units kept of one string (default MAX_STRING_LENGTH). */
	maxStringLength?: number;
}

/** One sanitizer per item: its budget and its flags are shared by every value it cleans. */
export class Sanitizer {
	/** True once a character was replaced or a value converted (NaN, BigInt, cycle, invalid id). */
	sanitized = false;
	/** True once something was cut (string length, depth, budget). */
	truncated = false;
	/** Bytes charged so far. */
	used = 0;
	private readonly budget: number;
	private readonly maxDepth: number;
	private readonly maxString: number;
	private spent = false;

	constructor(options: SanitizerOptions = {}) {
		this.budget = options.budgetBytes ?? Number.POSITIVE_INFINITY;
		this.maxDepth = options.maxDepth ?? MAX_DEPTH;
		this.maxString = options.maxStringLength ?? MAX_STRING_LENGTH;
	}

	/**
	 * A storable string: NUL/lone surrogates replaced, at most `maxLength` code units kept (plus a marker
	 * naming the original length). Not charged to the budget unless `charge` is set (then always taken).
	 */
	text(value: string, maxLength = this.maxString, charge = false): string {
		let kept = value;
		if (value.length > maxLength) {
			let end = maxLength;
			const last = value.charCodeAt(end - 1);
			if (last >= 0xd800 && last <= 0xdbff) end--; // do not split a surrogate pair
			kept = `${value.slice(0, end)}…[truncated: ${value.length} characters]`;
			this.truncated = true;
		}
		const { text, replaced } = replaceUnstorable(kept);
		if (replaced) this.sanitized = true;
		if (charge) this.used += jsonBytes(text);
		return text;
	}

	/**
	 * Any value as text, for an id or a number that does not fit its column (`invalid_*` fields): strings
	 * cleaned, numbers and BigInts in their decimal form (NaN → "NaN"), anything else as the JSON text of its
	 * sanitised copy. At most `MAX_ID_TEXT_LENGTH` code units; charged to the budget; sets `sanitized`.
	 */
	asText(value: unknown): string {
		this.sanitized = true;
		let text: string;
		if (typeof value === 'string') text = value;
		else if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') text = String(value);
		else if (value === undefined || typeof value === 'function' || typeof value === 'symbol') text = String(value);
		else {
			const copy = new Sanitizer({
				budgetBytes: MAX_ID_TEXT_LENGTH * 4,
				maxDepth: 8,
				maxStringLength: MAX_ID_TEXT_LENGTH,
			}).value(value);
			text = copy === undefined ? 'undefined' : JSON.stringify(copy);
		}
		return this.text(text, MAX_ID_TEXT_LENGTH, true);
	}

	/** A JSON-safe, storable, bounded copy of `value`, charged to the budget; undefined when nothing is left. */
	value(value: unknown): unknown {
		const out = this.walk(value, 0, []);
		return out === SPENT ? undefined : out;
	}

	/** `value()` for a value that must be an object: a non-object (or nothing left) gives `{}`. */
	object(value: unknown): Record<string, unknown> {
		const out = this.value(value);
		return out !== null && typeof out === 'object' && !Array.isArray(out) ? (out as Record<string, unknown>) : {};
	}

	private charge(bytes: number): boolean {
		if (this.spent || this.used + bytes > this.budget) {
			this.spent = true;
			this.truncated = true;
			return false;
		}
		this.used += bytes;
		return true;
	}

	private chargeString(value: string): string | typeof SPENT {
		const text = this.text(value);
		const bytes = jsonBytes(text);
		if (this.charge(bytes)) return text;
		// the budget cannot take all of it: keep a prefix that fits (6 bytes per code unit is the JSON worst case)
		let room = Math.floor((this.budget - this.used - 64) / 6);
		if (room <= 0) return SPENT;
		const last = text.charCodeAt(room - 1);
		if (last >= 0xd800 && last <= 0xdbff) room--; // do not split a surrogate pair
		const prefix = `${text.slice(0, room)}…[truncated: ${value.length} characters]`;
		this.used += jsonBytes(prefix);
		return prefix;
	}

	private walk(value: unknown, depth: number, ancestors: object[]): unknown {
		if (this.spent) return SPENT;
		if (value === null) return this.charge(4) ? null : SPENT;
		switch (typeof value) {
			case 'string':
				return this.chargeString(value);
			case 'boolean':
				return this.charge(5) ? value : SPENT;
			case 'number':
				if (!Number.isFinite(value)) {
					this.sanitized = true;
					return this.charge(4) ? null : SPENT;
				}
				return this.charge(String(value).length) ? (Object.is(value, -0) ? 0 : value) : SPENT;
			case 'bigint':
				this.sanitized = true;
				return this.chargeString(value.toString());
			case 'undefined':
			case 'function':
			case 'symbol':
				return undefined;
		}
		const obj = value as object;
		if (obj instanceof Date)
			return Number.isNaN(obj.getTime()) ? this.walk(null, depth, ancestors) : this.chargeString(obj.toISOString());
		if (ancestors.includes(obj)) {
			this.sanitized = true;
			return this.chargeString('[Circular]');
		}
		if (depth >= this.maxDepth) {
			this.truncated = true;
			return this.chargeString(`[truncated: more than ${this.maxDepth} levels of nesting]`);
		}
		if (!this.charge(2)) return SPENT;
		ancestors.push(obj);
		try {
			return Array.isArray(obj) || ArrayBuffer.isView(obj)
				? this.walkArray(obj as ArrayLike<unknown>, depth, ancestors)
				: this.walkObject(obj, depth, ancestors);
		} finally {
			ancestors.pop();
		}
	}

	private walkArray(list: ArrayLike<unknown>, depth: number, ancestors: object[]): unknown[] {
		const out: unknown[] = [];
		const length = list.length;
		for (let i = 0; i < length; i++) {
			if (!this.charge(1)) break;
			const entry = this.walk(read(list as unknown as Record<number, unknown>, i), depth + 1, ancestors);
			if (entry === SPENT) break;
			out.push(entry === undefined ? null : entry);
		}
		return out;
	}

	private walkObject(obj: object, depth: number, ancestors: object[]): Record<string, unknown> {
		const out: Record<string, unknown> = {};
		let keys: string[];
		try {
			keys = Object.keys(obj);
		} catch {
			this.sanitized = true;
			return out;
		}
		if (obj instanceof Error) keys = ['name', 'message', ...keys.filter((k) => k !== 'name' && k !== 'message')];
		// Keys that clean to the same name are kept as `name`, `name~2`, `name~3` …: the next free suffix per
		// cleaned name is remembered, so n colliding keys cost O(n) work, not O(n²).
		const nextSuffix = new Map<string, number>();
		for (const key of keys) {
			if (this.spent) break;
			const raw = read(obj as Record<string, unknown>, key);
			if (raw === undefined || typeof raw === 'function' || typeof raw === 'symbol') continue;
			const cleaned = this.text(key);
			let name = cleaned;
			if (Object.prototype.hasOwnProperty.call(out, name)) {
				let n = nextSuffix.get(cleaned) ?? 2;
				while (Object.prototype.hasOwnProperty.call(out, `${cleaned}~${n}`)) n++;
				name = `${cleaned}~${n}`;
				nextSuffix.set(cleaned, n + 1);
			}
			if (!this.charge(jsonBytes(name) + 2)) break;
			const entry = this.walk(raw, depth + 1, ancestors);
			if (entry === SPENT) break;
			setOwn(out, name, entry);
		}
		return out;
	}
}

/** Reads a property; a getter that throws gives a marker instead of an exception. */
function read(obj: Record<string | number, unknown>, key: string | number): unknown {
	try {
		return obj[key];
	} catch {
		return UNREADABLE;
	}
}

/**
 * One-shot form for other nodes: a storable, bounded copy of `value` and what was done to it.
 * @param options budget (default MAX_DETAILS_BYTES), depth (MAX_DEPTH) and string length (MAX_STRING_LENGTH)
 */
export function sanitizeJson(
	value: unknown,
	options: SanitizerOptions = {},
): { value: unknown; sanitized: boolean; truncated: boolean } {
	const sanitizer = new Sanitizer({ budgetBytes: MAX_DETAILS_BYTES, ...options });
	const out = sanitizer.value(value);
	return { value: out === undefined ? null : out, sanitized: sanitizer.sanitized, truncated: sanitizer.truncated };
}

/**
 * Where `value` (JSON-like: strings, arrays, plain objects) holds a string or key PostgreSQL cannot store
 * (NUL, a lone UTF-16 surrogate): the path of the first one found (`""` for `value` itself, `.key`,
 * `[i]`), or null when all of it is storable. Iterative, so deep nesting does not overflow the stack.
 */
export function unstorablePath(value: unknown): string | null {
	const stack: Array<[unknown, string]> = [[value, '']];
	while (stack.length > 0) {
		const [current, path] = stack.pop()!;
		if (typeof current === 'string') {
			if (MAYBE_UNSTORABLE.test(current) && replaceUnstorable(current).replaced) return path;
		} else if (Array.isArray(current)) {
			current.forEach((item, i) => stack.push([item, `${path}[${i}]`]));
		} else if (current !== null && typeof current === 'object') {
			for (const [key, item] of Object.entries(current)) {
				if (MAYBE_UNSTORABLE.test(key) && replaceUnstorable(key).replaced) return `${path}.${key}`;
				stack.push([item, `${path}.${key}`]);
			}
		}
	}
	return null;
}
