/**
 * Makes any value safe to put in an n8n item and a jsonb column: drops `undefined` and functions,
 * turns BigInt into a string, Dates into ISO strings, Errors into `{ name, message, ...own fields }`,
 * and cuts cycles (`"[Circular]"`). Objects stay objects: nothing is stringified (seed 002 §3.1). A
 * `__proto__` key stays an own data property. Recursive and unbounded: for input that may be hostile
 * (NUL, lone surrogates, deep nesting, huge strings) use `Sanitizer` / `sanitizeJson` of ./sanitize.
 */
export function toJsonSafe(value: unknown, seen: WeakSet<object> = new WeakSet()): unknown {
	if (value === null) return null;
	switch (typeof value) {
		case 'string':
		case 'boolean':
			return value;
		case 'number':
			return Number.isFinite(value) ? value : null;
		case 'bigint':
			return value.toString();
		case 'undefined':
		case 'function':
		case 'symbol':
			return undefined;
	}
	if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
	const obj = value as object;
	if (seen.has(obj)) return '[Circular]';
	seen.add(obj);
	try {
		if (Array.isArray(obj)) {
			return obj.map((entry) => {
				const safe = toJsonSafe(entry, seen);
				return safe === undefined ? null : safe;
			});
		}
		const out: Record<string, unknown> = {};
		if (obj instanceof Error) {
			out.name = obj.name;
			out.message = obj.message;
		}
		for (const [key, entry] of Object.entries(obj)) {
			const safe = toJsonSafe(entry, seen);
			if (safe !== undefined) setOwn(out, key, safe);
		}
		return out;
	} finally {
		seen.delete(obj);
	}
}

/** `toJsonSafe` for a value that must end up an object (a non-object becomes `{}`). */
export function toJsonObject(value: unknown): Record<string, unknown> {
	const safe = toJsonSafe(value);
	return safe !== null && typeof safe === 'object' && !Array.isArray(safe) ? (safe as Record<string, unknown>) : {};
}

/** The value at `key` of `value` when it is an object, else undefined. */
export function field(value: unknown, key: string): unknown {
	return isRecord(value) ? value[key] : undefined;
}

/** The object at `key` of `value`, or undefined when there is none. */
export function recordAt(value: unknown, key: string): Record<string, unknown> | undefined {
	const found = field(value, key);
	return isRecord(found) ? found : undefined;
}

/** True for a plain (non-array) object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
	return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Sets an own enumerable data property, `__proto__` included (a plain assignment would set the prototype). */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
	if (key === '__proto__')
		Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
	else target[key] = value;
}

/** What `readOwn` gives for a property whose getter (or proxy trap) throws. */
export const UNREADABLE = '[unreadable]';

/**
 * Shallow merge of the own enumerable properties of `sources` (later ones win), as `{ ...a, ...b }` but
 * never throwing: a getter that throws gives `UNREADABLE`, a source whose keys cannot be listed adds nothing.
 */
export function mergeOwn(...sources: Array<Record<string, unknown> | undefined>): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const source of sources) {
		if (!source) continue;
		let keys: string[];
		try {
			keys = Object.keys(source);
		} catch {
			continue;
		}
		for (const key of keys) {
			let value: unknown;
			try {
				value = source[key];
			} catch {
				value = UNREADABLE;
			}
			setOwn(out, key, value);
		}
	}
	return out;
}
