/**
 * A Telegram update made storable in PostgreSQL before Update → Process (WF20) reads it: `text` refuses a
 * NUL byte (22021) and `jsonb` a `\u0000` or a lone UTF-16 surrogate (22P05 / 22P02), so a message text
 * holding one would fail its job on every retry (a poison job, 5xx). Every such character, in any string
 * or key of the update, becomes U+FFFD (the Unicode replacement character): the rest of the text is kept
 * as sent, so the message stays recognisable, and the spot of the replaced character is marked. A valid
 * surrogate pair (an emoji) is kept. Entity offsets (UTF-16 units) stay right: one code unit for one.
 */
import { replaceUnstorable } from '../../../shared/sanitize';

/**
 * @param update the update as received (parsed JSON: objects, arrays, strings, numbers, booleans, null)
 * @returns a copy with NUL and lone surrogates replaced (the same object when there was none), and whether
 *   any was replaced. Nesting is walked with an explicit stack, so any depth is safe.
 */
export function storableUpdate<T>(update: T): { update: T; replaced: boolean } {
	let replaced = false;
	const clean = (text: string): string => {
		const r = replaceUnstorable(text);
		if (r.replaced) replaced = true;
		return r.text;
	};
	if (!mayHoldUnstorable(update)) return { update, replaced: false };
	const root: { value: unknown } = { value: undefined };
	const stack: { source: unknown; assign: (v: unknown) => void }[] = [
		{ source: update, assign: (v) => (root.value = v) },
	];
	while (stack.length > 0) {
		const { source, assign } = stack.pop()!;
		if (typeof source === 'string') {
			assign(clean(source));
		} else if (Array.isArray(source)) {
			const copy: unknown[] = new Array(source.length);
			assign(copy);
			source.forEach((item, i) => stack.push({ source: item, assign: (v) => (copy[i] = v) }));
		} else if (source !== null && typeof source === 'object') {
			const copy: Record<string, unknown> = {};
			assign(copy);
			for (const [key, item] of Object.entries(source)) {
				const name = clean(key);
				stack.push({
					source: item,
					assign: (v) =>
						Object.defineProperty(copy, name, { value: v, enumerable: true, writable: true, configurable: true }),
				});
			}
		} else {
			assign(source);
		}
	}
	return replaced ? { update: root.value as T, replaced } : { update, replaced: false };
}

/**
 * Cheap test first: JSON.stringify escapes NUL as \u0000 and a lone surrogate as \udXXX (valid pairs stay
 * raw). A false positive (a text holding a backslash and "u0000") only costs the walk.
 */
function mayHoldUnstorable(value: unknown): boolean {
	try {
		return /\\u0000|\\ud[89a-f]/i.test(JSON.stringify(value) ?? '');
	} catch {
		return true;
	}
}
