/**
 * The node parameters several nodes share (issue 16: no repeated node skeleton): the Options collection
 * and its Workflow Label, and the Request / Context json parameters of seed 003 §1. Each builder returns a
 * fresh object, so no two nodes (or node instances) share one.
 *
 * The node-class header (displayName, name, icon, group, version, usableAsTool, subtitle, defaults,
 * inputs, outputs) and `credentials` stay literals in each `*.node.ts`: n8n's lint rules read them there
 * (node-usable-as-tool fails without a literal `usableAsTool`; node-class-description-credentials-name-
 * unsuffixed crashes on a credential that is not an object literal). Rules that read parameters cannot see
 * inside these builders; test/unit/nodeDescriptions.test.ts pins every node's description against a
 * snapshot taken before the builders existed.
 */
import type { INodeProperties } from 'n8n-workflow';

/** What a node's Options → Workflow Label sets, when the description does not say more. */
const WORKFLOW_LABEL_DESCRIPTION = 'Value of meta.source and ctx.workflow';

/**
 * The Options collection (`options`, "Add option", default `{}`) holding `options` in the order given.
 * n8n's lint (node-param-collection-type-unsorted-items) wants five or more options sorted by displayName
 * and cannot see them here: pass them in that order.
 */
export function optionsCollection(...options: INodeProperties[]): INodeProperties {
	return {
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add option',
		default: {},
		options,
	};
}

/**
 * Options → Workflow Label (`workflow`, a string): the envelope's `meta.source` (seed 003 §0.3) and, where
 * the node builds the ctx, `ctx.workflow`. An empty value reads as `defaultLabel` (or, for
 * Knowledge Bot, the operation's seed workflow).
 * @param defaultLabel the default, e.g. `WF10`; `''` where the operation decides
 * @param description the field's help text (default: "Value of meta.source and ctx.workflow")
 */
export function workflowLabelOption(
	defaultLabel: string,
	description: string = WORKFLOW_LABEL_DESCRIPTION,
): INodeProperties {
	return { displayName: 'Workflow Label', name: 'workflow', type: 'string', default: defaultLabel, description };
}

/**
 * The Request parameter (`req`, json, required, default `={{ $json.req }}`): the input `{ req: {…} }` of a
 * seed-003 workflow (seed 003 §1). A JSON string is parsed by the node (bad JSON: a 422 naming the field).
 * @param description which req it is, e.g. "The req of seed 003 WF00c: { tenant_id, … }"
 */
export function requestProperty(description: string): INodeProperties {
	return {
		displayName: 'Request',
		name: 'req',
		type: 'json',
		default: '={{ $json.req }}',
		required: true,
		description,
	};
}

/**
 * The Context parameter (`ctx`, json, default `={{ $json.ctx || {} }}`): the ctx travelling with the request
 * (seed 003 §0.4; correlation_id, job_id, trace_id), kept in error items so WF99 can retry the job
 * (seed 002 §3.2).
 */
export function contextProperty(): INodeProperties {
	return {
		displayName: 'Context',
		name: 'ctx',
		type: 'json',
		default: '={{ $json.ctx || {} }}',
		description:
			'The ctx travelling with the request (correlation_id, job_id, trace_id); kept in errors so WF99 can retry the job',
	};
}

/**
 * Options → Reuse Credential for 5 Seconds (`reuseCredential`, boolean, default false): the node reads its
 * credentials through n8n at most once per 5 s per workflow in each n8n process (PostgreSQL:
 * ../postgres/executionPool.ts; others: ./reusedCredential.ts) instead of on every execution — n8n's read is a query of its own database, a
 * decryption and an expression pass, a few milliseconds per call on a busy chain. Read with reuseCredentialOn
 * (./parameters.ts).
 * @param credentials the credentials it covers, as the help text names them (e.g. "the PostgreSQL credential")
 * @param shipped the shipped workflows that turn it on, named in the help text (e.g. "WF10")
 */
export function reuseCredentialOption(credentials: string, shipped: string): INodeProperties {
	return {
		displayName: 'Reuse Credential for 5 Seconds',
		name: 'reuseCredential',
		type: 'boolean',
		default: false,
		description: `Whether to read ${credentials} through n8n at most once per 5 seconds per workflow in each n8n process instead of on every execution (faster on a busy workflow; on in the shipped ${shipped}). An edited credential then applies within 5 s. Only for a static credential: one whose fields use expressions or are resolved per caller must leave this off, or executions would share the first one's resolved values.`,
	};
}
