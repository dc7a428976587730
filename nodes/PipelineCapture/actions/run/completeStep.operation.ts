/**
 * Run → Complete Step: stores the step's result and moves the run to the next state in one statement,
 * only for the worker holding the capture token. ANALYSIS_DONE stores `analysis_result` (JSON),
 * ASSEMBLY_DONE `final_context_payload` (and `draft_context` when given), RESPONSE_DONE `final_answer`.
 * Input: `run_id`, `transition`, `capture_token`, `result`, `draft_context`, `max_processor_failures`.
 * The transition's EXTERNAL processors (Calculation Nodes) and the automated cascade run first, with no
 * connection or lock held; then one compare-and-set write (runs.ts completeStep). All or nothing.
 * Output: `{ run_id, status, warnings }` (status FAILED when the cascade hit a limit; `warnings` the
 * ASYNC_NEW_TX failures, also in ops.errors). A retry with a token whose step committed already (its reply
 * was lost) answers on output 0 with `replayed: true`, the run's status as it is now and no warnings
 * (docs/retry-safety.md). Errors: 404; 409 ILLEGAL_TRANSITION (run released, failed
 * or completed meanwhile, also while the processors ran; legal transitions listed), 409
 * CRITERION_NOT_MET; 400 WORKFLOW_FAILED / NO_COMPUTE_MEMBER_FOR_TAG (a processor failed or has no
 * sub-workflow: nothing applied, the run stays captured until Max Processor Failures, then FAILED;
 * details.failures, details.run_status); 422; 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { DEFAULT_MAX_PROCESSOR_FAILURES, MAX_PROCESSOR_FAILURES_FIELD } from './processorOutcome';
import { completeStep } from './runs';

export const completeStepOperation: PipelineOperation = {
	value: 'completeStep',
	name: 'Complete Step',
	action: 'Complete a pipeline step',
	description: "Store the step's result and move the run on (holder of the capture only)",
	fields: fieldsOf({ resource: 'run', operation: 'completeStep' }, [
		{ displayName: 'Run ID', name: 'runId', required: true, description: 'The captured run' },
		{
			displayName: 'Transition',
			name: 'transition',
			type: 'options',
			options: [
				{ name: 'ANALYSIS_DONE (ANALYZING → ANALYZED, Stores Analysis_result)', value: 'ANALYSIS_DONE' },
				{ name: 'ASSEMBLY_DONE (ASSEMBLING → READY, Stores Final_context_payload)', value: 'ASSEMBLY_DONE' },
				{ name: 'RESPONSE_DONE (RESPONDING → COMPLETED, Stores Final_answer)', value: 'RESPONSE_DONE' },
			],
			default: 'ANALYSIS_DONE',
			description: 'The completion transition of the step',
		},
		{
			displayName: 'Capture Token',
			name: 'captureToken',
			required: true,
			description: 'The capture_token Capture returned',
		},
		{
			displayName: 'Result',
			name: 'result',
			required: true,
			description: "The step's result: an object for the analysis, text for the others",
		},
		{
			displayName: 'Draft Context',
			name: 'draftContext',
			description: "The assembler's draft (ASSEMBLY_DONE only; kept when empty)",
		},
		MAX_PROCESSOR_FAILURES_FIELD,
	]),
	async execute(deps, input) {
		const run = await completeStep(
			deps.pool,
			await deps.definition(),
			{
				run_id: input.run_id,
				transition: String(input.transition),
				capture_token: input.capture_token,
				result: input.result,
				draft_context: input.draft_context,
			},
			{
				runProcessor: deps.runProcessor,
				maxProcessorFailures: Number(input.max_processor_failures ?? DEFAULT_MAX_PROCESSOR_FAILURES),
				origin: deps.origin,
			},
		);
		const data = { run_id: run.id, status: run.status, warnings: run.warnings };
		return { data: 'replayed' in run ? { ...data, replayed: true } : data, output: 0 };
	},
};
