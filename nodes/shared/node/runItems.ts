/**
 * The per-item loop every node of this package uses: one handler call per input item, `pairedItem`
 * on every output item, and n8n 2.4.8's three error modes:
 *  - stop (default): the first failure throws a NodeOperationError naming the item;
 *  - "Continue" and "Continue (using error output)": the failed item is emitted as
 *    `{ json: { error: {...} }, pairedItem }`, the only shape the engine moves to the error output
 *    (an item-level `error` would have its json replaced by `{ error: message }`).
 * The error object carries the ctx and error_context the ErrorPipe (WF99) needs, so the error branch
 * keeps its context (seed 002 §2.2, §5.3).
 */
import type { IDataObject, IExecuteFunctions, INode, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { ContractError } from '../errors';
import { toJsonObject } from '../json';

/** What a handler may set while it works, read when it fails. */
export interface ItemState {
	/** ctx as far as it was built before the failure (seed 002 §2.2: built before any DB work). */
	ctx?: Record<string, unknown>;
}

export interface ItemResult {
	/** The output item's json (one output item for this input item). */
	json?: IDataObject;
	/** Several output items for this input item (e.g. claimed jobs); each paired to it. May be empty. */
	many?: IDataObject[];
	/** Index of the main output to send the item(s) to (default 0). */
	output?: number;
}

export type ItemHandler = (item: INodeExecutionData, itemIndex: number, state: ItemState) => Promise<ItemResult>;

/** Normalises anything thrown into a ContractError (unknown errors: 500, kind unknown, not retryable). */
export function asContractError(error: unknown): ContractError {
	if (error instanceof ContractError) return error;
	const message = error instanceof Error ? error.message : String(error);
	return ContractError.internal(message || 'unknown error', {}, {}, { cause: error });
}

/**
 * The json of an error item: `{ error: { message, description, kind, status_code, retryable, details,
 * node_type, ctx, error_context } }`. `error_context.node` is the node's name on the canvas.
 */
export function errorJson(
	error: ContractError,
	node: { name: string; type: string },
	ctx: Record<string, unknown>,
): IDataObject {
	const correlationId = typeof ctx.correlation_id === 'string' ? ctx.correlation_id : undefined;
	const errorContext: IDataObject = { node: node.name, error_message: error.message, status_code: error.statusCode };
	if (error.where.operation) errorContext.operation = error.where.operation;
	if (error.where.table) errorContext.table = error.where.table;
	if (error.where.collection) errorContext.collection = error.where.collection;
	if (correlationId) errorContext.correlation_id = correlationId;
	return {
		error: {
			message: error.message,
			kind: error.kind,
			status_code: error.statusCode,
			retryable: error.retryable,
			details: toJsonObject(error.details) as IDataObject,
			node_type: node.type,
			ctx: toJsonObject(ctx) as IDataObject,
			error_context: errorContext,
		},
	};
}

/**
 * Runs `handler` for every input item and routes results to `outputCount` main outputs. `node`: the
 * execution's `getNode()` when the caller has it already (saves a deep copy).
 * @throws NodeOperationError (with the status code and kind in its description) in stop mode
 */
export async function runItems(
	fn: IExecuteFunctions,
	handler: ItemHandler,
	outputCount = 1,
	node: INode = fn.getNode(),
): Promise<INodeExecutionData[][]> {
	const items = fn.getInputData();
	const outputs: INodeExecutionData[][] = Array.from({ length: outputCount }, () => []);
	for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
		const state: ItemState = {};
		try {
			const result = await handler(items[itemIndex], itemIndex, state);
			for (const json of result.many ?? [result.json ?? {}])
				outputs[result.output ?? 0].push({ json, pairedItem: { item: itemIndex } });
		} catch (thrown) {
			const error = asContractError(thrown);
			if (fn.continueOnFail()) {
				outputs[0].push({ json: errorJson(error, node, state.ctx ?? {}), pairedItem: { item: itemIndex } });
				continue;
			}
			throw new NodeOperationError(node, error.message, {
				itemIndex,
				description: `status ${error.statusCode} (${error.kind}${error.retryable ? ', retryable' : ''})`,
			});
		}
	}
	return outputs;
}
