/**
 * Run → Create Run (seed 001 step 0, Request Handler): a NEW pipeline run and its raw_logs `user_query`
 * row in one statement; the trigger notifies 'pipeline_events'.
 * Input: `user_id` (the Identity fields: the verified token's claim by default; see
 * shared/node/identity.ts), `query`.
 * Output (201): `{ request_id, status: "processing", raw_log_id }`.
 * Errors: 401/403 identity (nothing written), 422 (field named), 503 database unreachable.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { parseInput } from '../../../shared/contracts/input';
import { fieldsOf } from '../../../shared/node/fields';
import { identityFields } from '../../../shared/node/identity';
import type { PipelineOperation } from '../types';
import { CREATE_RUN } from '../../../shared/statements/pipelineRuns';
import { PIPELINE_INPUT, query, RequiredText, UserId } from './runRow';

/** What Create Run validates: the owner and the query (both trimmed, not empty). */
const CreateRunInput = z.object({ user_id: UserId, query: RequiredText });

/** Create Run (step 0): `{ request_id, status: "processing", raw_log_id }`. */
export async function createRun(
	pool: Pool,
	input: { user_id: unknown; query: unknown; correlation_id?: string | null },
) {
	const { user_id: userId, query: text } = parseInput(CreateRunInput, input, PIPELINE_INPUT);
	const [row] = await query<{ id: string; raw_log_id: string }>(
		pool,
		CREATE_RUN,
		[userId, text, input.correlation_id ?? null],
		'insert',
	);
	return { request_id: row.id, status: 'processing', raw_log_id: Number(row.raw_log_id) };
}

export const createRunOperation: PipelineOperation = {
	value: 'createRun',
	name: 'Create Run',
	action: 'Create a pipeline run',
	description: 'Start a run for a user query (status NEW) and log the query',
	fields: fieldsOf({ resource: 'run', operation: 'createRun' }, [
		...identityFields("Who asks (the run's owner: only they can poll its status)"),
		{
			displayName: 'Query',
			name: 'query',
			required: true,
			typeOptions: { rows: 3 },
			description: "The user's question",
		},
	]),
	async execute(deps, input) {
		return {
			data: await createRun(deps.pool, { user_id: input.user_id, query: input.query }),
			output: 0,
			statusCode: 201,
		};
	},
};
