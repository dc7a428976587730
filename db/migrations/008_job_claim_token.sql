-- 008: a claim token per job attempt (issue 10 item 2; seed 002 §1.3, seed 003 ops.jobs).
-- Claim Jobs sets a fresh gen_random_uuid() on every claim and returns it with the job; Finish Job
-- (optionally), Release Stale and the Error Pipe clear it when they end the attempt. The Error Pipe's
-- job path applies only while the job is `running` under the token its ctx carries
-- (`ctx.job_claim_token`): a late error of an attempt that already ended, or of a worker whose job was
-- released and claimed again, is recorded as `job_outcome: "stale"` and leaves the job alone.
-- NULL: not claimed (queued or finished), or claimed before this migration.

ALTER TABLE ops.jobs ADD COLUMN claim_token uuid;

COMMENT ON COLUMN ops.jobs.claim_token IS
  'The open attempt''s claim (set by Claim Jobs, cleared when the attempt ends); ctx.job_claim_token';
