/**
 * Exactness helpers for the raw webhook body (no I/O, never throw on their documented input):
 *  - `numberTokens`: the number tokens of a JSON text as written (so an id beyond 2^53, already rounded
 *    by JSON.parse, is still read exactly);
 *  - `exactInteger`: the integer a number token denotes, as decimal text, with its int8 range;
 *  - `wtf8`: the bytes of a JavaScript string, UTF-8 for every well-formed string and lossless for a lone
 *    surrogate (WTF-8), so a text body is kept exactly even when it cannot be UTF-8.
 */
import { INT8_MAX, INT8_MIN } from '../../shared/contracts/ids';

/** The key of a path in `numberTokens`' map: the JSON text of the path (array indices as numbers). */
export function pathKey(path: ReadonlyArray<string | number>): string {
	return JSON.stringify(path);
}

interface Frame {
	array: boolean;
	key: string | null;
	index: number;
}

/** Index just past the closing quote of the string starting at `start` (text[start] === '"'). */
function endOfString(text: string, start: number): number {
	let i = start + 1;
	for (;;) {
		const quote = text.indexOf('"', i);
		if (quote < 0) return text.length;
		let backslashes = 0;
		for (let j = quote - 1; j > start && text.charCodeAt(j) === 92; j--) backslashes++;
		if (backslashes % 2 === 0) return quote + 1;
		i = quote + 1;
	}
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);

/** Keys longer than this (as written, quotes included) are not recorded by `numberTokens`. */
export const MAX_TOKEN_KEY_LENGTH = 256;

/**
 * The number tokens of a JSON text whose path has at most `maxDepth` segments, keyed by `pathKey(path)`
 * (object keys as strings, array indices as numbers; a repeated key keeps its last value, as JSON.parse
 * and PostgreSQL do). The text must be valid JSON (check with JSON.parse first); iterative, so any depth
 * is fine. Linear in the text: a number under a key longer than MAX_TOKEN_KEY_LENGTH is not recorded
 * (no Telegram id lives there), so each recorded path costs at most maxDepth short keys.
 */
export function numberTokens(text: string, maxDepth = 4): Map<string, string> {
	const tokens = new Map<string, string>();
	const stack: Frame[] = [];
	let expectKey = false;
	let i = 0;
	while (i < text.length) {
		const c = text[i];
		if (WHITESPACE.has(c)) {
			i++;
		} else if (c === '{' || c === '[') {
			stack.push({ array: c === '[', key: null, index: 0 });
			expectKey = c === '{';
			i++;
		} else if (c === '}' || c === ']') {
			stack.pop();
			expectKey = false;
			i++;
		} else if (c === ',') {
			const top = stack[stack.length - 1];
			if (top?.array) top.index++;
			else expectKey = true;
			i++;
		} else if (c === ':') {
			expectKey = false;
			i++;
		} else if (c === '"') {
			const end = endOfString(text, i);
			const top = stack[stack.length - 1];
			if (expectKey && top && !top.array && stack.length <= maxDepth) {
				top.key = end - i <= MAX_TOKEN_KEY_LENGTH ? (JSON.parse(text.slice(i, end)) as string) : null;
			}
			i = end;
		} else {
			let end = i + 1;
			while (end < text.length && /[-+.eE0-9a-z]/.test(text[end])) end++;
			const recordable = stack.length <= maxDepth && stack.every((frame) => frame.array || frame.key !== null);
			if ((c === '-' || (c >= '0' && c <= '9')) && recordable) {
				tokens.set(
					pathKey(stack.map((frame) => (frame.array ? frame.index : (frame.key as string)))),
					text.slice(i, end),
				);
			}
			i = end;
		}
	}
	return tokens;
}

export { INT8_MIN, INT8_MAX };

/** What a JSON number token denotes: an integer (exact decimal text, and whether it fits int8) or not. */
export type ExactInteger = { integer: true; text: string; int8: boolean } | { integer: false };

const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([-+]?\d+))?$/;

