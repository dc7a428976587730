-- Issue 25 §2 (seed 002 §1: ops.errors is written always): one ops.errors row per failed n8n execution
-- that no error branch recorded. The catch-all error workflow (WF99e, an Error Trigger → Error Pipe with
-- "Once per Failed Execution") writes its row only when it claims the execution here first; an error
-- branch's row (Error Pipe in WF99, called by the failing execution) claims it too, as it is inserted.
-- The claim is the primary key: two claims of one execution never both succeed, a claim that waits on
-- an uncommitted one sees its outcome (INSERT … ON CONFLICT DO NOTHING), and a retried catch-all finds
-- its own claim (error_id is the id it took up front), so a lost reply never writes a second row.
CREATE TABLE ops.error_executions (
  -- n8n's execution id (text: n8n's ids are strings of digits) of the execution that failed
  execution_id  text PRIMARY KEY CHECK (length(execution_id) BETWEEN 1 AND 256),
  -- the first ops.errors row written for it (deferred: the catch-all claims before it inserts the row)
  error_id      bigint NOT NULL REFERENCES ops.errors (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
  -- 'branch' (an error branch through WF99) or 'catch_all' (the error workflow)
  recorded_by   text NOT NULL CHECK (recorded_by IN ('branch', 'catch_all')),
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX error_executions_error_idx ON ops.error_executions (error_id);

-- Every ops.errors row that names its execution (details.execution_id, set by the Error Pipe) claims it,
-- unless a row claimed it already (several items of one execution may each have their row).
CREATE FUNCTION ops.claim_error_execution() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ops.error_executions (execution_id, error_id, recorded_by)
  VALUES (NEW.details->>'execution_id', NEW.id,
          CASE WHEN NEW.details->>'recorded_by' = 'catch_all' THEN 'catch_all' ELSE 'branch' END)
  ON CONFLICT (execution_id) DO NOTHING;
  RETURN NULL;
END
$$;

CREATE TRIGGER errors_claim_execution
  AFTER INSERT ON ops.errors
  FOR EACH ROW
  WHEN (jsonb_typeof(NEW.details->'execution_id') = 'string'
        AND length(NEW.details->>'execution_id') BETWEEN 1 AND 256)
  EXECUTE FUNCTION ops.claim_error_execution();
