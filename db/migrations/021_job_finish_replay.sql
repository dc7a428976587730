-- Issue 26 item 1 (docs/retry-safety.md "Jobs: finish and enqueue"): Finish Job is safe to retry after a
-- lost reply. FINISH_JOBS closes the attempt's ops.job_runs row and, when the caller gave the attempt's
-- claim token, stores md5 of that token in finish_key (a digest: the token is the attempt's capability
-- and must not stay readable). A later Finish Job with the same token finds that run (FINISH_REPLAYS): it
-- is this attempt's own committed finish, answered with the outcome and `replayed: true` instead of a 409.
-- The Error Pipe's job path (failJobCtes), given the attempt's token, stores md5('error_pipe:' || token):
-- the same envelope sent again for that claim finds its run (same last_error) and is answered with the
-- first ops.errors row, no second one. The prefix keeps the two apart: a run closed by the Error Pipe or
-- by Release Stale (NULL) is never a Finish Job's replay, so a late caller is still refused.
-- NULL: closed by Release Stale, closed without a token, or closed before this migration.
SET lock_timeout = '5s';

ALTER TABLE ops.job_runs ADD COLUMN IF NOT EXISTS finish_key text;

COMMENT ON COLUMN ops.job_runs.finish_key IS
  'md5 of the claim token Finish Job closed this run with (md5(''error_pipe:'' || token) for the Error Pipe; NULL: closed otherwise); a retry with that token is a replay';