/**
 * The exact value of a JSON number token when it is an integer (`1`, `-7`, `1.0`, `1e3`, `12.5e1`),
 * computed in decimal (no rounding). Values far beyond int8 (more than 20 digits) are reported as
 * integers outside int8 without being expanded, so `1e1000000` costs nothing.
 */
export function exactInteger(token: string): ExactInteger {
	const match = NUMBER.exec(token);
	if (!match) return { integer: false };
	const [, sign, whole, fraction = '', exponentText = '0'] = match;
	let digits = (whole + fraction).replace(/^0+/, '');
	if (digits === '') return { integer: true, text: '0', int8: true };
	const exponent = Number(exponentText) - fraction.length;
	if (exponent < 0) {
		const dropped = digits.slice(Math.max(0, digits.length + exponent));
		if (-exponent > digits.length || /[1-9]/.test(dropped)) return { integer: false };
		digits = digits.slice(0, digits.length + exponent);
	} else if (digits.length + exponent > 20) {
		return { integer: true, text: `${sign}${digits}e${exponent}`, int8: false };
	} else {
		digits += '0'.repeat(exponent);
	}
	const value = BigInt(`${sign}${digits}`);
	return { integer: true, text: value.toString(), int8: value >= INT8_MIN && value <= INT8_MAX };
}

/** The bytes of `text`: UTF-8, with a lone surrogate encoded as its own 3-byte sequence (WTF-8). */
export function wtf8(text: string): Buffer {
	if (!/[\uD800-\uDFFF]/.test(text)) return Buffer.from(text, 'utf8');
	const bytes: number[] = [];
	for (let i = 0; i < text.length; i++) {
		let code = text.charCodeAt(i);
		const next = text.charCodeAt(i + 1);
		if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
			code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
			i++;
		}
		if (code < 0x80) bytes.push(code);
		else if (code < 0x800) bytes.push(0xc0 | (code >> 6), 0x80 | (code & 63));
		else if (code < 0x10000) bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
		else bytes.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 63), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
	}
	return Buffer.from(bytes);
}

/** True when `text` has a lone UTF-16 surrogate (one PostgreSQL cannot store in text or jsonb). */
export function hasLoneSurrogate(text: string): boolean {
	return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

type Pending = { text: string } | { value: unknown; key?: string; first: boolean };

function primitiveJson(value: unknown): string | undefined {
	if (value === null) return 'null';
	switch (typeof value) {
		case 'string':
		case 'boolean':
			return JSON.stringify(value);
		case 'number':
			return Number.isFinite(value) ? JSON.stringify(value) : 'null';
		case 'object':
			return undefined;
		default:
			return '\u0000skip';
	}
}

/**
 * JSON.stringify for plain JSON data of any depth (JSON.stringify overflows the stack at a few thousand
 * levels): same output for null, booleans, finite numbers, strings, arrays and objects (own enumerable
 * keys; `undefined`, functions and symbols skipped in objects, `null` in arrays). `toJSON` is not called.
 */
export function stringifyDeep(root: unknown): string {
	const out: string[] = [];
	const work: Pending[] = [{ value: root, first: true }];
	while (work.length) {
		const next = work.pop() as Pending;
		if ('text' in next) {
			out.push(next.text);
			continue;
		}
		const { value, key, first } = next;
		const prefix = (first ? '' : ',') + (key === undefined ? '' : `${JSON.stringify(key)}:`);
		const primitive = primitiveJson(value);
		if (primitive !== undefined) {
			out.push(prefix + (primitive === '\u0000skip' ? 'null' : primitive));
			continue;
		}
		const isArray = Array.isArray(value);
		out.push(prefix + (isArray ? '[' : '{'));
		work.push({ text: isArray ? ']' : '}' });
		const children: Pending[] = [];
		if (isArray) {
			(value as unknown[]).forEach((entry, index) => children.push({ value: entry, first: index === 0 }));
		} else {
			for (const [entryKey, entry] of Object.entries(value as Record<string, unknown>)) {
				if (primitiveJson(entry) === '\u0000skip') continue;
				children.push({ value: entry, key: entryKey, first: children.length === 0 });
			}
		}
		for (let i = children.length - 1; i >= 0; i--) work.push(children[i]);
	}
	return out.join('');
}
