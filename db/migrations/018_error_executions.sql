-- Issue 25 §2 (seed 002 §1: ops.errors is written always): one ops.errors row per failed n8n execution
-- that no error branch recorded. The catch-all error workflow (WF99e, an Error Trigger → Error Pipe with
-- "Once per Failed Execution") writes its row only when it claims the execution here first; an error
-- branch's row (Error Pipe in WF99, called by the failing execution) claims it too, as it is inserted.
-- An execution is named by its n8n instance and its id: n8n's execution ids are autoincrement integers of
-- one n8n database (a fresh database starts again at 1, two instances may share this contracts database).
-- The claim is the primary key: two claims of one execution never both succeed, a claim that waits on
-- an uncommitted one sees its outcome (INSERT … ON CONFLICT), and a retried catch-all finds its own claim
-- (error_id or catch_all_error_id is the id it took up front), so a lost reply never writes a second row.
-- A claim older than the window the writer gives (the Error Pipe: CLAIM_STALE_AFTER_SECONDS, 7 days) is
-- an id used again (a new n8n database): a new failure replaces it, in the same conditional statement.
CREATE TABLE ops.error_executions (
  -- n8n's instance id (getInstanceId(); '' when the row did not name one)
  instance_id   text NOT NULL CHECK (length(instance_id) <= 256),
  -- n8n's execution id (text: n8n's ids are strings of digits) of the execution that failed
  execution_id  text NOT NULL CHECK (length(execution_id) BETWEEN 1 AND 256),
  -- the first ops.errors row written for it (deferred: the catch-all claims before it inserts the row)
  error_id      bigint NOT NULL REFERENCES ops.errors (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
  -- 'branch' (an error branch through WF99) or 'catch_all' (the error workflow)
  recorded_by   text NOT NULL CHECK (recorded_by IN ('branch', 'catch_all')),
  -- the node whose error that first row records (ops.errors.node): the catch-all stays silent only for
  -- a failure of that same node; a failure of another node gets its own row
  node          text,
  -- the catch-all's row for a failure of another node than a branch recorded (linked to error_id by
  -- its details.branch_error_id); at most one per execution
  catch_all_error_id bigint REFERENCES ops.errors (id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (instance_id, execution_id)
);
CREATE INDEX error_executions_error_idx ON ops.error_executions (error_id);
CREATE INDEX error_executions_catch_all_error_idx ON ops.error_executions (catch_all_error_id);

-- Every error branch's ops.errors row that names its execution (details.execution_id, and
-- details.instance_id, set by the Error Pipe) claims it, unless a row claimed it already within the
-- last 7 days (several items of one execution may each have their row). The catch-all claims in its own
-- statement (its rows are left out here), and so does a row written when that claim failed (claim_failed).
CREATE FUNCTION ops.claim_error_execution() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ops.error_executions AS c (instance_id, execution_id, error_id, recorded_by, node)
  VALUES (coalesce(NEW.details->>'instance_id', ''), NEW.details->>'execution_id', NEW.id, 'branch', NEW.node)
  ON CONFLICT (instance_id, execution_id) DO UPDATE
    SET error_id = EXCLUDED.error_id, recorded_by = 'branch', node = EXCLUDED.node,
        catch_all_error_id = NULL, created_at = now()
    WHERE c.created_at < now() - interval '7 days';
  RETURN NULL;
END
$$;

CREATE TRIGGER errors_claim_execution
  AFTER INSERT ON ops.errors
  FOR EACH ROW
  WHEN (jsonb_typeof(NEW.details->'execution_id') = 'string'
        AND length(NEW.details->>'execution_id') BETWEEN 1 AND 256
        AND (NEW.details->'instance_id' IS NULL
             OR (jsonb_typeof(NEW.details->'instance_id') = 'string' AND length(NEW.details->>'instance_id') <= 256))
        AND NEW.details->>'recorded_by' IS DISTINCT FROM 'catch_all'
        AND NOT NEW.details ? 'claim_failed')
  EXECUTE FUNCTION ops.claim_error_execution();
