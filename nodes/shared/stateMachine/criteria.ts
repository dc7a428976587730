/**
 * Evaluates the Condition DSL of seed 004 against an entity (its JSON) and its lifecycle metadata,
 * with the comparison semantics recorded in FACTS (cyoda-go v0.6.1, plus its later null rule):
 *  - a stored JSON number against a numeric-looking operand compares numerically ("30" equals 30);
 *    a stored string compares as text; a stored boolean compares as its text ("true");
 *  - IS_NULL is true for null and for an absent field; every other operator, negations included, is
 *    false on null/absent;
 *  - LIKE: `%` any run, `_` one character, anchored, everything else literal; MATCHES_PATTERN: a regular
 *    expression found anywhere; BETWEEN: numeric, inclusive, `[lo, hi]` or "lo,hi"; I* operators compare
 *    case-folded text and INOT_* are their negations;
 *  - a path with `[*]`, or one that ends on an array, matches if any element matches;
 *  - group: AND / OR with short-circuit, empty AND true, empty OR false; lifecycle: state,
 *    creationDate (chronological), previousTransition; array: values[i] EQUALS element i, null skips (a condition without a values array matches nothing).
 * JSONPath is evaluated by jsonpath-plus.
 */
import { JSONPath } from 'jsonpath-plus';
import type { Condition, OperatorType } from './schema';

/** Lifecycle metadata of an entity. */
export interface EntityMeta {
	state: string | null;
	/** ISO timestamp or Date of creation. */
	creationDate?: string | Date | null;
	previousTransition?: string | null;
}

const NUMERIC = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

function asNumber(value: unknown): number | null {
	if (typeof value === 'number' && Number.isFinite(value)) return value;
	if (typeof value === 'string' && NUMERIC.test(value)) return Number(value);
	return null;
}

function asText(value: unknown): string {
	if (typeof value === 'string') return value;
	if (typeof value === 'number' || typeof value === 'boolean') return String(value);
	return JSON.stringify(value);
}

/** `%` → any run, `_` → one character, anchored; other characters literal. */
function likeToRegExp(pattern: string): RegExp {
	let source = '';
	for (const ch of pattern) {
		if (ch === '%') source += '[\\s\\S]*';
		else if (ch === '_') source += '[\\s\\S]';
		else source += ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
	}
	return new RegExp(`^${source}$`);
}

function bounds(operand: unknown): [number, number] | null {
	const parts = Array.isArray(operand) ? operand : typeof operand === 'string' ? operand.split(',') : null;
	if (!parts || parts.length !== 2) return null;
	const lo = asNumber(typeof parts[0] === 'string' ? parts[0].trim() : parts[0]);
	const hi = asNumber(typeof parts[1] === 'string' ? parts[1].trim() : parts[1]);
	return lo === null || hi === null ? null : [lo, hi];
}

/** Compares stored vs operand: numerically when the stored value is a number and the operand numeric. */
function compare(stored: unknown, operand: unknown, chronological = false): number | null {
	if (chronological) {
		const a = new Date(stored as string).getTime();
		const b = new Date(operand as string).getTime();
		return Number.isNaN(a) || Number.isNaN(b) ? null : a - b;
	}
	const operandNumber = asNumber(operand);
	if (typeof stored === 'number' && operandNumber !== null) return stored - operandNumber;
	const a = asText(stored);
	const b = asText(operand);
	return a < b ? -1 : a > b ? 1 : 0;
}

