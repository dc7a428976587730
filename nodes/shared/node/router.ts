/**
 * The one router of the resource/operation nodes (ArangoCAS, Knowledge Bot, Pipeline Capture), in the
 * manner of n8n's Postgres v2 `router.ts`: the node's `execute` is `routeItems(this, ROUTE)`, and the
 * skeleton every such node shares lives here once:
 *  1. the execution's connection (credential → pool or database), opened once before the items;
 *  2. per item: the operation of its Resource / Operation parameters, its Workflow Label (Options),
 *     its correlation id (the first UUID among the node's candidates, else a new one) and its ctx
 *     (`state.ctx`, set before any input is read or any I/O is done, so an error item keeps it);
 *  3. the operation's input (its fields with the Identity rules, unless the node read it itself), the
 *     operation's run, and one SuccessEnvelope per result;
 *  4. errors routed by runItems / runBatch (n8n's stop and continue modes, the error item for WF99).
 * What differs between nodes (which credential, what an operation receives, where a correlation id may
 * come from) is the node's `Route`.
 */
import {
	NodeConnectionTypes,
	type ExpressionString,
	type IDataObject,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeOutputConfiguration,
	type INodeProperties,
} from 'n8n-workflow';
import { newCtx } from '../contracts/ctx';
import { isUuid } from '../contracts/ids';
import { correlationOf, newCorrelationId, success } from '../envelopeBuilders';
import { ContractError } from '../errors';
import type { DirectDefault } from './fields';
import { readOperationInput } from './identity';
import { plainParameter } from './parameters';
import { runBatch } from './runBatch';
import { runItems, type ItemResult, type ItemState } from './runItems';

/**
 * One operation of a resource: its entry in the Operation dropdown, its fields, and its `execute`, whose
 * signature is the node's own (`Execute`): the router never calls it, the node's Route does.
 */
export interface Operation<
	Execute extends (...args: never[]) => Promise<unknown> = (...args: never[]) => Promise<unknown>,
> {
	/** Value in the node's Operation dropdown (the `operation` parameter). */
	value: string;
	/** Dropdown label. */
	name: string;
	/** Action text (n8n's node panel). */
	action: string;
	description: string;
	/** The operation's own input fields, each shown only for its resource and operation (none: the node's shared fields). */
	fields?: INodeProperties[];
	/**
	 * Names of the main outputs the operation sends items to, in index order, when the node's outputs follow
	 * the operation (Route.outputs an OutputSpec); none: the OutputSpec's `names`.
	 */
	outputs?: string[];
	/** Runs the operation. @throws ContractError */
	execute: Execute;
	/**
	 * Fields whose default expression the router computes from the item itself while a node keeps that
	 * default (readFields DirectDefaults: the same value, without n8n's expression engine).
	 */
	directDefaults?: Record<string, DirectDefault>;
}

/** A resource of the Resource dropdown and its operations, in dropdown order. */
export interface Resource<Op extends { value: string } = Operation> {
	value: string;
	name: string;
	operations: Op[];
}

/**
 * The operation `operation` of resource `resource`.
 * @param label the node, for the error message (e.g. "ArangoCAS")
 * @throws Error for an unknown pair (a corrupted workflow)
 */
export function findOperation<Op extends { value: string }>(
	resources: Resource<Op>[],
	resource: string,
	operation: string,
	label = 'node',
): Op {
	const found = lookup(resources, resource, operation);
	if (!found) throw new Error(`unknown ${label} operation ${resource}/${operation}`);
	return found;
}

function lookup<Op extends { value: string }>(
	resources: Resource<Op>[],
	resource: string,
	operation: string,
): Op | undefined {
	return resources.find((r) => r.value === resource)?.operations.find((o) => o.value === operation);
}

/**
 * A node whose main outputs follow its Resource and Operation parameters: an operation has its own
 * `outputs`, else `names`; a node of a version below `fixedBefore.version` always has `fixedBefore.names`
 * (the outputs it had before, so existing workflows keep their connections). n8n appends the error output
 * after these when the node's On Error is "Continue (using error output)": its index is their count.
 */
export interface OutputSpec {
	/** Output names of an operation that declares none. */
	names: string[];
	fixedBefore?: { version: number; names: string[] };
}

/** The main output names of `operation` (undefined: unknown) on a node of version `typeVersion`. */
export function outputNamesOf(
	spec: OutputSpec,
	operation: { outputs?: string[] } | undefined,
	typeVersion: number,
): string[] {
	if (spec.fixedBefore && typeVersion < spec.fixedBefore.version) return spec.fixedBefore.names;
	return operation?.outputs ?? spec.names;
}

/** n8n output configurations (main, with a label each) for output names. */
export function mainOutputs(names: string[]): INodeOutputConfiguration[] {
	return names.map((displayName) => ({ type: NodeConnectionTypes.Main, displayName }));
}

