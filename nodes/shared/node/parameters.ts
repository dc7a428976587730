/**
 * Reading node parameters on a hot path (issue 14). n8n's `getNodeParameter` deep-copies the node's
 * value, checks display options and validates it against the node description on every call, and
 * evaluates expressions through its expression engine (≈ 0.2 ms each); `getNode()` deep-copies the whole
 * node. A node that runs once per webhook call reads `getNode()` once per execution and then:
 *  - `plainParameter`: the value as stored in the workflow when it holds no expression (n8n's own
 *    `getNodeParameter` reads the same `node.parameters`), else `getNodeParameter`;
 *  - `defaultExpressionParameter`: when the stored value is exactly the parameter's default expression,
 *    the caller computes the same value from the item itself; any other value goes through n8n.
 * The returned values are the execution's own copy (from `getNode()`): read them, never mutate them.
 */
import type { IExecuteFunctions, INode } from 'n8n-workflow';

/** True when `value` is, or contains (objects, arrays), an n8n expression (a string starting with "="). */
export function hasExpression(value: unknown): boolean {
	if (typeof value === 'string') return value.startsWith('=');
	if (Array.isArray(value)) return value.some(hasExpression);
	if (value !== null && typeof value === 'object') return Object.values(value).some(hasExpression);
	return false;
}

/**
 * Whether the node's Options → Reuse Credential for 5 Seconds (properties.ts reuseCredentialOption) is on, read
 * once per execution (item 0, as stored unless an expression).
 */
export function reuseCredentialOn(fn: IExecuteFunctions, node: INode): boolean {
	return (plainParameter(fn, node, 'options', 0, {}) as { reuseCredential?: unknown }).reuseCredential === true;
}

/** The parameter as stored when it holds no expression and is present; else n8n's getNodeParameter. */
export function plainParameter(
	fn: IExecuteFunctions,
	node: INode,
	name: string,
	itemIndex: number,
	fallback?: unknown,
): unknown {
	const raw = node.parameters[name];
	if (raw === undefined || hasExpression(raw)) return fn.getNodeParameter(name, itemIndex, fallback);
	return raw;
}

/** `direct()` when the stored value is exactly `defaultExpression`; else n8n's getNodeParameter. */
export function defaultExpressionParameter(
	fn: IExecuteFunctions,
	node: INode,
	name: string,
	itemIndex: number,
	defaultExpression: string,
	direct: () => unknown,
): unknown {
	return node.parameters[name] === defaultExpression ? direct() : fn.getNodeParameter(name, itemIndex, '');
}
