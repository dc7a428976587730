/**
 * Run → Get Status (seed 001 step 4, polling): `{ request_id, status: "processing" }`, or
 * `{ request_id, status: "completed", answer }`, or `{ request_id, status: "failed", error }`.
 * Errors: 404 unknown run; 422 not a UUID; 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { getStatus } from './runs';

export const getStatusOperation: PipelineOperation = {
	value: 'getStatus',
	name: 'Get Status',
	action: 'Get the status of a pipeline run',
	description: 'The polling answer: processing, completed with the answer, or failed with the error',
	fields: fieldsOf({ resource: 'run', operation: 'getStatus' }, [
		{ displayName: 'Run ID', name: 'runId', required: true, default: '={{ ($json.params || {}).id || ($json.query || {}).id || $json.request_id }}', description: 'The request_id Create Run returned' },
	]),
	async execute(ctx, input) {
		return { data: await getStatus(ctx.pool, { run_id: input.run_id }), output: 0 };
	},
};