/**
 * The node description's `outputs` as an n8n expression of the node's parameters and version (evaluated by
 * the editor for the canvas and by the engine for the error output, as n8n's Switch v3 does): the outputs
 * of outputNamesOf for the selected Resource / Operation. Only operations whose outputs differ from the
 * spec's `names` are listed in it.
 */
export function outputsExpression<Op extends Operation>(resources: Resource<Op>[], spec: OutputSpec): ExpressionString {
	const byOperation: Record<string, INodeOutputConfiguration[]> = {};
	for (const resource of resources)
		for (const op of resource.operations)
			if (op.outputs) byOperation[`${resource.value}.${op.value}`] = mainOutputs(op.outputs);
	const operationOutputs = `(${JSON.stringify(byOperation)}[$parameter.resource + "." + $parameter.operation] || ${JSON.stringify(mainOutputs(spec.names))})`;
	return spec.fixedBefore
		? `={{ $nodeVersion < ${spec.fixedBefore.version} ? ${JSON.stringify(mainOutputs(spec.fixedBefore.names))} : ${operationOutputs} }}`
		: `={{ ${operationOutputs} }}`;
}

/** What an operation answered, as the router turns it into output items. */
export interface Answer {
	/** `data` of the one SuccessEnvelope for the item… */
	data?: Record<string, unknown>;
	/** …or the `data` of one envelope per element (none when empty). */
	many?: Record<string, unknown>[];
	/** Main output index (default 0). */
	output?: number;
	/** status_code of the envelope (default 200). */
	statusCode?: number;
}

/** One item as the router hands it to the node's Route, ctx already set. */
export interface RoutedItem<Op> {
	item: INodeExecutionData;
	itemIndex: number;
	state: ItemState;
	resource: string;
	operationValue: string;
	operation: Op;
	/** The item's Options collection (`{}` when unset). */
	options: Record<string, unknown>;
	/** Workflow Label: Options → Workflow Label, else the Route's default. */
	workflow: string;
	correlationId: string;
	/** The node's name on the canvas. */
	node: string;
}

/** What the node read from the item before its ctx is built. */
export interface Incoming {
	/** Correlation id candidates, in order: the first UUID is the item's correlation id. */
	correlationIds: unknown[];
	/** A travelling ctx the item brought (its keys come first in the item's ctx). */
	ctx?: Record<string, unknown>;
	/** The operation's input when the node reads it itself (else the operation's fields are read). */
	input?: unknown;
}

/**
 * How one node routes its items. `Conn`: the execution's connection; `Context`: what one item's
 * operation receives (built per item from Conn).
 */
export interface Route<Op extends Operation, Conn, Context> {
	/** The node, in the unknown-operation error. */
	label: string;
	resources: Resource<Op>[];
	/**
	 * Main outputs: a count (default 1), or outputs that follow the operation (OutputSpec: the node returns
	 * as many output arrays as the operation of its parameters has at the node's version).
	 */
	outputs?: number | OutputSpec;
	/** Whether ctx names the item's `resource.operation` (ctx.operation). */
	ctxOperation?: boolean;
	/** Whether each output item also carries the item's final ctx beside the envelope (`json.ctx`). */
	ctxInOutput?: boolean;
	/**
	 * The execution's connection: reads the credential (once per execution). `node`: the execution's
	 * `getNode()`, read once by the router (a deep copy each call).
	 */
	connect(fn: IExecuteFunctions, node: INode): Promise<Conn>;
	/** Workflow Label when Options → Workflow Label is empty. */
	workflow(operation: Op | undefined): string;
	/** Reads what the ctx is built from (before the ctx exists: a failure here leaves the error item without ctx). */
	incoming(fn: IExecuteFunctions, item: INodeExecutionData, itemIndex: number): Incoming;
	/** The item's operation context (after the ctx is set). */
	context(fn: IExecuteFunctions, conn: Conn, routed: RoutedItem<Op>): Context;
	/** Runs one item's operation. @throws ContractError */
	execute(operation: Op, context: Context, input: unknown): Promise<Answer>;
	/**
	 * When the operation of the execution's first item writes all items at once (one statement for the
	 * batch), that call: one Answer or that item's own ContractError per entry, in order.
	 */
	batch?(
		operation: Op,
	): ((entries: Array<{ context: Context; input: unknown }>) => Promise<Array<Answer | ContractError>>) | undefined;
}

interface Prepared<Op, Context> {
	routed: RoutedItem<Op>;
	context: Context;
	input: unknown;
}

/**
 * Reads the item's Resource and Operation parameters: as stored when they hold no expression (they take none,
 * noDataExpression), else through n8n (parameters.ts plainParameter; issue 29 P7).
 */
function pair(fn: IExecuteFunctions, node: INode, itemIndex: number): [string, string] {
	return [
		plainParameter(fn, node, 'resource', itemIndex) as string,
		plainParameter(fn, node, 'operation', itemIndex) as string,
	];
}

