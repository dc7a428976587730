-- 012: processors run outside the run's transaction (issue 13). Capture and Complete Step now run a
-- transition's EXTERNAL processors (n8n sub-workflows, seed 004) before writing, then write with a
-- compare-and-set on the capture token, so no pool connection or row lock is held while a sub-workflow
-- runs. A SYNC / ASYNC_SAME_TX processor failure leaves the run for a retry; this column counts those
-- failures per run, so that a processor that can never succeed ends the run FAILED after the node's
-- "Max Processor Failures" (default 3) instead of being retried by every Sweep forever.
ALTER TABLE maas.pipeline_runs ADD COLUMN processor_failures integer NOT NULL DEFAULT 0 CHECK (processor_failures >= 0);

-- A run given back after a failed capture processor (status changes together with processor_failures)
-- is not notified: a worker would capture it again at once and use up Max Processor Failures within
-- milliseconds of a short outage. The Sweep re-emits it once it has waited lost_after_seconds (its
-- updated_at is the failure), which is the retry's backoff. FAILED is always notified.
DROP TRIGGER pipeline_runs_notify_status ON maas.pipeline_runs;
CREATE TRIGGER pipeline_runs_notify_status AFTER UPDATE OF status ON maas.pipeline_runs
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status
    AND (NEW.processor_failures = OLD.processor_failures OR NEW.status = 'FAILED'))
  EXECUTE FUNCTION maas.notify_pipeline_change();
