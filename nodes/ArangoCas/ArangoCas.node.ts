import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import type { Database } from 'arangojs';
import { isRecord } from '../shared/json';
import { optionsCollection, workflowLabelOption } from '../shared/node/properties';
import { resourceProperties } from '../shared/node/resources';
import { routeItems, type Route } from '../shared/node/router';
import { RESOURCES } from './actions';
import type { Operation, RunInfo } from './actions/types';
import { arangoDbApiTest } from './transport/credentialTest';
import { getDatabase, type ArangoCredential } from './transport/database';

/** Header value of a Webhook item (`headers` lower-cased by n8n). */
function header(json: Record<string, unknown>, name: string): unknown {
	return isRecord(json.headers) ? json.headers[name] : undefined;
}

/**
 * How ArangoCAS routes an item: the credential's database, the Webhook's x-correlation-id header, the
 * operation called as `execute(db, input, { executionId })`.
 */
const ARANGO_ROUTE: Route<Operation, { db: Database; run: RunInfo }, { db: Database; run: RunInfo }> = {
	label: 'ArangoCAS',
	resources: RESOURCES,
	ctxOperation: true,
	connect: async (fn) => ({
		db: getDatabase((await fn.getCredentials('arangoDbApi')) as unknown as ArangoCredential),
		run: { executionId: String(fn.getExecutionId() ?? '') },
	}),
	workflow: () => 'ArangoCAS',
	incoming: (_fn, item) => ({ correlationIds: [header(item.json, 'x-correlation-id')] }),
	context: (_fn, conn) => conn,
	execute: async (operation, { db, run }, input) => await operation.execute(db, input as Record<string, unknown>, run),
};

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
 * Every operation that writes for a user (Lock, Unlock, Archive, Create Proposal, Merge, Reject, Create
 * Baseline) and AI Analysis (Load Context, Save Result, Save Error) acts as the user of the item's verified
 * JWT by default (Identity fields, ../shared/node/identity.ts): 401 UNAUTHENTICATED / 403
 * IDENTITY_CLAIM_INVALID / 403 IDENTITY_MISMATCH fail the item before any request to ArangoDB. Unlock
 * Expired acts as no user ("system:expired").
 * Node versions: 2 (default). On version 1 Create Baseline, Reject, Load Context, Save Result and Save
 * Error have no Identity fields and record no user (created_by/rejected_by/requested_by null), as before
 * they took one, so a workflow saved then keeps running; the other operations are the same on both.
 */
// Not usable as an AI agent's tool (docs/contracts-and-secrets.md, "Nodes as AI tools"): it writes (locks, merges, archives, proposals, baselines) with ids and revisions an agent would choose.
// eslint-disable-next-line @n8n/community-nodes/node-usable-as-tool
export class ArangoCas implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'ArangoCAS',
		name: 'arangoCas',
		icon: 'file:arangoCas.svg',
		group: ['transform'],
		// 2: Create Baseline, Reject, Load Context, Save Result and Save Error take the Identity fields
		// (default Verified Token Claim); on 1 they have none and act as no one, as saved workflows expect.
		version: [1, 2],
		defaultVersion: 2,
		subtitle: '={{ $parameter["resource"] + ": " + $parameter["operation"] }}',
		description:
			'Atomic, compare-and-swap document-graph operations on ArangoDB (lock, merge, archive, baseline, AI analysis)',
		defaults: { name: 'ArangoCAS' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'arangoDbApi', required: true, testedBy: 'arangoDbApiTest' }],
		properties: [
			...resourceProperties(RESOURCES),
			optionsCollection(workflowLabelOption('ArangoCAS', 'Value of meta.source and ctx.workflow (e.g. WF-A3.2)')),
		],
	};

	methods = { credentialTest: { arangoDbApiTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return routeItems(this, ARANGO_ROUTE);
	}
}
