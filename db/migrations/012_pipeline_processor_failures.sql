-- 012: processors run outside the run's transaction (issue 13). Capture and Complete Step now run a
-- transition's EXTERNAL processors (n8n sub-workflows, seed 004) before writing, then write with a
-- compare-and-set on the capture token, so no pool connection or row lock is held while a sub-workflow
-- runs. A SYNC / ASYNC_SAME_TX processor failure leaves the run for a retry; this column counts those
-- failures per run, so that a processor that can never succeed ends the run FAILED after the node's
-- "Max Processor Failures" (default 3) instead of being retried by every Sweep forever.
ALTER TABLE maas.pipeline_runs ADD COLUMN processor_failures integer NOT NULL DEFAULT 0 CHECK (processor_failures >= 0);