/** One stored value (never an array here) against an operator. */
function matchesOne(stored: unknown, op: OperatorType, operand: unknown, chronological = false): boolean {
	const absent = stored === null || stored === undefined;
	if (op === 'IS_NULL') return absent;
	if (op === 'NOT_NULL') return !absent;
	if (absent) return false;
	const text = asText(stored);
	const operandText = operand === null || operand === undefined ? '' : asText(operand);
	const fold = (s: string) => s.toLowerCase();
	switch (op) {
		case 'EQUALS':
			return compare(stored, operand, chronological) === 0;
		case 'NOT_EQUAL':
			return compare(stored, operand, chronological) !== 0;
		case 'GREATER_THAN':
		case 'GREATER_OR_EQUAL':
		case 'LESS_THAN':
		case 'LESS_OR_EQUAL': {
			const c = compare(stored, operand, chronological);
			if (c === null) return false;
			return op === 'GREATER_THAN' ? c > 0 : op === 'GREATER_OR_EQUAL' ? c >= 0 : op === 'LESS_THAN' ? c < 0 : c <= 0;
		}
		case 'CONTAINS':
			return text.includes(operandText);
		case 'STARTS_WITH':
			return text.startsWith(operandText);
		case 'ENDS_WITH':
			return text.endsWith(operandText);
		case 'LIKE':
			return likeToRegExp(operandText).test(text);
		case 'MATCHES_PATTERN':
			try {
				return new RegExp(operandText).test(text);
			} catch {
				return false;
			}
		case 'BETWEEN': {
			const range = bounds(operand);
			const n = asNumber(stored);
			return range !== null && n !== null && n >= range[0] && n <= range[1];
		}
		case 'IEQUALS':
			return fold(text) === fold(operandText);
		case 'INOT_EQUAL':
			return fold(text) !== fold(operandText);
		case 'ICONTAINS':
			return fold(text).includes(fold(operandText));
		case 'INOT_CONTAINS':
			return !fold(text).includes(fold(operandText));
		case 'ISTARTS_WITH':
			return fold(text).startsWith(fold(operandText));
		case 'INOT_STARTS_WITH':
			return !fold(text).startsWith(fold(operandText));
		case 'IENDS_WITH':
			return fold(text).endsWith(fold(operandText));
		case 'INOT_ENDS_WITH':
			return !fold(text).endsWith(fold(operandText));
	}
}

/** The values a JSONPath selects; an array at the end of the path contributes its elements. */
export function select(entity: unknown, path: string): unknown[] {
	const found = JSONPath({ path, json: entity as object, wrap: true }) as unknown[];
	return found.flatMap((value) => (Array.isArray(value) ? value : [value]));
}

/** Whether `condition` holds for `entity` (its JSON) with lifecycle `meta`. */
export function evaluate(condition: Condition | null | undefined, entity: unknown, meta: EntityMeta): boolean {
	if (!condition) return true;
	switch (condition.type) {
		case 'group':
			return condition.operator === 'AND'
				? condition.conditions.every((c) => evaluate(c, entity, meta))
				: condition.conditions.some((c) => evaluate(c, entity, meta));
		case 'lifecycle': {
			const stored =
				condition.field === 'state'
					? meta.state
					: condition.field === 'creationDate'
						? meta.creationDate
						: meta.previousTransition;
			const value = stored instanceof Date ? stored.toISOString() : stored;
			return matchesOne(value, condition.operatorType, condition.value, condition.field === 'creationDate');
		}
		case 'simple': {
			const values = select(entity, condition.jsonPath);
			if (values.length === 0) return matchesOne(undefined, condition.operatorType, condition.value);
			// IS_NULL holds when nothing is there; every other operator when any selected value matches.
			return values.some((v) => matchesOne(v, condition.operatorType, condition.value));
		}
		case 'array': {
			const found = JSONPath({ path: condition.jsonPath, json: entity as object, wrap: true }) as unknown[];
			const array = found.length === 1 && Array.isArray(found[0]) ? (found[0] as unknown[]) : found;
			// `values` is the format's field; an unparsed condition with our earlier `value` is read the same way
			const raw = condition as unknown as { values?: unknown; value?: unknown };
			const expectedValues = Array.isArray(raw.values) ? raw.values : Array.isArray(raw.value) ? raw.value : null;
			if (!expectedValues) return false;
			return expectedValues.every(
				(expected, i) => expected === null || matchesOne(array[i], condition.operatorType ?? 'EQUALS', expected),
			);
		}
	}
}
