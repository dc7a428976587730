/**
 * Job → Claim Jobs: takes up to `batch_size` due jobs of `job_type` for this worker (`FOR UPDATE SKIP
 * LOCKED`; attempts counted; locked_by/locked_at set; a run id reserved each: the ops.job_runs row is written when the attempt ends), under this n8n
 * process's job lease (nodes/shared/jobs/lease.ts: Release Stale with a Lease Grace gives the jobs back
 * within seconds once the process died, never while it lives).
 * Output: one item per claimed job (the ops.jobs row + `run_id`); none when nothing is due.
 * A retry after a lost reply (n8n's Retry On Fail: same call key, same worker) gets the jobs the first call
 * claimed, with the same claim_token and run_id and `replayed: true`, and claims nothing new
 * (docs/retry-safety.md "Jobs: claims and leases"); no execution id → no call key → no replay.
 * Errors: 422; 503 (also JOB_LEASE_UNAVAILABLE: the process's lease connection is not up, `cause` its last
 * SQLSTATE/errno; JOB_LEASE_NOT_HELD: the server does not hold the lease — nothing claimed, the lease
 * reconnects). The lease needs a direct (session) connection to PostgreSQL, not a transaction-pooling PgBouncer.
 */
import { JOB_TYPES } from '../../../shared/jobs/registry';
import { jobLeaseFor } from '../../../shared/jobs/lease';
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { ContractError } from '../../../shared/errors';
import { claimJobs, LEASE_NOT_HELD } from '../../../shared/jobs/queue';

export const claimJobsOperation: PipelineOperation = {
	value: 'claimJobs',
	name: 'Claim Jobs',
	action: 'Claim due jobs',
	description: 'Take a batch of due jobs of one type for this worker (SKIP LOCKED)',
	fields: fieldsOf({ resource: 'job', operation: 'claimJobs' }, [
		{
			displayName: 'Job Type',
			name: 'jobType',
			required: true,
			default: JOB_TYPES.telegram_update,
			description:
				"The ops.jobs.job_type to take, or several separated by commas (e.g. telegram_update, url_normalize). The claims are held by this n8n process's job lease, which needs a direct (session) connection to PostgreSQL, not a transaction-pooling PgBouncer.",
		},
		{
			displayName: 'Batch Size',
			name: 'batchSize',
			type: 'number',
			default: 10,
			description: 'Most jobs taken at once (1–1000)',
		},
	]),
	async execute(deps, input) {
		const lease = jobLeaseFor(deps.pool);
		try {
			const jobs = await lease.use((leaseId) =>
				claimJobs(
					deps.pool,
					{ job_type: input.job_type, batch_size: input.batch_size, worker: deps.worker },
					{ claim_key: deps.callKey ?? null, lease_id: leaseId },
				),
			);
			return { many: jobs, output: 0 };
		} catch (error) {
			// a half-open lease connection: the server dropped our lock; take it again (the caller retries)
			if (error instanceof ContractError && error.details?.code === LEASE_NOT_HELD) lease.notHeld();
			throw error;
		}
	},
};
