/** The Resource and Operation dropdowns of a resource/operation node, built from its action list. */
import type { INodeProperties } from 'n8n-workflow';

export interface ResourceSpec {
	value: string;
	name: string;
	/** `fields`: the operation's own fields (none when the node has shared fields only). */
	operations: { value: string; name: string; action: string; description: string; fields?: INodeProperties[] }[];
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
			displayOptions: { show: { resource: [resource.value] } },
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
		...resources.flatMap((r) => r.operations.flatMap((op) => op.fields ?? [])),
	];
}
