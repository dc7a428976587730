import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import { correlationOf, success } from '../shared/envelopeBuilders';
import { optionsCollection, requestProperty, workflowLabelOption } from '../shared/node/properties';
import { runItems } from '../shared/node/runItems';
import { postgresContractsApiTest } from '../shared/postgres/credentialTest';
import { getPool, type PostgresCredential } from '../shared/postgres/pool';
import { loadContext } from '../shared/acl/loadContext';

/**
 * Context Loader — WF00c of seed 003 in one node: the ACL and chat policy of a request, as the
 * normalised `ctx` every workflow passes on (SuccessEnvelope with `data.ctx`). A refused or failed item
 * (403 / 404 / 422 / 5xx) goes to the error output with the ctx known so far, for WF99.
 */
// Not usable as an AI agent's tool (docs/contracts-and-secrets.md, "Nodes as AI tools"): it reads only, but builds the ACL ctx (role, membership, visibility) of whatever tenant, user and chat it is given: a model filling those in could hand a chat member someone else's context.
// eslint-disable-next-line @n8n/community-nodes/node-usable-as-tool
export class ContextLoader implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Context Loader',
		name: 'contextLoader',
		icon: 'file:contextLoader.svg',
		group: ['transform'],
		version: 1,
		subtitle: 'ACL ctx (WF00c)',
		description: 'Builds the ACL ctx of a Telegram request: role, membership, visibility, chat policy (WF00c)',
		defaults: { name: 'Context Loader' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'postgresContractsApi', required: true, testedBy: 'postgresContractsApiTest' }],
		properties: [
			requestProperty(
				'The req of seed 003 WF00c: { tenant_id, tg_user_id, chat_id, channel, trace_id, correlation_id }',
			),
			optionsCollection(workflowLabelOption('WF00c', 'Value of meta.source')),
		],
	};

	methods = { credentialTest: { postgresContractsApiTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const credential = (await this.getCredentials('postgresContractsApi')) as unknown as PostgresCredential;
		const pool = getPool(credential);
		const nodeName = this.getNode().name;
		return runItems(this, async (_item, itemIndex, state) => {
			const raw = this.getNodeParameter('req', itemIndex, {}) as unknown;
			const options = this.getNodeParameter('options', itemIndex, {}) as { workflow?: string };
			const workflow = options.workflow || 'WF00c';
			// a JSON string is parsed by loadContext (bad JSON is a 422 there, never a thrown SyntaxError)
			const data = await loadContext(pool, raw, state);
			const ctx = data.ctx as Record<string, unknown>;
			const envelope = success(data, {
				source: workflow,
				correlation: correlationOf(ctx, { workflow, node: nodeName }),
			});
			return { json: envelope as unknown as INodeExecutionData['json'] };
		});
	}
}
