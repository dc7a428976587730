/**
 * Field builders of the contract nodes (ArangoCAS, PipelineCapture). Every input field defaults to the same-named key of the
 * incoming item's webhook body (`$json.body.<snake_case>`) or of the item itself, so a Webhook node
 * carrying the seed's input body can be wired in without editing a field.
 */
import type { IDataObject, IDisplayOptions, IExecuteFunctions, INode, INodeProperties } from 'n8n-workflow';

export interface OperationRef {
	resource: string;
	operation: string;
}

/** camelCase field name → the seed's snake_case input key (atomId → atom_id). */
export function snakeOf(name: string): string {
	return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Expression reading `key` from the webhook body, else from the item. */
export function fromBody(key: string): string {
	return `={{ ($json.body || $json).${key} }}`;
}

export type FieldInit = Omit<INodeProperties, 'displayOptions' | 'default' | 'type'> &
	Partial<Pick<INodeProperties, 'default' | 'type'>> & {
		/**
		 * Further display conditions on fields of the same operation (`{ identity: ['field'] }`), merged
		 * into `displayOptions.show` beside the resource and operation. Such a field is read only while they hold.
		 */
		show?: NonNullable<IDisplayOptions['show']>;
	};

/** Declares the fields of one operation; string fields default to `fromBody(snake_case name)`. */
export function fieldsOf(ref: OperationRef, fields: FieldInit[]): INodeProperties[] {
	return fields.map(({ show, ...f }) => ({
		type: 'string',
		default: fromBody(snakeOf(f.name)),
		...f,
		displayOptions: { show: { ...show, resource: [ref.resource], operation: [ref.operation] } },
	})) as INodeProperties[];
}

/** The display conditions of `field` other than its resource and operation. */
function extraConditions(field: INodeProperties): [string, unknown][] {
	return Object.entries(field.displayOptions?.show ?? {}).filter(
		([name]) => name !== 'resource' && name !== 'operation',
	);
}

/**
 * Whether a node of version `version` meets a `@version` display condition: one of its entries is that
 * version, or n8n's `{ _cnd: { gte | gt | lte | lt | eq: n } }` holds for it.
 */
export function versionMatches(allowed: unknown[], version: number): boolean {
	return allowed.some((entry) => {
		if (typeof entry === 'number') return entry === version;
		const cnd = (entry as { _cnd?: Record<string, unknown> } | null)?._cnd;
		if (!cnd) return false;
		return Object.entries(cnd).every(([op, target]) => {
			if (typeof target !== 'number') return false;
			if (op === 'gte') return version >= target;
			if (op === 'gt') return version > target;
			if (op === 'lte') return version <= target;
			if (op === 'lt') return version < target;
			return op === 'eq' && version === target;
		});
	});
}

/**
 * Whether `field` is shown for this item: each extra condition names a sibling field whose value (its
 * default when unset) must be one of the listed values, or is `@version` (the node's typeVersion, versionMatches). n8n drops a hidden parameter from the node,
 * and reading an absent parameter throws, so a hidden field is not read at all.
 */
function isShown(fn: IExecuteFunctions, itemIndex: number, field: INodeProperties, fields: INodeProperties[]): boolean {
	return extraConditions(field).every(([name, allowed]) => {
		if (name === '@version') return Array.isArray(allowed) && versionMatches(allowed, fn.getNode().typeVersion);
		const sibling = fields.find((f) => f.name === name);
		const value = fn.getNodeParameter(name, itemIndex, sibling?.default) as unknown;
		return Array.isArray(allowed) && allowed.includes(value);
	});
}

/**
 * The value of a field's default expression computed from the item's json, by the JavaScript the expression
 * is (issue 29 P7: n8n's expression engine costs about 0.1–0.3 ms per evaluation). Used only when the stored
 * value is exactly that default, and only a primitive result (string, number, boolean, null, undefined) is
 * taken: anything else is read through n8n as before.
 */
export type DirectDefault = (json: IDataObject) => unknown;

/** Fields whose default expressions the node computes itself (DirectDefault), with the node they are read from. */
export interface DirectDefaults {
	/** The execution's node (`getNode()`): its stored parameters. */
	node: INode;
	/** The item's json (n8n's `$json` for the item). */
	json: IDataObject;
	/** Field name → its default expression's value. */
	values: Record<string, DirectDefault>;
}

/** `fromBody(key)` as JavaScript: `($json.body || $json)[key]`. */
export function fromBodyValue(key: string): DirectDefault {
	return (json) => ((json.body || json) as Record<string, unknown>)[key];
}

function isPrimitive(value: unknown): boolean {
	return value === null || (typeof value !== 'object' && typeof value !== 'function');
}

/**
 * Reads the operation's fields for one item into `{ snake_case_name: value }`, the input its zod
 * schema validates. Empty strings become `undefined` so "missing" and "empty" fail alike; a field
 * hidden by its extra display conditions (FieldInit `show`) is left out. `direct`: fields whose stored
 * value is still their default expression are computed from the item (DirectDefault), not by n8n.
 */
export function readFields(
	fn: IExecuteFunctions,
	itemIndex: number,
	fields: INodeProperties[],
	direct?: DirectDefaults,
): Record<string, unknown> {
	const input: Record<string, unknown> = {};
	for (const field of fields) {
		if (field.type === 'notice') continue;
		if (!isShown(fn, itemIndex, field, fields)) continue;
		const compute =
			direct && direct.node.parameters[field.name] === field.default ? direct.values[field.name] : undefined;
		const computed = compute && direct ? compute(direct.json) : undefined;
		const value =
			compute && isPrimitive(computed) ? computed : (fn.getNodeParameter(field.name, itemIndex, undefined) as unknown);
		input[snakeOf(field.name)] = value === '' ? undefined : value;
	}
	return input;
}

/** The atom key field (`atom_id`): a key, or atoms/<key>. */
export const ATOM_ID_FIELD: FieldInit = {
	displayName: 'Atom ID',
	name: 'atomId',
	required: true,
	description: 'Key of the atom (or atoms/&lt;key&gt;)',
};

/**
 * An expected-revision field: the body key `bodyKey`, else the webhook's If-Match header (seed 000:
 * "the expected revision comes from If-Match").
 */
export function expectedRevField(displayName: string, name: string, bodyKey: string, subject: string): FieldInit {
	return {
		displayName,
		name,
		required: true,
		default: `={{ ($json.body || $json).${bodyKey} || ($json.headers || {})["if-match"] }}`,
		description: `The _rev of the ${subject} the caller last read (body ${bodyKey} or the If-Match header); a different current _rev answers 409 REV_CONFLICT`,
	};
}
