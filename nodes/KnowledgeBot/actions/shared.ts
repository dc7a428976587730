/**
 * Pieces the Knowledge Bot operations share: the job-carried ctx of a source (../../shared/contracts/sourceCtx.ts),
 * and enqueueing once, checked against the job-type registry (../../shared/jobs).
 */
export { SourceCtx } from '../../shared/contracts/sourceCtx';
export { enqueueJobs, enqueueOnce, type WantedJob } from '../../shared/jobs/enqueue';
export { JOB_TYPES } from '../../shared/jobs/registry';
