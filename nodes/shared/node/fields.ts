/**
 * Field builders of the contract nodes (ArangoCAS, PipelineCapture). Every input field defaults to the same-named key of the
 * incoming item's webhook body (`$json.body.<snake_case>`) or of the item itself, so a Webhook node
 * carrying the seed's input body can be wired in without editing a field.
 */
import type { IExecuteFunctions, INodeProperties } from 'n8n-workflow';

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

export type FieldInit = Omit<INodeProperties, 'displayOptions' | 'default' | 'type'> & Partial<Pick<INodeProperties, 'default' | 'type'>>;

/** Declares the fields of one operation; string fields default to `fromBody(snake_case name)`. */
export function fieldsOf(ref: OperationRef, fields: FieldInit[]): INodeProperties[] {
	return fields.map((f) => ({
		type: 'string',
		default: fromBody(snakeOf(f.name)),
		...f,
		displayOptions: { show: { resource: [ref.resource], operation: [ref.operation] } },
	})) as INodeProperties[];
}

/**
 * Reads the operation's fields for one item into `{ snake_case_name: value }`, the input its zod
 * schema validates. Empty strings become `undefined` so "missing" and "empty" fail alike.
 */
export function readFields(fn: IExecuteFunctions, itemIndex: number, fields: INodeProperties[]): Record<string, unknown> {
	const input: Record<string, unknown> = {};
	for (const field of fields) {
		if (field.type === 'notice') continue;
		const value = fn.getNodeParameter(field.name, itemIndex, undefined) as unknown;
		input[snakeOf(field.name)] = value === '' ? undefined : value;
	}
	return input;
}

/** The atom key field (`atom_id`): a key, or atoms/<key>. */
export const ATOM_ID_FIELD: FieldInit = { displayName: 'Atom ID', name: 'atomId', required: true, description: 'Key of the atom (or atoms/&lt;key&gt;)' };

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
