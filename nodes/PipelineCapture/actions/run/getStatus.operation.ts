/**
 * Run → Get Status (seed 001 step 4, polling): `{ request_id, status: "processing" }`, or
 * `{ request_id, status: "completed", answer }`, or `{ request_id, status: "failed", error }`.
 * Input: `run_id`, `user_id` (the Identity fields: the verified token's claim by default; see
 * shared/node/identity.ts). Only the run's owner gets an answer.
 * Errors: 401/403 identity; 404 unknown run, or another user's run (same message and details, so ids
 * cannot be probed); 422 not a UUID; 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import { identityFields } from '../../../shared/node/identity';
import type { PipelineOperation } from '../types';
import { getStatus } from './runs';

export const getStatusOperation: PipelineOperation = {
	value: 'getStatus',
	name: 'Get Status',
	action: 'Get the status of a pipeline run',
	description:
		"The polling answer for the run's owner: processing, completed with the answer, or failed with the error",
	fields: fieldsOf({ resource: 'run', operation: 'getStatus' }, [
		{
			displayName: 'Run ID',
			name: 'runId',
			required: true,
			default: '={{ ($json.params || {}).id || ($json.query || {}).id || $json.request_id }}',
			description: 'The request_id Create Run returned',
		},
		...identityFields('Who polls: only the user who created the run gets its status, anyone else 404'),
	]),
	async execute(deps, input) {
		// user_id is never null here: undefined (an empty User ID field) is refused 422, never "any owner".
		return {
			data: await getStatus(deps.pool, { run_id: input.run_id, user_id: input.user_id ?? undefined }),
			output: 0,
		};
	},
};
