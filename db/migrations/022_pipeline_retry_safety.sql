-- Issue 26 item 1: every pipeline_runs state change is safe to retry after a lost reply (the statement
-- committed, the answer never came); docs/retry-safety.md "Pipeline runs".
--
-- completed_steps: each Complete Step that moves a run appends md5 of the capture token it consumed (a
-- digest: the token is a credential of the worker and must not stay readable in the row); a later call
-- with that token finds its digest and answers as the first call did (replayed: true) instead of 409
-- ILLEGAL_TRANSITION. One entry per completed step of the run.
ALTER TABLE maas.pipeline_runs ADD COLUMN completed_steps text[] NOT NULL DEFAULT '{}';

-- capture_key: the caller's key of the Capture that holds the run (Pipeline Capture: the n8n execution,
-- node, run index and item, identical when n8n retries the node); a Capture with the same key that finds
-- the run where that capture took it, still under its token, is its own retry and gets that token back.
ALTER TABLE maas.pipeline_runs ADD COLUMN capture_key text;
