/**
 * The statuses the schema allows (db/migrations/001_ops_raw_core.sql CHECK constraints):
 *  - ops.jobs.status: queued (waiting, due at next_run_at) → running (claimed) → succeeded | failed (not
 *    retryable) | dead (no attempt left); a retryable failure with attempts left goes back to queued;
 *  - ops.job_runs.status (one row per ended attempt, written when it ends, migration 026): succeeded | failed |
 *    retry | dead; `running` only on a run a claim opened before migration 026.
 */
export const JOB_STATUS = {
	queued: 'queued',
	running: 'running',
	succeeded: 'succeeded',
	failed: 'failed',
	dead: 'dead',
} as const;
export type JobStatus = (typeof JOB_STATUS)[keyof typeof JOB_STATUS];

/** ops.job_runs.status of an attempt. */
export const JOB_RUN_STATUS = {
	running: 'running',
	succeeded: 'succeeded',
	failed: 'failed',
	retry: 'retry',
	dead: 'dead',
} as const;
export type JobRunStatus = (typeof JOB_RUN_STATUS)[keyof typeof JOB_RUN_STATUS];

/** The statuses of a job that is finished for good (retention prunes these). */
export const FINISHED_JOB_STATUSES: readonly JobStatus[] = [JOB_STATUS.succeeded, JOB_STATUS.failed, JOB_STATUS.dead];
