/**
 * Job → Finish Job: all items of one execution are finished in ONE statement (FINISH_JOBS, unnest of
 * arrays), each only while running under its worker (and claim token); each item keeps its own output or
 * error (pairedItem). Per job: succeeded; or, on failure, queued again after min(3600, 10·2^(attempts−1)) s ±20 %
 * while attempts remain (retryable), dead after max_attempts, failed when not retryable. The attempt's
 * ops.job_runs row is written with the outcome (under the run id Claim Jobs reserved, migration 026).
 * Input: `job_id`, `worker` (default: the item's locked_by), `claim_token` (default: the item's claim_token, the
 * uuid Claim Jobs returned; empty: not checked), `success`, `retryable`, `error`. Output: `{ id, status, attempts,
 * max_attempts, next_run_at, run_id, replayed? | already_finished? }`. Safe to retry after a lost reply (n8n's
 * Retry On Fail, issue 26): a retry with the same claim token and outcome whose first call committed is
 * answered with that outcome and `replayed: true` (docs/retry-safety.md "Jobs: finish and enqueue").
 * Errors: 409 NOT_LOCKED_BY_WORKER (not running under this worker and claim token — finished by another
 * caller, released as stale or claimed again — unless Accept Already Finished); 404 JOB_NOT_FOUND; 422
 * (claim_token not a UUID); 503 (retryable: the statement may have committed; retry with the same input).
 */
import { ContractError } from '../../../shared/errors';
import { finishJobs, type FinishInput } from '../../../shared/jobs/queue';
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineContext, PipelineOperation, PipelineResult } from '../types';

/** The item's fields as finishJobs reads them (worker: the field, else this execution's worker). */
function finishInput(deps: PipelineContext, input: Record<string, unknown>): FinishInput {
	return {
		job_id: input.job_id,
		worker: typeof input.worker === 'string' && input.worker ? input.worker : deps.worker,
		success: input.success !== false,
		retryable: input.retryable !== false,
		error: input.error,
		accept_finished: input.accept_finished === true,
		claim_token: input.claim_token,
	};
}

export const finishJobOperation: PipelineOperation = {
	value: 'finishJob',
	name: 'Finish Job',
	action: 'Finish a job',
	description: 'Mark a claimed job done, or failed with retry, dead letter or final failure',
	fields: fieldsOf({ resource: 'job', operation: 'finishJob' }, [
		{
			displayName: 'Job ID',
			name: 'jobId',
			required: true,
			default: '={{ $json.id || $json.job_id }}',
			description: 'The claimed job (ops.jobs.id)',
		},
		{
			displayName: 'Worker',
			name: 'worker',
			default: '={{ $json.locked_by }}',
			description: 'The worker that claimed the job (its locked_by); empty: this execution',
		},
		{
			displayName: 'Claim Token',
			name: 'claimToken',
			default: '={{ $json.claim_token }}',
			description:
				'The claim_token Claim Jobs returned for this attempt: a job released and claimed again is not finished by a late caller. Empty: not checked.',
		},
		{
			displayName: 'Success',
			name: 'success',
			type: 'boolean',
			default: true,
			description: "Whether the job's work succeeded",
		},
		{
			displayName: 'Retryable',
			name: 'retryable',
			type: 'boolean',
			default: true,
			description: 'Whether a failure may succeed on a later attempt',
		},
		{
			displayName: 'Error',
			name: 'error',
			default: '={{ $json.error }}',
			description: 'The failure (object with message, or text); ignored on success',
		},
		{
			displayName: 'Accept Already Finished',
			name: 'acceptFinished',
			type: 'boolean',
			default: false,
			description:
				'Whether a job that is no longer running under this worker (the Error Pipe already retried or failed it) is returned as it is (already_finished: true) instead of a 409',
		},
	]),
	async execute(deps, input) {
		const [job] = await finishJobs(deps.pool, [finishInput(deps, input)]);
		if (job instanceof ContractError) throw job;
		return { data: job, output: 0 };
	},
	async executeBatch(entries) {
		if (entries.length === 0) return [];
		const jobs = await finishJobs(
			entries[0].deps.pool,
			entries.map((e) => finishInput(e.deps, e.input)),
		);
		return jobs.map((job): PipelineResult | ContractError =>
			job instanceof ContractError ? job : { data: job, output: 0 },
		);
	},
};
