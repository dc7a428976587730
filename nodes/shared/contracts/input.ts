/**
 * The one way an operation validates its input (issue 28): its zod schema, parsed by `parseInput`; a failure is a
 * 422 ContractError naming the first bad field. The options keep each node's error text: one field per input key
 * (ArangoCAS, Pipeline Capture: `invalid input: <field> <message>`) or one JSON `req` parameter (Knowledge Bot:
 * `invalid request: req.<field> <message>`).
 */
import type { z } from 'zod';
import { ContractError, type ErrorContextInit } from '../errors';

/** How `parseInput` reads the input and names a failure. */
export interface ParseInputOptions {
	/**
	 * `'req'`: the input is one `req` parameter (Knowledge Bot, seed 003): a string is JSON-parsed first (safeJson),
	 * fields are named `req.<path>` and the message says `invalid request:`. Absent: one parameter per input key,
	 * fields named by their path (`tags.0`; `(input)` for the input as a whole), the message says `invalid input:`.
	 */
	prefix?: 'req';
	/** The error's context: `{ operation: 'validate', ...where }`. Absent: no context (`{}`). */
	where?: ErrorContextInit;
	/** Also list every issue in `details.issues` (`[{ field, message }]`, field = the path joined by dots). */
	issues?: boolean;
}

/**
 * Parses an operation's input with its zod schema.
 * @param schema the input's contract (zod; its messages follow the field name: `is required`, `must be a UUID`…)
 * @param raw what the operation received (the node's input record, or Knowledge Bot's `req`: object or JSON text)
 * @param options the node's style (ParseInputOptions): the `req` prefix, the error context, the issue list
 * @returns the schema's output (trimmed, defaulted, transformed values)
 * @throws ContractError 422 `validation`, not retryable: message `invalid input: <field> <message>` (with `prefix:
 *         'req'`: `invalid request: req.<field> <message>`) for the first issue; details `{ code: 'VALIDATION',
 *         field }` (plus `issues` when asked); context `{ operation: 'validate', ...where }` when `where` is given
 */
export function parseInput<S extends z.ZodTypeAny>(
	schema: S,
	raw: unknown,
	options: ParseInputOptions = {},
): z.output<S> {
	const input = options.prefix === 'req' && typeof raw === 'string' ? safeJson(raw) : raw;
	const parsed = schema.safeParse(input);
	if (parsed.success) return parsed.data as z.output<S>;
	const issue = parsed.error.issues[0];
	const field = options.prefix ? [options.prefix, ...issue.path].join('.') : issue.path.join('.') || '(input)';
	const details: Record<string, unknown> = { code: 'VALIDATION', field };
	if (options.issues)
		details.issues = parsed.error.issues.map((i) => ({ field: i.path.join('.'), message: i.message }));
	throw ContractError.validation(
		`invalid ${options.prefix === 'req' ? 'request' : 'input'}: ${field} ${issue.message}`,
		details,
		options.where && { operation: 'validate', ...options.where },
	);
}

/** `text` parsed as JSON, or `text` itself when it is not JSON (a request given as a string). Never throws. */
export function safeJson(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return text;
	}
}
