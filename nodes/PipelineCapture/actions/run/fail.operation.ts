/**
 * Run → Fail: FAILED with the error, from any non-terminal state (seed 001 "* → FAILED").
 * Input: `run_id`, `error` (object or message). Output: `{ run_id, status: "FAILED" }`.
 * A retry after a lost reply (the run FAILED by FAIL with an equal error and this call's key: the same
 * n8n instance, workflow, execution, node, run index and item) answers the same, with `replayed: true`. Errors: 404; 409 ALREADY_TERMINAL; 422; 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { failRun } from './runs';

export const failOperation: PipelineOperation = {
	value: 'fail',
	name: 'Fail',
	action: 'Fail a pipeline run',
	description: 'Mark a run FAILED with its error',
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
		const run = await failRun(deps.pool, await deps.definition(), {
			run_id: input.run_id,
			error: input.error,
			call_key: deps.callKey ?? null,
		});
		const data = { run_id: run.id, status: run.status };
		return { data: 'replayed' in run ? { ...data, replayed: true } : data, output: 0 };
	},
};
