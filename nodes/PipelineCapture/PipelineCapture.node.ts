import {
	NodeConnectionTypes,
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import { ERRORPIPE_CONTRACT_VERSION } from '../shared/contracts/ctx';
import { isUuid, newCorrelationId, success } from '../shared/envelope';
import { isRecord } from '../shared/json';
import { readOperationInput } from '../shared/node/identity';
import { resourceProperties } from '../shared/node/resources';
import { ContractError } from '../shared/errors';
import { runBatch } from '../shared/node/runBatch';
import { runItems, type ItemResult, type ItemState } from '../shared/node/runItems';
import { postgresContractsApiTest } from '../shared/postgres/credentialTest';
import { contractsLlmApiTest } from '../shared/llm/credentialTest';
import { getPool, type PostgresCredential } from '../shared/postgres/pool';
import { findPipelineOperation, PIPELINE_RESOURCES } from './actions';
import type { PipelineContext, PipelineResult } from './actions/types';
import { pipelineDefinition } from './transport/definition';
import { calculationNodesOf, CALCULATION_NODES_PROPERTY, subWorkflowCaller } from './transport/calculationNodes';
import { externalProcessorRunner } from '../shared/stateMachine';
import type { LlmCredential } from '../shared/llm/generate';


/**
 * Pipeline Capture — exactly-once capture of work in PostgreSQL: the pipeline_runs state machine of
 * seed 001 (declared in the seed-004 WorkflowDefinition format, db/workflows/pipeline_runs.workflow.json)
 * and the ops.jobs queue.
 *
 * Output 0 "Done": a SuccessEnvelope per result. Output 1 "Not Captured": a Capture that another worker
 * won (not an error). Failures (404, 409 ILLEGAL_TRANSITION with the legal transitions, 422, 503) go to
 * the error output as `{ error: { message, kind, status_code, retryable, details, ctx, error_context } }`
 * for the Error Pipe (WF99). Create Run and Get Status act as the user of the item's verified JWT by
 * default (Identity fields, ../shared/node/identity.ts: 401/403 kind auth before any SQL), and Get
 * Status answers only the run's owner (404 for anyone else, as for an unknown id).
 */
export class PipelineCapture implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Pipeline Capture',
		name: 'pipelineCapture',
		icon: 'file:pipelineCapture.svg',
		group: ['transform'],
		version: 1,
		usableAsTool: true,
		subtitle: '={{ $parameter["resource"] + ": " + $parameter["operation"] }}',
		description: 'Exactly-once pipeline runs (seed 001 state machine), model calls with retries, and the job queue in PostgreSQL',
		defaults: { name: 'Pipeline Capture' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main, NodeConnectionTypes.Main],
		outputNames: ['Done', 'Not Captured'],
		credentials: [
			{ name: 'postgresContractsApi', required: true, testedBy: 'postgresContractsApiTest' },
			{ name: 'contractsLlmApi', required: true, testedBy: 'contractsLlmApiTest', displayOptions: { show: { resource: ['model'] } } },
		],
		properties: [
			...resourceProperties(PIPELINE_RESOURCES),
			CALCULATION_NODES_PROPERTY,
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add option',
				default: {},
				options: [
					{ displayName: 'Worker Name', name: 'worker', type: 'string', default: '', description: 'Name recorded in locked_by / captured_by (default: n8n-&lt;execution ID&gt;)' },
					{ displayName: 'Workflow Label', name: 'workflow', type: 'string', default: 'MaaS', description: 'Value of meta.source and ctx.workflow' },
				],
			},
		],
	};

	methods = { credentialTest: { postgresContractsApiTest, contractsLlmApiTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const credential = (await this.getCredentials('postgresContractsApi')) as unknown as PostgresCredential;
		const pool = getPool(credential);
		const nodeName = this.getNode().name;
		const executionId = String(this.getExecutionId() ?? 'manual');
		// one item's operation, context and input (ctx built before any DB work), and its envelope
		const prepare = (item: INodeExecutionData, itemIndex: number, state: ItemState) => {
			const resource = this.getNodeParameter('resource', itemIndex) as string;
			const operationValue = this.getNodeParameter('operation', itemIndex) as string;
			const options = this.getNodeParameter('options', itemIndex, {}) as { worker?: string; workflow?: string };
			const workflow = options.workflow || 'MaaS';
			const headers = isRecord(item.json.headers) ? item.json.headers : {};
			const incoming = headers['x-correlation-id'] ?? item.json.correlation_id;
			const correlationId = isUuid(incoming) ? incoming : newCorrelationId();
			state.ctx = { correlation_id: correlationId, workflow, node: nodeName, operation: `${resource}.${operationValue}`, contracts: { errorpipe: ERRORPIPE_CONTRACT_VERSION } };
			const operation = findPipelineOperation(resource, operationValue);
			const input = readOperationInput(this, itemIndex, operation.fields, item.json);
			const context: PipelineContext = {
				pool,
				definition: () => pipelineDefinition(pool),
				worker: options.worker || `n8n-${executionId}`,
				origin: { workflow, node: nodeName },
				runProcessor: externalProcessorRunner(calculationNodesOf(this, itemIndex, resource, operationValue), subWorkflowCaller(this, executionId)),
				llm: async () => ({
					credential: (await this.getCredentials('contractsLlmApi', itemIndex)) as unknown as LlmCredential,
					send: async ({ url, body, headers, timeoutMs }) => {
						const res = (await this.helpers.httpRequest({
							method: 'POST',
							url,
							body: body as IDataObject,
							headers,
							json: true,
							timeout: timeoutMs,
							returnFullResponse: true,
							ignoreHttpStatusErrors: true,
						})) as { statusCode: number; body: unknown; headers: Record<string, string> };
						return { status: res.statusCode, body: res.body, headers: res.headers };
					},
				}),
			};
			const respond = (result: PipelineResult): ItemResult => {
				const envelope = (data: Record<string, unknown>) =>
					success(data, { source: workflow, status_code: result.statusCode ?? 200, correlation: { correlation_id: correlationId, workflow, node: nodeName } }) as unknown as INodeExecutionData['json'];
				return result.many ? { many: result.many.map(envelope), output: result.output } : { json: envelope(result.data ?? {}), output: result.output };
			};
			return { operation, context, input, respond };
		};
		// an operation that writes all items at once (Finish Job): one call for the execution
		const batched = this.getInputData().length > 0 ? findPipelineOperation(this.getNodeParameter('resource', 0) as string, this.getNodeParameter('operation', 0) as string).executeBatch : undefined;
		if (batched) {
			return runBatch(this, prepare, async (all) => (await batched(all.map((p) => ({ ctx: p.context, input: p.input })))).map((r, k) => (r instanceof ContractError ? r : all[k].respond(r))), 2);
		}
		return runItems(
			this,
			async (item, itemIndex, state) => {
				const p = prepare(item, itemIndex, state);
				return p.respond(await p.operation.execute(p.context, p.input));
			},
			2,
		);
	}
}
