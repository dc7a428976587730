-- Issue 26 item 1 (docs/retry-safety.md "Jobs: finish and enqueue"): Finish Job is safe to retry after a
-- lost reply. FINISH_JOBS closes the attempt's ops.job_runs row and, when the caller gave the attempt's
-- claim token, stores md5 of that token in finish_key (a digest: the token is the attempt's capability
-- and must not stay readable). A later Finish Job with the same token finds that run (FINISH_REPLAYS): it
-- is this attempt's own committed finish, answered with the outcome and `replayed: true` instead of a 409.
-- A run closed by Release Stale or the Error Pipe has no finish_key: a late caller is still refused.
-- NULL: not closed by Finish Job, closed without a token, or closed before this migration.
SET lock_timeout = '5s';

ALTER TABLE ops.job_runs ADD COLUMN IF NOT EXISTS finish_key text;

COMMENT ON COLUMN ops.job_runs.finish_key IS
  'md5 of the claim token Finish Job closed this run with (NULL: closed otherwise); a retry with that token is a replay';
