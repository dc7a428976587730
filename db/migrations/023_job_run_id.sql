-- Issue 29 (P2: what Claim Jobs + Finish Job cost): the job keeps the id of its latest ops.job_runs row.
-- Claim Jobs takes the run's id from the runs' sequence while it claims (ops.jobs.run_id) and inserts the
-- run under it; Finish Job and a replayed claim then find the open run by that id (a primary-key read)
-- instead of looking up the job's newest running run in ops.job_runs for every job. NULL: the job was never
-- claimed, or was claimed before this migration (then the newest running run is looked up as before).
SET lock_timeout = '5s';

ALTER TABLE ops.jobs ADD COLUMN IF NOT EXISTS run_id bigint;

COMMENT ON COLUMN ops.jobs.run_id IS
  'The job''s latest ops.job_runs row (the open attempt while running), set by Claim Jobs; NULL: never claimed since migration 023';

-- A run is opened without finished_at and closed with it: its NULL entry in job_runs_finished_idx was one more
-- index write per claim that no reader uses (Get Stats and the job-runs metrics read finished runs only).
DROP INDEX IF EXISTS ops.job_runs_finished_idx;
CREATE INDEX job_runs_finished_idx ON ops.job_runs (finished_at) WHERE finished_at IS NOT NULL;
