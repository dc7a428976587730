-- 026: an attempt's ops.job_runs row is written once, when the attempt ends (issue 29 P2; seed 003 WF90/WF99
-- "INSERT ops.job_runs"). Until now Claim Jobs inserted a `running` run for every job it claimed and Finish
-- Job, Release Stale and the Error Pipe's job path updated it: two writes of job_runs per attempt, one of
-- them a non-HOT update. Now Claim Jobs only reserves the run's id (ops.jobs.run_id, migration 023) and the
-- statement that ends the attempt inserts the run under that id, with the claim's worker and locked_at as
-- started_at (nodes/shared/statements/jobs.ts writeRun). A running attempt is its ops.jobs row (status
-- 'running', locked_by, locked_at, run_id). A run still `running` (opened by a claim before this migration)
-- is closed by the same statements under its id: nothing to convert. The statements need no schema change;
-- this migration records the rule and gives every running job claimed before migration 023 its run id.
-- Upgrade every process that runs Claim Jobs, Finish Job, Release Stale or the Error Pipe together (no
-- rolling deploy across this version): an older Finish Job or Release Stale ending an attempt this version
-- claimed finds no open run and writes none (and a retry of that Finish Job after a lost reply gets 409, not
-- a replay); an older Error Pipe writes its run under a new id, without the worker.
SET lock_timeout = '5s';

UPDATE ops.jobs j
SET run_id = (SELECT max(o.id) FROM ops.job_runs o WHERE o.job_id = j.id AND o.status = 'running')
WHERE j.status = 'running' AND j.run_id IS NULL;

COMMENT ON TABLE ops.job_runs IS
  'One row per ended attempt of an ops.jobs job, written when the attempt ends (migration 026) under the id Claim Jobs reserved in ops.jobs.run_id; status running only for attempts claimed before migration 026 and not yet ended';

COMMENT ON COLUMN ops.jobs.run_id IS
  'The id of the job''s latest attempt''s ops.job_runs row, reserved by Claim Jobs; the row exists once the attempt ended (migration 026); NULL: never claimed since migration 023';
