import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import type { Pool } from 'pg';
import { isRecord } from '../shared/json';
import { optionsCollection, reuseCredentialOption, workflowLabelOption } from '../shared/node/properties';
import { reuseCredentialOn } from '../shared/node/parameters';
import { reusedCredential } from '../shared/node/reusedCredential';
import { resourceProperties } from '../shared/node/resources';
import { outputsExpression, routeItems, type Route } from '../shared/node/router';
import { postgresContractsApiTest } from '../shared/postgres/credentialTest';
import { executionPool } from '../shared/postgres/executionPool';
import { contractsLlmApiTest } from '../shared/llm/credentialTest';
import { cancelSignalOf, type LlmCredential } from '../shared/llm/generate';
import { externalProcessorRunner } from '../shared/stateMachine';
import { PIPELINE_RESOURCES } from './actions';
import { PIPELINE_OUTPUTS, type PipelineContext, type PipelineOperation } from './actions/types';
import { requestSender } from '../shared/llm/requestSender';
import { pipelineDefinition } from './engine/definition';
import { calculationNodesOf, CALCULATION_NODES_PROPERTY, subWorkflowCaller } from './engine/calculationNodes';

/**
 * The key of one call of this node on one item (issue 26, docs/retry-safety.md "Pipeline runs"): n8n's
 * instance id, the workflow id, the execution id, the node's name, its run index in the execution (a loop
 * runs it again with the next one; Retry On Fail does not) and the item index; identical on Retry On Fail,
 * different for any other call (another n8n instance sharing the database, an n8n database reset that
 * starts execution ids again at 1, another workflow). Undefined (no replay) when n8n gives no execution id.
 */
function callKeyOf(fn: IExecuteFunctions, executionId: string | undefined, node: string, itemIndex: number) {
	if (!executionId) return undefined;
	const runIndex = fn.getWorkflowDataProxy(itemIndex).$runIndex;
	return JSON.stringify([
		fn.getInstanceId(),
		String(fn.getWorkflow().id ?? ''),
		executionId,
		node,
		runIndex,
		itemIndex,
	]);
}

/**
 * How Pipeline Capture routes an item: the Webhook's x-correlation-id header (else the item's
 * correlation_id), the operation called as `execute(pipelineContext, input)` (Finish Job: all items in
 * one `executeBatch`), results on "Done" or "Not Captured".
 */
const PIPELINE_ROUTE: Route<
	PipelineOperation,
	{ pool: Pool; executionId: string; realExecutionId: string | undefined; nodeInfo: INode },
	PipelineContext
> = {
	label: 'PipelineCapture',
	resources: PIPELINE_RESOURCES,
	outputs: PIPELINE_OUTPUTS,
	ctxOperation: true,
	connect: async (fn, node) => ({
		pool: await executionPool(fn, { node, reuse: reuseCredentialOn(fn, node) }),
		executionId: String(fn.getExecutionId() ?? 'manual'),
		realExecutionId: fn.getExecutionId() ? String(fn.getExecutionId()) : undefined,
		nodeInfo: node,
	}),
	workflow: () => 'MaaS',
	incoming: (_fn, item) => {
		const headers = isRecord(item.json.headers) ? item.json.headers : {};
		return { correlationIds: [headers['x-correlation-id'] ?? item.json.correlation_id] };
	},
	context: (
		fn,
		{ pool, executionId, realExecutionId, nodeInfo },
		{ itemIndex, options, workflow, node, resource, operationValue },
	) => ({
		pool,
		definition: () => pipelineDefinition(pool),
		worker: (typeof options.worker === 'string' && options.worker) || `n8n-${executionId}`,
		callKey: callKeyOf(fn, realExecutionId, node, itemIndex),
		origin: { workflow, node },
		runProcessor: externalProcessorRunner(
			calculationNodesOf(fn, itemIndex, resource, operationValue),
			subWorkflowCaller(fn, executionId),
		),
		llm: async () => ({
			// Options → Reuse Credential for 5 Seconds covers the model credential too (../shared/node/reusedCredential.ts)
			credential: (await reusedCredential(fn, 'contractsLlmApi', itemIndex, {
				node: nodeInfo,
				reuse: options.reuseCredential === true,
			})) as unknown as LlmCredential,
			send: requestSender((options) => fn.helpers.httpRequest(options)),
			signal: cancelSignalOf(fn),
		}),
	}),
	execute: async (operation, context, input) => await operation.execute(context, input as Record<string, unknown>),
	batch: (operation) => {
		const executeBatch = operation.executeBatch;
		return (
			executeBatch &&
			(async (entries) =>
				await executeBatch(entries.map((e) => ({ deps: e.context, input: e.input as Record<string, unknown> }))))
		);
	},
};

/**
 * Pipeline Capture — exactly-once capture of work in PostgreSQL: the pipeline_runs state machine of
 * seed 001 (declared in the seed-004 WorkflowDefinition format, db/state-machines/pipeline_runs.json)
 * and the ops.jobs queue.
 *
 * Output 0 "Done": a SuccessEnvelope per result. Capture's output 1 "Not Captured": a Capture that another worker
 * won (not an error). Failures (404, 409 ILLEGAL_TRANSITION with the legal transitions, 422, 503) go to
 * the error output as `{ error: { message, kind, status_code, retryable, details, ctx, error_context } }`
 * for the Error Pipe (WF99). Create Run and Get Status act as the user of the item's verified JWT by
 * default (Identity fields, ../shared/node/identity.ts: 401/403 kind auth before any SQL), and Get
 * Status answers only the run's owner (404 for anyone else, as for an unknown id).
 */
// Not usable as an AI agent's tool (docs/contracts-and-secrets.md, "Nodes as AI tools"): it writes (captures runs, claims and finishes jobs) and deletes (retention).
// eslint-disable-next-line @n8n/community-nodes/node-usable-as-tool
export class PipelineCapture implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Pipeline Capture',
		name: 'pipelineCapture',
		icon: 'file:pipelineCapture.svg',
		group: ['transform'],
		version: [1, 2],
		defaultVersion: 2,
		subtitle: '={{ $parameter["resource"] + ": " + $parameter["operation"] }}',
		description:
			'Exactly-once pipeline runs (seed 001 state machine), model calls with retries, and the job queue in PostgreSQL',
		defaults: { name: 'Pipeline Capture' },
		inputs: [NodeConnectionTypes.Main],
		outputs: outputsExpression(PIPELINE_RESOURCES, PIPELINE_OUTPUTS),
		credentials: [
			{ name: 'postgresContractsApi', required: true, testedBy: 'postgresContractsApiTest' },
			{
				name: 'contractsLlmApi',
				required: true,
				testedBy: 'contractsLlmApiTest',
				displayOptions: { show: { resource: ['model'] } },
			},
		],
		properties: [
			...resourceProperties(PIPELINE_RESOURCES),
			CALCULATION_NODES_PROPERTY,
			optionsCollection(
				reuseCredentialOption(
					"the node's credentials (PostgreSQL, and the model's where it calls one)",
					'MaaS workflows (M00–M18) and WF90',
				),
				{
					displayName: 'Worker Name',
					name: 'worker',
					type: 'string',
					default: '',
					description: 'Name recorded in locked_by / captured_by (default: n8n-&lt;execution ID&gt;)',
				},
				workflowLabelOption('MaaS'),
			),
		],
	};

	methods = { credentialTest: { postgresContractsApiTest, contractsLlmApiTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return routeItems(this, PIPELINE_ROUTE);
	}
}
