/**
 * The "calculation nodes" of seed 004's EXTERNAL processors, in n8n: sub-workflows listed on the Pipeline
 * Capture node (parameter `calculationNodes`, Run → Capture / Complete Step / Fail / Sweep / Archive) with
 * the tags each declares,
 * called through n8n's own sub-workflow execution (`executeWorkflow` of IExecuteFunctions, as the Execute
 * Workflow node does). Routing and payload: ../../shared/stateMachine/processors.ts.
 */
import type { IDataObject, IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import { parseTags, type CalculationNode, type SubWorkflowCaller } from '../../shared/stateMachine';

/** The Run operations that fire transitions, and so run processors (issue 26 item 2: Fail, Sweep, Archive too). */
export const PROCESSOR_OPERATIONS = ['capture', 'completeStep', 'fail', 'sweep', 'archive'] as const;

export const CALCULATION_NODES_PROPERTY: INodeProperties = {
	displayName: 'Calculation Nodes',
	name: 'calculationNodes',
	type: 'fixedCollection',
	typeOptions: { multipleValues: true },
	placeholder: 'Add Calculation Node',
	default: {},
	description:
		'Sub-workflows that run the EXTERNAL processors of the state machine (seed 004), on the transitions this operation fires (Capture: CAPTURE_*, Complete Step: *_DONE and the cascade, Fail: FAIL, Sweep: RELEASE, Archive: ARCHIVE). A processor goes to the first one listed that declares all the tags of its calculationNodesTags; none → 400 NO_COMPUTE_MEMBER_FOR_TAG. Each sub-workflow starts with "When Executed by Another Workflow" (accept all data), receives { processor, transition, entity? } and answers { success, entity?, error? }.',
	displayOptions: { show: { resource: ['run'], operation: [...PROCESSOR_OPERATIONS] } },
	options: [
		{
			displayName: 'Calculation Node',
			name: 'node',
			values: [
				{
					displayName: 'Sub-Workflow ID',
					name: 'workflowId',
					type: 'string',
					default: '',
					required: true,
					description: 'ID of the n8n workflow to call',
				},
				{
					displayName: 'Tags',
					name: 'tags',
					type: 'string',
					default: '',
					placeholder: 'approval-service, audit',
					description: 'Comma-separated tags this sub-workflow declares',
				},
			],
		},
	],
};

/** The Calculation Nodes parameter of item `itemIndex` (none for operations that do not show it). */
export function calculationNodesOf(
	fns: IExecuteFunctions,
	itemIndex: number,
	resource: string,
	operation: string,
): CalculationNode[] {
	if (resource !== 'run' || !(PROCESSOR_OPERATIONS as readonly string[]).includes(operation)) return [];
	const value = fns.getNodeParameter('calculationNodes', itemIndex, {}) as {
		node?: { workflowId?: unknown; tags?: unknown }[];
	};
	return (value.node ?? [])
		.map((n) => ({ workflowId: typeof n.workflowId === 'string' ? n.workflowId.trim() : '', tags: parseTags(n.tags) }))
		.filter((n) => n.workflowId !== '');
}

/**
 * Calls a sub-workflow with one item (the request, as JSON: dates become ISO strings) and resolves the
 * json of the first item its last node output (undefined when none). A failing sub-workflow rejects.
 */
export function subWorkflowCaller(fns: IExecuteFunctions, executionId: string): SubWorkflowCaller {
	return async (workflowId, request) => {
		const json = JSON.parse(JSON.stringify(request)) as IDataObject;
		const parentWorkflowId = String(fns.getWorkflow().id ?? '');
		const result = await fns.executeWorkflow({ id: workflowId }, [{ json }], undefined, {
			parentExecution: { executionId, workflowId: parentWorkflowId },
		});
		const first = result.data?.[0]?.[0];
		return first?.json;
	};
}
