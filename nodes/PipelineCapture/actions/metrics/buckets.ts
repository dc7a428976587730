/**
 * The bounds of Pipeline Metrics' histograms, seconds (seed 001 §9; docs/metrics.md). The rollup of
 * db/migrations/017 counts into the same bounds: each list must equal its SQL function there.
 * Used by ./exposition.ts (the histograms' `le` labels).
 */

/** Bounds of the NEW → COMPLETED histogram, seconds; db/migrations/017 maas.metric_run_bounds() holds the same. */
export const RUN_DURATION_BUCKETS = [0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600];

/** Bounds of the per-attempt model-time histogram, seconds; 017 maas.metric_attempt_bounds() holds the same. */
export const MODULE_DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Bounds of the job-attempt run-time histogram, seconds; 017 maas.metric_job_bounds() holds the same. */
export const JOB_RUN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
