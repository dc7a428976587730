/**
 * Pipeline Capture's outputs follow the operation (version 2) and stay "Done" + "Not Captured" in version 1,
 * as n8n itself computes them: the node description's `outputs` expression evaluated by n8n-workflow's
 * Workflow and NodeHelpers.getNodeOutputs (what the editor draws and where the engine puts error items),
 * for every operation, both versions, with and without the error output. Then every shipped workflow's
 * Pipeline Capture nodes: connections only on outputs the node has, the error output into an ERR branch.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import { shippedWorkflows } from '../helpers/shippedWorkflows';
import {
	NodeHelpers,
	Workflow,
	type INode,
	type INodeOutputConfiguration,
	type INodeType,
	type INodeTypes,
} from 'n8n-workflow';
import { PIPELINE_RESOURCES } from '../../nodes/PipelineCapture/actions';

const TYPE = 'n8n-nodes-contracts.pipelineCapture';

async function pipelineCapture(): Promise<INodeType> {
	// the .ts path: "PipelineCapture.node" alone would resolve to the codex .json beside it
	const source = '../../nodes/PipelineCapture/PipelineCapture.node.ts';
	const { PipelineCapture } = (await import(
		source
	)) as typeof import('../../nodes/PipelineCapture/PipelineCapture.node');
	return new PipelineCapture();
}

/** The outputs n8n computes for a Pipeline Capture node (labels; the error output as "Error"). */
function outputsOf(type: INodeType, node: Omit<INode, 'id' | 'type' | 'position'>): string[] {
	const nodeTypes = {
		getByName: () => type,
		getByNameAndVersion: () => type,
		getKnownTypes: () => ({}),
	} as unknown as INodeTypes;
	const workflow = new Workflow({
		nodes: [{ id: '1', type: TYPE, position: [0, 0], ...node }],
		connections: {},
		active: false,
		nodeTypes,
	});
	return (
		NodeHelpers.getNodeOutputs(workflow, workflow.getNode(node.name)!, type.description) as INodeOutputConfiguration[]
	).map((o) => String(o.displayName));
}

const OPERATIONS = PIPELINE_RESOURCES.flatMap((r) => r.operations.map((op) => [r.value, op.value] as const));

test('the node is version [1, 2], 2 by default', async () => {
	const { description } = await pipelineCapture();
	assert.deepEqual(description.version, [1, 2]);
	assert.equal(description.defaultVersion, 2);
	assert.ok(OPERATIONS.length >= 15, `${OPERATIONS.length} operations`);
});

test('version 2: Capture has Done and Not Captured, every other operation Done; the error output comes after them', async () => {
	const type = await pipelineCapture();
	for (const [resource, operation] of OPERATIONS) {
		const capture = resource === 'run' && operation === 'capture';
		const node = { name: 'P', typeVersion: 2, parameters: { resource, operation } };
		assert.deepEqual(outputsOf(type, node), capture ? ['Done', 'Not Captured'] : ['Done'], `${resource}/${operation}`);
		assert.deepEqual(
			outputsOf(type, { ...node, onError: 'continueErrorOutput' }),
			// n8n relabels a single output "Success" when the error output is on
			capture ? ['Done', 'Not Captured', 'Error'] : ['Success', 'Error'],
			`${resource}/${operation} with the error output`,
		);
	}
	// a new node: the defaults (Pipeline Run → Create Run) give one output
	assert.deepEqual(outputsOf(type, { name: 'P', typeVersion: 2, parameters: {} }), ['Done']);
});

test('version 1 keeps Done and Not Captured for every operation (the error output third)', async () => {
	const type = await pipelineCapture();
	for (const [resource, operation] of OPERATIONS) {
		const node = { name: 'P', typeVersion: 1, parameters: { resource, operation } };
		assert.deepEqual(outputsOf(type, node), ['Done', 'Not Captured'], `${resource}/${operation}`);
		assert.deepEqual(
			outputsOf(type, { ...node, onError: 'continueErrorOutput' }),
			['Done', 'Not Captured', 'Error'],
			`${resource}/${operation} with the error output`,
		);
	}
});

interface ShippedWorkflow {
	name: string;
	nodes: Array<INode & { onError?: string }>;
	connections: Record<string, { main: Array<Array<{ node: string }>> }>;
}

test('shipped workflows: Pipeline Capture v2, connected only on outputs it has, its error output into an ERR branch', async () => {
	const type = await pipelineCapture();
	let checked = 0;
	for (const { file, workflow: wf } of shippedWorkflows<ShippedWorkflow>()) {
		for (const node of wf.nodes.filter((n) => n.type === TYPE)) {
			const where = `${file}: ${node.name}`;
			assert.equal(node.typeVersion, 2, where);
			const outputs = outputsOf(type, node);
			const main = wf.connections[node.name]?.main ?? [];
			assert.ok(main.length <= outputs.length, `${where}: ${main.length} outputs connected, it has ${outputs}`);
			if (node.onError === 'continueErrorOutput') {
				const errorTargets = main[outputs.length - 1] ?? [];
				const named = errorTargets.map((c) => c.node);
				// a Fail Run at the end of an error branch has nowhere further to report to
				if (!node.name.startsWith('Fail Run'))
					assert.ok(
						named.length > 0 && named.every((n) => n.startsWith('ERR — Source')),
						`${where}: error output → ${named}`,
					);
				for (let i = 0; i < outputs.length - 1; i++)
					assert.ok(
						(main[i] ?? []).every((c) => !c.node.startsWith('ERR — Source')),
						`${where}: ${outputs[i]} → an error branch`,
					);
			}
			checked++;
		}
	}
	assert.ok(checked >= 20, `${checked} Pipeline Capture nodes checked`);
});
