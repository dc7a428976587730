-- Issue 26 (items 1 and 3) for the ops.jobs worker side; docs/retry-safety.md "Jobs: claims and leases".
-- claim_key: md5 of (the JSON text of) the key of the Claim Jobs call that holds the job (Pipeline Capture: n8n instance,
-- workflow, execution, node, run index and item, identical when n8n retries the node). A Claim Jobs retried
-- after a lost reply, by the same worker with the same key, within the replay window, gets back the jobs
-- that call claimed (still running under it) instead of claiming new ones. NULL: no key (no replay).
-- lease_id: the lease of the n8n process that claimed the job (nodes/shared/jobs/lease.ts): that process
-- holds a session-level advisory lock on ops.job_lease_key(lease_id) on a connection of its own for as long
-- as it lives; PostgreSQL drops the lock when the connection closes (the process died). Release Stale
-- releases a running job whose lease is not held for longer than its grace period. NULL: claimed without
-- a lease (before this migration, or by a caller that gives none): released by age only.
-- ops.job_lease_absences: when Release Stale first saw a lease of running jobs not held (forgotten once
-- it is held again or holds no running job).
SET lock_timeout = '5s';

ALTER TABLE ops.jobs
  ADD COLUMN IF NOT EXISTS claim_key text,
  ADD COLUMN IF NOT EXISTS lease_id uuid;

-- the replay lookup (claim key + worker) and Release Stale's leases of running jobs
CREATE INDEX IF NOT EXISTS jobs_running_claim_key_idx ON ops.jobs (claim_key) WHERE status = 'running' AND claim_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_running_lease_idx ON ops.jobs (lease_id) WHERE status = 'running' AND lease_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS ops.job_lease_absences (
  lease_id    uuid PRIMARY KEY,
  -- the Release Stale run that first found the lease not held (statement time)
  since       timestamptz NOT NULL DEFAULT now()
);

-- The advisory lock key (bigint) of a lease: the first 64 bits of its uuid. The lease's process locks it
-- with pg_try_advisory_lock(ops.job_lease_key(id)); nothing else takes it.
CREATE OR REPLACE FUNCTION ops.job_lease_key(lease uuid) RETURNS bigint
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT ('x' || translate(left(lease::text, 18), '-', ''))::bit(64)::bigint $$;

-- Whether some session of this database holds the lease's advisory lock right now, read from pg_locks
-- (never by taking the lock: a checker that took it, even briefly, could make the holder's reconnect
-- fail). pg_advisory_lock(bigint) shows as classid = high 32 bits, objid = low 32 bits, objsubid = 1.
CREATE OR REPLACE FUNCTION ops.job_lease_held(lease uuid) RETURNS boolean
  LANGUAGE sql STABLE STRICT
  AS $$
  SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database())
      AND l.classid = ((ops.job_lease_key(lease) >> 32) & 4294967295)::oid
      AND l.objid = (ops.job_lease_key(lease) & 4294967295)::oid)
  $$;

COMMENT ON COLUMN ops.jobs.claim_key IS
  'md5 of the Claim Jobs call key that holds the job (replay of a lost reply); NULL: no key';
COMMENT ON COLUMN ops.jobs.lease_id IS
  'Lease of the claiming process (advisory lock ops.job_lease_key(lease_id)); NULL: claimed without lease';