/** How many main output arrays the node returns (n8n moves error items to the one after them). */
function outputCount<Op extends Operation>(
	fn: IExecuteFunctions,
	node: INode,
	resources: Resource<Op>[],
	outputs: number | OutputSpec | undefined,
): number {
	if (typeof outputs !== 'object') return outputs ?? 1;
	const { parameters, typeVersion } = node;
	// Resource and Operation take no expressions (noDataExpression): the first item's are the node's
	const [resource, operation] =
		fn.getInputData().length > 0 ? pair(fn, node, 0) : [String(parameters.resource), String(parameters.operation)];
	return outputNamesOf(outputs, lookup(resources, resource, operation), typeVersion).length;
}

/**
 * Runs every input item through its operation (see the file comment).
 * @returns one array per main output (Route.outputs: a count, or the outputs of the node's operation and
 *   version), items paired to their inputs
 * @throws NodeOperationError in n8n's stop mode (runItems / runBatch), Error when the connection cannot be opened
 */
export async function routeItems<Op extends Operation, Conn, Context>(
	fn: IExecuteFunctions,
	route: Route<Op, Conn, Context>,
): Promise<INodeExecutionData[][]> {
	// the node once per execution (getNode deep-copies it): its name, stored parameters and version
	const nodeInfo = fn.getNode();
	const conn = await route.connect(fn, nodeInfo);
	const node = nodeInfo.name;
	const outputs = outputCount(fn, nodeInfo, route.resources, route.outputs);
	const prepare = (item: INodeExecutionData, itemIndex: number, state: ItemState): Prepared<Op, Context> => {
		const [resource, operationValue] = pair(fn, nodeInfo, itemIndex);
		const found = lookup(route.resources, resource, operationValue);
		const options = plainParameter(fn, nodeInfo, 'options', itemIndex, {}) as Record<string, unknown>;
		const workflow = (typeof options.workflow === 'string' && options.workflow) || route.workflow(found);
		const incoming = route.incoming(fn, item, itemIndex);
		const correlationId = (incoming.correlationIds.find(isUuid) as string | undefined) ?? newCorrelationId();
		state.ctx = newCtx({
			...incoming.ctx,
			correlation_id: correlationId,
			workflow,
			node,
			...(route.ctxOperation ? { operation: `${resource}.${operationValue}` } : {}),
		});
		const operation = found ?? findOperation(route.resources, resource, operationValue, route.label);
		const input =
			'input' in incoming
				? incoming.input
				: readOperationInput(
						fn,
						itemIndex,
						operation.fields ?? [],
						item.json,
						operation.directDefaults && { node: nodeInfo, json: item.json, values: operation.directDefaults },
					);
		const routed: RoutedItem<Op> = {
			item,
			itemIndex,
			state,
			resource,
			operationValue,
			operation,
			options,
			workflow,
			correlationId,
			node,
		};
		return { routed, context: route.context(fn, conn, routed), input };
	};
	const respond = ({ routed }: Prepared<Op, Context>, answer: Answer): ItemResult => {
		const { workflow, state } = routed;
		if ((answer.output ?? 0) >= outputs)
			throw ContractError.internal(
				`${route.label} ${routed.resource}/${routed.operationValue} answered on output ${answer.output}; the node has ${outputs}`,
			);
		// the item is the envelope without `error: null` (SuccessItem): n8n retries a node whose first item has a
		// defined json.error, so with Retry On Fail every success ran Max Tries times
		const envelope = (data: Record<string, unknown>): IDataObject => {
			// eslint-disable-next-line @typescript-eslint/no-unused-vars
			const { error, ...json } = success(data, {
				source: workflow,
				status_code: answer.statusCode ?? 200,
				correlation: correlationOf(state.ctx ?? {}, { workflow, node }),
			});
			const item = json as unknown as IDataObject;
			return route.ctxInOutput ? { ...item, ctx: state.ctx as IDataObject } : item;
		};
		return answer.many
			? { many: answer.many.map(envelope), output: answer.output }
			: { json: envelope(answer.data ?? {}), output: answer.output };
	};
	const items = fn.getInputData();
	const first = items.length > 0 ? lookup(route.resources, ...pair(fn, nodeInfo, 0)) : undefined;
	const batch = first && route.batch?.(first);
	if (batch) {
		return runBatch(
			fn,
			prepare,
			async (all) =>
				(await batch(all.map((p) => ({ context: p.context, input: p.input })))).map((r, k) =>
					r instanceof ContractError ? r : respond(all[k], r),
				),
			outputs,
		);
	}
	return runItems(
		fn,
		async (item, itemIndex, state) => {
			const prepared = prepare(item, itemIndex, state);
			return respond(prepared, await route.execute(prepared.routed.operation, prepared.context, prepared.input));
		},
		outputs,
		nodeInfo,
	);
}
