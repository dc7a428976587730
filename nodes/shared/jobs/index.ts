/** One home for the ops.jobs queue: statements, statuses, backoff, the job-type registry, enqueue, claim/finish/release, stats. */
export { nextRunAtSql, RETRY_BASE_SECONDS, RETRY_CAP_SECONDS } from './backoff';
export { enqueueJobs, enqueueOnce, type WantedJob } from './enqueue';
export {
	claimJobs,
	CLAIM_REPLAY_WINDOW_SECONDS,
	DEFAULT_LEASE_MAX_SECONDS,
	finishJob,
	finishJobs,
	jobTypeList,
	releaseStale,
	type FinishInput,
	type ReleaseStaleInput,
} from './queue';
export { closeJobLeases, JobLease, jobLeaseFor } from './lease';
export {
	isJobType,
	JOB_REGISTRY,
	JOB_TYPE_LIST,
	JOB_TYPES,
	validateJob,
	type JobType,
	type JobTypeEntry,
} from './registry';
export { jobStats, STATS_WINDOW_SECONDS, type JobTypeStats } from './stats';
export { FINISHED_JOB_STATUSES, JOB_RUN_STATUS, JOB_STATUS, type JobRunStatus, type JobStatus } from './status';
