/**
 * Run → Sweep (the last safety net, on a schedule): releases runs stuck in progress longer than
 * `stuck_after_seconds` back to their waiting state (RELEASE; the trigger notifies again), and emits
 * one item per run waiting longer than `lost_after_seconds` (its notification may have been lost), so
 * the orchestrator captures it.
 * RELEASE's EXTERNAL processors (Calculation Nodes), when the definition declares some, run per run with
 * nothing held, then a compare-and-set releases it (runs.ts sweep); a SYNC / ASYNC_SAME_TX failure leaves
 * the run in progress (counted; FAILED at Max Processor Failures).
 * Output: one item per run `{ id, status, swept: "released" | "refused" | "waiting" }`; `warnings` (the
 * ASYNC_NEW_TX failures, also in ops.errors) on the runs whose RELEASE has processors; `error: { code,
 * message, failures }` on a "refused" one (status: where it stays, or FAILED); none when all is well.
 */
import { z } from 'zod';
import { ContractError } from '../../../shared/errors';
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation, PipelineResult } from '../types';
import { DEFAULT_MAX_PROCESSOR_FAILURES, MAX_PROCESSOR_FAILURES_FIELD } from './processorOutcome';
import { sweep } from './runs';

const Input = z.object({
	stuck_after_seconds: z.coerce.number().int().min(1).max(86_400).default(300),
	lost_after_seconds: z.coerce.number().int().min(1).max(86_400).default(60),
	limit: z.coerce.number().int().min(1).max(10_000).default(50),
});

export const sweepOperation: PipelineOperation = {
	value: 'sweep',
	name: 'Sweep',
	action: 'Sweep stuck and forgotten runs',
	description: 'Release runs stuck in progress and re-emit runs whose notification was lost',
	fields: fieldsOf({ resource: 'run', operation: 'sweep' }, [
		{
			displayName: 'Stuck After (Seconds)',
			name: 'stuckAfterSeconds',
			type: 'number',
			default: 300,
			description:
				"A run in ANALYZING / ASSEMBLING / RESPONDING unchanged this long is released (after the RELEASE transition's processors, if it has any)",
		},
		{
			displayName: 'Lost After (Seconds)',
			name: 'lostAfterSeconds',
			type: 'number',
			default: 60,
			description: 'A run in NEW / ANALYZED / READY unchanged this long is re-emitted',
		},
		{
			displayName: 'Limit',
			name: 'limit',
			type: 'number',
			typeOptions: { minValue: 1 },
			default: 50,
			description: 'Max number of results to return',
		},
		MAX_PROCESSOR_FAILURES_FIELD,
	]),
	async execute(deps, input): Promise<PipelineResult> {
		const parsed = Input.safeParse(input);
		if (!parsed.success) {
			const field = parsed.error.issues[0].path.join('.');
			throw ContractError.validation(`invalid input: ${field} ${parsed.error.issues[0].message}`, {
				code: 'VALIDATION',
				field,
			});
		}
		const result = await sweep(deps.pool, await deps.definition(), parsed.data, {
			runProcessor: deps.runProcessor,
			maxProcessorFailures: Number(input.max_processor_failures ?? DEFAULT_MAX_PROCESSOR_FAILURES),
			origin: deps.origin,
		});
		return {
			many: [
				...result.released.map((r) => ({ ...r, swept: 'released' })),
				...result.refused.map((r) => ({ ...r, swept: 'refused' })),
				...result.waiting.map((r) => ({ ...r, swept: 'waiting' })),
			],
			output: 0,
		};
	},
};
