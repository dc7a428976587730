/**
 * Run → Capture (seed 001 "idempotent capture"): moves the run along a CAPTURE_* transition of the
 * state machine when it is in that transition's source state. Exactly one of concurrent callers wins.
 * Input: `run_id`, `transition` (CAPTURE_ANALYSIS | CAPTURE_ASSEMBLY | CAPTURE_RESPONSE).
 * Output 0 "Done": `{ captured: true, run_id, status, capture_token, run }` — pass capture_token to
 * Complete Step. Output 1 "Not Captured": `{ captured: false, run_id, status, transition, reason }` — not an
 * error: `reason: "TAKEN"` (another worker was first; `status` is the state that won, e.g. ANALYZING, read
 * after the winner committed) or `"BLOCKED"` (seed 001 blocking rule: an older run of the user is not archived
 * yet; `status` is still the source state, NEW).
 * The transition's EXTERNAL processors run for the winner (Calculation Nodes) after the capture committed,
 * with no connection or lock held; a SYNC / ASYNC_SAME_TX failure gives the run back (RELEASE, compare-and-set
 * on the capture token) or, at Max Processor Failures, ends it FAILED. `warnings` (output 0): the
 * ASYNC_NEW_TX failures, also recorded in ops.errors.
 * A retry after a lost reply finds this worker's own capture and answers output 0 again, with the same
 * capture_token and `replayed: true` (docs/retry-safety.md).
 * Errors: 404 unknown run; 409 ILLEGAL_TRANSITION (legal ones listed); 400 WORKFLOW_FAILED /
 * NO_COMPUTE_MEMBER_FOR_TAG (a processor); 422; 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { DEFAULT_MAX_PROCESSOR_FAILURES, MAX_PROCESSOR_FAILURES_FIELD } from './processorOutcome';
import { capture } from './runs';

export const captureOperation: PipelineOperation = {
	value: 'capture',
	name: 'Capture',
	action: 'Capture a pipeline run',
	description: 'Take a waiting run for this worker (exactly one worker wins)',
	outputs: ['Done', 'Not Captured'],
	fields: fieldsOf({ resource: 'run', operation: 'capture' }, [
		{
			displayName: 'Run ID',
			name: 'runId',
			required: true,
			default: '={{ $json.id || $json.run_id || $json.request_id }}',
			description: 'The pipeline run (request_id)',
		},
		{
			displayName: 'Transition',
			name: 'transition',
			type: 'options',
			options: [
				{ name: 'CAPTURE_ANALYSIS (NEW → ANALYZING)', value: 'CAPTURE_ANALYSIS' },
				{ name: 'CAPTURE_ASSEMBLY (ANALYZED → ASSEMBLING)', value: 'CAPTURE_ASSEMBLY' },
				{ name: 'CAPTURE_RESPONSE (READY → RESPONDING)', value: 'CAPTURE_RESPONSE' },
			],
			default: 'CAPTURE_ANALYSIS',
			description: 'The capture transition of the state machine to take',
		},
		MAX_PROCESSOR_FAILURES_FIELD,
	]),
	async execute(deps, input) {
		const result = await capture(
			deps.pool,
			await deps.definition(),
			{
				run_id: input.run_id,
				transition: String(input.transition),
				worker: deps.worker,
				capture_key: deps.callKey ?? null,
			},
			{
				runProcessor: deps.runProcessor,
				maxProcessorFailures: Number(input.max_processor_failures ?? DEFAULT_MAX_PROCESSOR_FAILURES),
				origin: deps.origin,
			},
		);
		const base = {
			captured: result.captured,
			run_id: result.run.id,
			status: result.run.status,
			transition: result.transition.name,
		};
		return result.captured
			? {
					data: {
						...base,
						capture_token: result.run.capture_token,
						run: result.run,
						warnings: result.warnings,
						...(result.replayed ? { replayed: true } : {}),
					},
					output: 0,
				}
			: { data: { ...base, reason: result.reason }, output: 1 };
	},
};
