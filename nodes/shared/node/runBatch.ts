/**
 * runItems (./runItems.ts) for an operation that writes all items of one execution at once: each item is
 * prepared on its own (its ctx, its input; a failure is that item's error), then ONE call handles every
 * prepared item and answers one result or ContractError per item. Outputs keep the input order and each
 * item's `pairedItem`; errors follow n8n's modes as in runItems:
 *  - stop (default): a failed preparation throws before the batch runs (nothing written); after it, the
 *    first failed item throws (the other items of the batch are written);
 *  - "Continue" / "Continue (using error output)": each failed item is its own `{ error: {...} }` item on
 *    output 0 (the engine moves it to the error output), the others are emitted as usual.
 * A batch that throws (e.g. the database is down) fails every prepared item with that error.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';
import { ContractError } from '../errors';
import { asContractError, errorJson, type ItemResult, type ItemState } from './runItems';

/**
 * @param prepare builds one item's work (may set `state.ctx` before failing)
 * @param batch handles every prepared item; answers per item, in order
 * @throws NodeOperationError in stop mode (see above)
 */
export async function runBatch<P>(
	fn: IExecuteFunctions,
	prepare: (item: INodeExecutionData, itemIndex: number, state: ItemState) => P | Promise<P>,
	batch: (prepared: P[]) => Promise<Array<ItemResult | ContractError>>,
	outputCount = 1,
): Promise<INodeExecutionData[][]> {
	const items = fn.getInputData();
	const node = fn.getNode();
	const states: ItemState[] = items.map(() => ({}));
	const results: Array<ItemResult | ContractError> = new Array(items.length);
	const ready: { index: number; prepared: P }[] = [];
	for (let i = 0; i < items.length; i++) {
		try {
			ready.push({ index: i, prepared: await prepare(items[i], i, states[i]) });
		} catch (thrown) {
			results[i] = asContractError(thrown);
		}
	}
	const stop = !fn.continueOnFail();
	const fail = (error: ContractError, itemIndex: number) =>
		new NodeOperationError(node, error.message, {
			itemIndex,
			description: `status ${error.statusCode} (${error.kind}${error.retryable ? ', retryable' : ''})`,
		});
	const failedEarly = results.findIndex((r) => r instanceof ContractError);
	if (stop && failedEarly >= 0) throw fail(results[failedEarly] as ContractError, failedEarly);
	if (ready.length > 0) {
		let answers: Array<ItemResult | ContractError>;
		try {
			answers = await batch(ready.map((r) => r.prepared));
		} catch (thrown) {
			const error = asContractError(thrown);
			answers = ready.map(() => error);
		}
		ready.forEach((r, k) => (results[r.index] = answers[k] ?? ContractError.internal('no result for this item')));
	}
	const outputs: INodeExecutionData[][] = Array.from({ length: outputCount }, () => []);
	for (let i = 0; i < items.length; i++) {
		const result = results[i];
		if (result instanceof ContractError) {
			if (stop) throw fail(result, i);
			outputs[0].push({ json: errorJson(result, node, states[i].ctx ?? {}), pairedItem: { item: i } });
			continue;
		}
		for (const json of result.many ?? [result.json ?? {}])
			outputs[result.output ?? 0].push({ json, pairedItem: { item: i } });
	}
	return outputs;
}
