/**
 * Run → Get Status (seed 001 step 4, polling): `{ request_id, status: "processing" }`, or
 * `{ request_id, status: "completed", answer }`, or `{ request_id, status: "failed", error }`.
 * Input: `run_id`, `user_id` (the Identity fields: the verified token's claim by default; see
 * shared/node/identity.ts). Only the run's owner gets an answer.
 * Errors: 401/403 identity; 404 unknown run, or another user's run (same message and details, so ids
 * cannot be probed); 422 not a UUID; 503.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { parseInput } from '../../../shared/contracts/input';
import { fieldsOf } from '../../../shared/node/fields';
import { identityFields } from '../../../shared/node/identity';
import type { PipelineOperation } from '../types';
import { publicRunError } from '../../../shared/envelopeBuilders';
import { ContractError } from '../../../shared/errors';
import { GET_RUN } from '../../../shared/statements/pipelineRuns';
import { PIPELINE_INPUT, query, RUNS, RunId, UserId } from './runRow';

/** What Get Status validates: the run (a UUID) and its owner (required; null: any owner). */
const StatusInput = z.object({ run_id: RunId, user_id: UserId.nullable() });

/**
 * Get Status (seed 001 step 4, polling): `{ request_id, status: "processing" }`,
 * `{ request_id, status: "completed", answer }` or `{ request_id, status: "failed", error }`; `error` is the
 * stored error's public message (publicRunError: a 4xx keeps its message, anything else a fixed text of its kind).
 * `user_id`: the caller; only that user's run is found. `null` reads any user's run (for callers that
 * are not a user, e.g. a maintenance workflow; the Get Status operation always passes its identity).
 * @throws 404 NOT_FOUND for an unknown run and, with the same message and details, for another
 *         user's run (ids cannot be probed); 422 run_id not a UUID, user_id missing
 */
export async function getStatus(pool: Pool, input: { run_id: unknown; user_id: unknown }) {
	const { run_id: id, user_id: owner } = parseInput(StatusInput, input, PIPELINE_INPUT);
	const [row] = await query<{ status: string; final_answer: string | null; error: Record<string, unknown> | null }>(
		pool,
		GET_RUN,
		[id, owner],
		'select',
	);
	if (!row)
		throw ContractError.notFound(
			`pipeline run ${id} does not exist`,
			{ code: 'NOT_FOUND', run_id: id },
			{ operation: 'select', ...RUNS },
		);
	if (row.status === 'COMPLETED') return { request_id: id, status: 'completed', answer: row.final_answer };
	if (row.status === 'FAILED')
		return {
			request_id: id,
			status: 'failed',
			error: publicRunError(row.error),
		};
	return { request_id: id, status: 'processing' };
}

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
