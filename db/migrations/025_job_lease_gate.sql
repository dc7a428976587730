-- 025: Claim Jobs' lease gate without reading pg_locks (issue 29 P2; docs/retry-safety.md "Jobs: claims and
-- leases"). Since migration 020 every claim asked ops.job_lease_held whether its process's lease is still held
-- on the server, and that function reads pg_locks: a snapshot of the whole lock table (every partition of the
-- lock manager and every backend's fast-path locks) on each claim. Measured with the claim as the node sends
-- it (a lease and a call key), 4 workers, batches of 10: 8,008 jobs/s with the pg_locks read, 9,787 with the
-- gate below, 9,932 with no lease at all (bench:jobs now measures the claim with its lease).
SET lock_timeout = '5s';

-- Whether another session holds the lease's advisory lock (exclusive: the lease process's
-- pg_try_advisory_lock) right now. Asked by trying the lock in share mode, which conflicts with an exclusive
-- lock on the key and with an exclusive request waiting for it. Only the lease process takes that lock, and
-- always with a try: NOTHING MAY WAIT ON A LEASE KEY (pg_advisory_lock), or this would answer true while the
-- waiter holds nothing. While the lease is held, nothing is taken and the answer is true. When it is not held
-- (a half-open lease connection: the process believes it holds a lock the server dropped), the caller's
-- transaction holds the lock in share mode until it ends (one claim statement): each reconnect attempt of
-- the lease that falls in that moment fails its try (cause LOCK_HELD_ELSEWHERE) and retries after its
-- backoff — only claims already in flight can do that, since new ones wait for the lease to be ready. Release
-- Stale does not count a share lock as the lease held (ops.job_lease_held below). The caller's own session
-- never holds the lease (it is held on a connection of its own, nodes/shared/jobs/lease.ts), so "another"
-- is the lease process. Needs this migration before the nodes that call it (Claim Jobs fails with 42883
-- without it).
CREATE OR REPLACE FUNCTION ops.job_lease_held_elsewhere(lease uuid) RETURNS boolean
  LANGUAGE sql VOLATILE STRICT
  AS $$ SELECT NOT pg_try_advisory_xact_lock_shared(ops.job_lease_key(lease)) $$;

-- Release Stale's check (migration 020), now counting only the lease process's exclusive lock: a claim's
-- share lock of a lease not held (above) is not the lease held, so it never resets the lease's absence.
CREATE OR REPLACE FUNCTION ops.job_lease_held(lease uuid) RETURNS boolean
  LANGUAGE sql STABLE STRICT
  AS $$
  SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.mode = 'ExclusiveLock'
      AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database())
      AND l.classid = ((ops.job_lease_key(lease) >> 32) & 4294967295)::oid
      AND l.objid = (ops.job_lease_key(lease) & 4294967295)::oid)
  $$;
