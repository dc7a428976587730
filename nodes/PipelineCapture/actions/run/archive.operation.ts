/**
 * Run → Archive (Archivist signal 2, seed 001): the LLM summary into lsm_storage and the run marked
 * archived, once, in one statement. Output: `{ run_id, lsm_id, next_run_id, warnings }` — the user's next
 * NEW run, which the blocking rule held back (send it to the Analyzer), or null.
 * When the definition declares `ARCHIVE` (COMPLETED → COMPLETED) with EXTERNAL processors (Calculation
 * Nodes), they run first with no connection or lock held (runs.ts archiveRun); `warnings` are their
 * ASYNC_NEW_TX failures (also in ops.errors; empty when none). A retry after a lost reply (archived with
 * this very summary and tags by this call: the same n8n instance, workflow, execution, node, run index and
 * item, migration 022) answers with the first `lsm_id` and `replayed: true` (200), `next_run_id` read
 * again, no processor run again.
 * A SYNC / ASYNC_SAME_TX processor failure is counted on the run (`processor_failures`): below Max
 * Processor Failures (input `max_processor_failures`, default 3, 0 = never) it is 400 WORKFLOW_FAILED /
 * NO_COMPUTE_MEMBER_FOR_TAG with `details.failures` / `details.limit`, nothing stored; at it the run is
 * archived anyway (201) with `processor_error: { code, message, failures }` and the failure in `warnings`
 * and recorded in ops.errors (severity error), so the user's next run is not held back for ever.
 * Errors: 404; 409 NOT_ARCHIVABLE (not COMPLETED, or archived already with another summary); 400; 422; 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { DEFAULT_MAX_PROCESSOR_FAILURES, MAX_PROCESSOR_FAILURES_FIELD } from './processorOutcome';
import { archiveRun } from './runs';

export const archiveOperation: PipelineOperation = {
	value: 'archive',
	name: 'Archive',
	action: 'Archive a completed pipeline run',
	description:
		"Store the run's summary in the long-term memory (LSM) and release the user's next run (after the ARCHIVE transition's processors, if the state machine declares it)",
	fields: fieldsOf({ resource: 'run', operation: 'archive' }, [
		{ displayName: 'Run ID', name: 'runId', required: true, description: 'The completed run' },
		{
			displayName: 'Summary',
			name: 'summary',
			required: true,
			typeOptions: { rows: 3 },
			description: "The Archivist's summary of the exchange",
		},
		{ displayName: 'Tags', name: 'tags', description: 'Comma-separated tags of the summary' },
		{
			...MAX_PROCESSOR_FAILURES_FIELD,
			description:
				"Failed ARCHIVE processor runs (SYNC / ASYNC_SAME_TX errors, timeouts, success: false, no calculation node), counted over the whole run, after which the run is archived anyway (the failure recorded) so the user's next run is not held back. 0 = never.",
		},
	]),
	async execute(deps, input) {
		const archived = await archiveRun(
			deps.pool,
			{ run_id: input.run_id, summary: input.summary, tags: input.tags, call_key: deps.callKey ?? null },
			await deps.definition(),
			{
				runProcessor: deps.runProcessor,
				maxProcessorFailures: Number(input.max_processor_failures ?? DEFAULT_MAX_PROCESSOR_FAILURES),
				origin: deps.origin,
			},
		);
		return { data: archived, output: 0, statusCode: archived.replayed ? 200 : 201 };
	},
};
