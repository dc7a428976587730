-- Issue 26 item 1: every pipeline_runs state change is safe to retry after a lost reply (the statement
-- committed, the answer never came); docs/retry-safety.md "Pipeline runs".
SET lock_timeout = '5s';

-- completed_steps: each Complete Step that moves a run appends md5 of the capture token it consumed (a
-- digest: the token is a credential of the worker and must not stay readable in the row); a later call
-- with that token finds its digest and answers as the first call did (replayed: true) instead of 409
-- ILLEGAL_TRANSITION. One entry per completed step of the run.
-- capture_key: the caller's key of the Capture that holds the run (Pipeline Capture: n8n instance,
-- workflow, execution, node, run index and item, identical when n8n retries the node); a Capture with the
-- same key by the same worker that finds the run where that capture took it, still under its token and
-- within the replay window, is its own retry and gets that token back.
-- capture_processed: the holding capture's processors succeeded (set with a compare-and-set on its token);
-- a replayed Capture does not run them again.
-- fail_key: md5 of the call key of the Fail that ended the run; only a Fail with the same key is its replay.
ALTER TABLE maas.pipeline_runs
  ADD COLUMN completed_steps text[] NOT NULL DEFAULT '{}',
  ADD COLUMN capture_key text,
  ADD COLUMN capture_processed boolean NOT NULL DEFAULT false,
  ADD COLUMN fail_key text;
