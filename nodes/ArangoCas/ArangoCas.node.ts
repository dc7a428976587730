import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import { ERRORPIPE_CONTRACT_VERSION } from '../shared/contracts/ctx';
import { isUuid, newCorrelationId, success } from '../shared/envelope';
import { isRecord } from '../shared/json';
import { resourceProperties } from '../shared/node/resources';
import { runItems } from '../shared/node/runItems';
import { readOperationInput } from '../shared/node/identity';
import { findOperation, RESOURCES } from './actions';
import { arangoDbApiTest } from './transport/credentialTest';
import { getDatabase, type ArangoCredential } from './transport/database';


/** Header value of a Webhook item (`headers` lower-cased by n8n). */
function header(json: Record<string, unknown>, name: string): unknown {
	return isRecord(json.headers) ? json.headers[name] : undefined;
}

/**
 * ArangoCAS — the document-graph operations of seed 000 (§3.1–3.8) on ArangoDB, each one atomic
 * (one AQL query, or one stream transaction aborted on any failed check) and every integrity-changing
 * write compare-and-swap on `_rev`.
 *
 * Output: a SuccessEnvelope per item (`data` as each operation documents; status 200, or 201 when it
 * created documents). Failures (404 NOT_FOUND, 409 REV_CONFLICT / PROTECTED_BY_BASELINE / …,
 * 423 LOCKED, 422 validation, 503 ArangoDB unreachable) go to the error output as
 * `{ error: { message, kind, status_code, retryable, details: { code, … }, ctx, error_context } }`,
 * which the Error Pipe (WF99) turns into an ErrorEnvelope and records in ops.errors.
 * Lock, Unlock, Archive and Merge act as the user of the item's verified JWT by default (Identity
 * fields, ../shared/node/identity.ts): 401 UNAUTHENTICATED / 403 IDENTITY_CLAIM_INVALID /
 * 403 IDENTITY_MISMATCH fail the item before any request to ArangoDB.
 */
export class ArangoCas implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'ArangoCAS',
		name: 'arangoCas',
		icon: 'file:arangoCas.svg',
		group: ['transform'],
		version: 1,
		usableAsTool: true,
		subtitle: '={{ $parameter["resource"] + ": " + $parameter["operation"] }}',
		description: 'Atomic, compare-and-swap document-graph operations on ArangoDB (lock, merge, archive, baseline, AI analysis)',
		defaults: { name: 'ArangoCAS' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'arangoDbApi', required: true, testedBy: 'arangoDbApiTest' }],
		properties: [
			...resourceProperties(RESOURCES),
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add option',
				default: {},
				options: [
					{
						displayName: 'Workflow Label',
						name: 'workflow',
						type: 'string',
						default: 'ArangoCAS',
						description: 'Value of meta.source and ctx.workflow (e.g. WF-A3.2)',
					},
				],
			},
		],
	};

	methods = { credentialTest: { arangoDbApiTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const credential = (await this.getCredentials('arangoDbApi')) as unknown as ArangoCredential;
		const db = getDatabase(credential);
		const nodeName = this.getNode().name;
		const executionId = String(this.getExecutionId() ?? '');
		return runItems(this, async (item, itemIndex, state) => {
			const resource = this.getNodeParameter('resource', itemIndex) as string;
			const operationValue = this.getNodeParameter('operation', itemIndex) as string;
			const options = this.getNodeParameter('options', itemIndex, {}) as { workflow?: string };
			const workflow = options.workflow || 'ArangoCAS';
			const incoming = header(item.json, 'x-correlation-id');
			const ctx = {
				correlation_id: isUuid(incoming) ? incoming : newCorrelationId(),
				workflow,
				node: nodeName,
				operation: `${resource}.${operationValue}`,
				contracts: { errorpipe: ERRORPIPE_CONTRACT_VERSION },
			};
			state.ctx = ctx;
			const operation = findOperation(resource, operationValue);
			const input = readOperationInput(this, itemIndex, operation.fields, item.json);
			const result = await operation.execute(db, input, { executionId });
			const envelope = success(result.data, {
				source: workflow,
				status_code: result.statusCode,
				correlation: { correlation_id: ctx.correlation_id, workflow, node: nodeName },
			});
			return { json: envelope as unknown as INodeExecutionData['json'] };
		});
	}
}
