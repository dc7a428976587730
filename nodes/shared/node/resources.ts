/** The Resource and Operation dropdowns of a resource/operation node, built from its action list. */
import type { INodeProperties } from 'n8n-workflow';

export interface ResourceSpec {
	value: string;
	name: string;
	/**
	 * Values this resource was saved under by earlier releases (e.g. Knowledge Bot's 'transport', now
	 * 'botTransport'). They are not offered in the Resource dropdown, but a saved workflow that holds one
	 * keeps its Operation and fields (they show for these values too) and is routed to this resource
	 * (`withFormerValues`), so it still runs unchanged.
	 */
	formerValues?: string[];
	/** `fields`: the operation's own fields (none when the node has shared fields only). */
	operations: { value: string; name: string; action: string; description: string; fields?: INodeProperties[] }[];
}

/** Every value a saved `resource` parameter may hold for this resource: its own, then its former ones. */
function valuesOf(resource: Pick<ResourceSpec, 'value' | 'formerValues'>): string[] {
	return [resource.value, ...(resource.formerValues ?? [])];
}

/**
 * The resources as the router looks operations up: each one, then a copy of each under every former
 * value (same operations), so a workflow saved with a former value runs the renamed resource's operation.
 */
export function withFormerValues<R extends Pick<ResourceSpec, 'value' | 'formerValues'>>(resources: R[]): R[] {
	const former = resources.flatMap((r) => (r.formerValues ?? []).map((value) => ({ ...r, value })));
	return [...resources, ...former];
}

/** The operation's fields, shown for the resource's former values as well as its own. */
function fieldsOf(resource: ResourceSpec): INodeProperties[] {
	const fields = resource.operations.flatMap((op) => op.fields ?? []);
	const former = resource.formerValues ?? [];
	if (former.length === 0) return fields;
	return fields.map((field) => {
		const shown = field.displayOptions?.show?.resource;
		if (!Array.isArray(shown) || !shown.includes(resource.value)) return field;
		const show = { ...field.displayOptions?.show, resource: [...shown, ...former] };
		return { ...field, displayOptions: { ...field.displayOptions, show } };
	});
}

/** Resource dropdown, one Operation dropdown per resource, then every operation's fields. */
export function resourceProperties(resources: ResourceSpec[]): INodeProperties[] {
	const dropdowns = resources.map((resource): INodeProperties => {
		const first = resource.operations[0].value;
		return {
			displayName: 'Operation',
			name: 'operation',
			type: 'options',
			noDataExpression: true,
			displayOptions: { show: { resource: valuesOf(resource) } },
			options: resource.operations.map((op) => ({
				name: op.name,
				value: op.value,
				action: op.action,
				description: op.description,
			})),
			default: first,
		};
	});
	const defaultResource = resources[0].value;
	return [
		{
			displayName: 'Resource',
			name: 'resource',
			type: 'options',
			noDataExpression: true,
			options: resources.map((r) => ({ name: r.name, value: r.value })),
			default: defaultResource,
		},
		...dropdowns,
		...resources.flatMap(fieldsOf),
	];
}
