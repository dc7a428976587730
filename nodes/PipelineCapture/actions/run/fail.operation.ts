/**
 * Run → Fail: FAILED with the error, from any non-terminal state (seed 001 "* → FAILED").
 * Input: `run_id`, `error` (object or message). Output: `{ run_id, status: "FAILED", warnings }`.
 * The `FAIL` transition's EXTERNAL processors (Calculation Nodes), when the definition declares some, run
 * first with no connection or lock held, then one compare-and-set write (runs.ts failRun); `warnings` are
 * their ASYNC_NEW_TX failures (also in ops.errors; empty when none).
 * A retry after a lost reply (the run FAILED by FAIL with an equal error and this call's key: the same
 * n8n instance, workflow, execution, node, run index and item) answers the same, with `replayed: true`,
 * and runs no processor again. A SYNC / ASYNC_SAME_TX processor failure does not stop the run failing (Fail
 * is the way out of a run): it is FAILED anyway, the failure counted on the run (`processor_failures`),
 * recorded in ops.errors (severity error) in the same statement and returned as `processor_error: { code,
 * message }` (and in `warnings`). Errors: 404; 409 ALREADY_TERMINAL; 409 RUN_CHANGED (the run kept
 * changing while the processors ran); 422; 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { failRun } from './runs';

export const failOperation: PipelineOperation = {
	value: 'fail',
	name: 'Fail',
	action: 'Fail a pipeline run',
	description: "Mark a run FAILED with its error (after the FAIL transition's processors, if it has any)",
	fields: fieldsOf({ resource: 'run', operation: 'fail' }, [
		{ displayName: 'Run ID', name: 'runId', required: true, description: 'The run that failed' },
		{
			displayName: 'Error',
			name: 'error',
			default: '={{ $json.error || { message: "failed" } }}',
			description: 'What went wrong (an object with message, or text)',
		},
	]),
	async execute(deps, input) {
		const run = await failRun(
			deps.pool,
			await deps.definition(),
			{ run_id: input.run_id, error: input.error, call_key: deps.callKey ?? null },
			{ runProcessor: deps.runProcessor, origin: deps.origin },
		);
		const data = {
			run_id: run.id,
			status: run.status,
			warnings: run.warnings,
			...(run.processor_error ? { processor_error: run.processor_error } : {}),
		};
		return { data: 'replayed' in run ? { ...data, replayed: true } : data, output: 0 };
	},
};
