/**
 * Every statement of the ops.jobs queue (seed 003 ops.jobs; migration 008 claim_token), in one place as
 * pg-boss keeps its `plans`. Bind parameters only. The functions that run them: ./queue.ts (claim, finish,
 * release stale; leases: ./lease.ts), ./enqueue.ts, ./stats.ts; the Error Pipe's job path uses `failJobCtes`
 * (FAIL_JOB here, RECORD_WITH_JOB in ./errors.ts), Telegram Ingest's raw.ingest_update `insertJobOncePerDedupKey`
 * (./telegramRaw.ts). One fail / retry rule (endAttemptSet), one release (releaseCtes); statuses from JOB_STATUS.
 * Every statement that ends an attempt (finish, release stale, fail/retry) clears `claim_token` and
 * applies only while the job is `running` under the lock it read (locked_by and/or claim_token).
 * Anchors: pg-boss (src/plans.ts) and graphile-worker (getJobs).
 */
import { nextRunAtSql } from '../jobs/backoff';
import { FINISHED_JOB_STATUSES, JOB_RUN_STATUS, JOB_STATUS } from '../jobs/status';
import { namedStatement } from '../postgres/prepared';
import { retentionBatch } from './core';

/**
 * The columns of the ops.jobs row Claim Jobs returns, in table order (migrations 001, 008, 020, 023), listed:
 * CLAIM_JOBS is a prepared statement (CLAIM_JOBS_NAMED), whose row type must not change when a later migration
 * adds a column (`j.*` would make every connection's claim fail with 0A000 "cached plan must not change result
 * type" until it closes). test/integration/jobStatementsPrepared.test.ts fails when the table has a column
 * this list lacks.
 */
export const JOB_ROW_COLUMNS = [
	'id',
	'tenant_id',
	'job_type',
	'payload',
	'status',
	'priority',
	'attempts',
	'max_attempts',
	'next_run_at',
	'locked_by',
	'locked_at',
	'last_error',
	'correlation_id',
	'dedup_key',
	'created_at',
	'updated_at',
	'finished_at',
	'claim_token',
	'claim_key',
	'lease_id',
	'run_id',
] as const;

/** JOB_ROW_COLUMNS qualified by `alias`, comma-separated (`alias` NULL::ops.jobs: a row of NULLs, typed). */
function jobColumns(alias: string): string {
	return JOB_ROW_COLUMNS.map((c) => `${alias}.${c}`).join(', ');
}

/**
 * Claim: up to $2 due jobs of the types $1 (text[]) for worker $3, `FOR UPDATE SKIP LOCKED` (concurrent
 * workers never get the same job); counts the attempt, sets locked_by/locked_at and a fresh claim_token,
 * stores the digest of the call key $4 (claim_key, ./queue.ts claimKeyDigest; NULL: none) and the claiming process's lease $5 (lease_id, uuid;
 * NULL: none; migration 020), and reserves each job's run id from the runs' sequence into ops.jobs.run_id
 * (migration 023) — all in this one statement. The attempt's ops.job_runs row is written under that id when
 * the attempt ends (migration 026: writeRun; a running attempt is its ops.jobs row). Columns: the ops.jobs row
 * (run_id: the attempt's run) + replayed + lease_lost.
 * Per type, the due jobs are read in the order of jobs_due_idx (job_type, priority DESC, next_run_at, id),
 * so a claim reads about $2 index entries of each type, not the whole queue (with `job_type = ANY(…)` the
 * index cannot give the order: every due job was read and sorted on each claim). The types' candidates are
 * merged in the same order; a candidate of one type locked but left out by the merge is not updated (its
 * lock ends with the statement). `next` is MATERIALIZED: the candidates are read and locked once.
 * Replay (issue 26, a retry after a lost reply): when jobs are still `running` under worker $3 with the
 * claim_key $4, claimed less than $6 seconds ago, the statement claims nothing new and returns those
 * jobs (their claim_token and run id unchanged; lease_id set to $5 when given; run_id looked up once for a
 * job claimed before migration 023) with `replayed = true`.
 * Lease gate: with a lease $5 whose advisory lock no other session holds now (ops.job_lease_held_elsewhere,
 * asked once: a try of the lock in share mode, migration 025 — not a read of pg_locks, which snapshots the
 * whole lock table), the statement claims and replays nothing and returns one row of NULLs with
 * `lease_lost = true` (the process believes it holds a lease the server dropped: a half-open connection;
 * ./queue.ts answers 503); the statement then holds that lock in share mode until it ends. Every other row
 * has `lease_lost = false`.
 * Prepared (CLAIM_JOBS_NAMED): the claimed rows are updated by `id = ANY (ARRAY(…))`, an index scan of the
 * primary key in the generic plan too (a join on `next` was planned from the LIMIT's default estimate — a
 * tenth of the table — as a sequential scan of ops.jobs).
 */
export const CLAIM_JOBS = claimJobsStatement({ runs: true });

/** CLAIM_JOBS as a named statement (../postgres/prepared.ts), as Claim Jobs runs it. */
export const CLAIM_JOBS_NAMED = namedStatement('claim_jobs', CLAIM_JOBS);

/**
 * CLAIM_JOBS (`runs: true`), or the same statement without its ops.job_runs bookkeeping (`runs: false`: no run
 * id reserved; run_id unchanged) — the latter only for bench:jobs's measurement of what the runs cost
 * (issue 29 P2); no node runs it.
 */
export function claimJobsStatement(o: { runs: boolean }): string {
	return `
WITH lease AS MATERIALIZED (
  SELECT $5::uuid IS NULL OR ops.job_lease_held_elsewhere($5::uuid) AS held
), replay AS (
  UPDATE ops.jobs j SET lease_id = coalesce($5::uuid, j.lease_id),
    run_id = coalesce(j.run_id, (SELECT max(o.id) FROM ops.job_runs o WHERE o.job_id = j.id AND o.status = 'running'))
  WHERE (SELECT held FROM lease) AND $4::text IS NOT NULL AND j.claim_key = $4::text AND j.status = 'running' AND j.locked_by = $3
    AND j.locked_at > now() - make_interval(secs => $6::float8)
  RETURNING ${jobColumns('j')}
), next AS MATERIALIZED (
  SELECT c.id
  FROM (SELECT DISTINCT unnest($1::text[]) AS job_type
        WHERE (SELECT held FROM lease) AND NOT EXISTS (SELECT 1 FROM replay)) t
  CROSS JOIN LATERAL (
    SELECT j.id, j.priority, j.next_run_at FROM ops.jobs j
    WHERE j.job_type = t.job_type AND j.status = 'queued' AND j.next_run_at <= now()
    ORDER BY j.priority DESC, j.next_run_at, j.id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
  ) c
  ORDER BY c.priority DESC, c.next_run_at, c.id
  LIMIT $2
), claimed AS (
  UPDATE ops.jobs j
  SET status = 'running', attempts = j.attempts + 1, locked_by = $3, locked_at = now(), updated_at = now(),
      claim_token = gen_random_uuid(), claim_key = $4::text, lease_id = $5::uuid${o.runs ? reserveRun() : ''}
  WHERE j.id = ANY (ARRAY(SELECT id FROM next))
  RETURNING ${jobColumns('j')}
)
SELECT claimed.*, false AS replayed, false AS lease_lost FROM claimed
UNION ALL
SELECT replay.*, true AS replayed, false AS lease_lost FROM replay
UNION ALL
SELECT ${jobColumns('(NULL::ops.jobs)')}, false AS replayed, true AS lease_lost
FROM lease WHERE NOT lease.held
ORDER BY priority DESC, id`;
}

/** CLAIM_JOBS's SET of the run id it reserves (migration 023). */
function reserveRun(): string {
	return ",\n      run_id = nextval('ops.job_runs_id_seq'::regclass)";
}

/**
 * The INSERT writing the ops.job_runs row of each attempt that ended, one per row of `o.from` (migration 026:
 * a run is written once, when its attempt ends, under the id Claim Jobs reserved in ops.jobs.run_id). The
 * id: `o.runId`; NULL (a job claimed before migration 023): the job's latest `running` run; none: a new id.
 * A run that exists under that id still `running` (opened by a claim before migration 026) is closed instead
 * (status, error, finished_at, finish_key; its started_at and worker kept). With `o.fresh`, a run id whose
 * run is written already (a job set `running` again other than by Claim Jobs, which reserves a new id) is
 * replaced by a new id; without it (Finish Job's hot path: one index read less per job) that run, like a run
 * of another job, is left as it is and nothing is written (no row returned). finished_at is now().
 * Returns r.id, r.job_id.
 *
 * @param o SQL expressions over `o.from`: jobId, runId, attempt, worker, correlation (uuid), status (a
 *   JOB_RUN_STATUS), error (jsonb object or NULL), startedAt (timestamptz), finishKey (text or NULL); fresh
 */
function writeRun(o: {
	from: string;
	jobId: string;
	runId: string;
	attempt: string;
	worker: string;
	correlation: string;
	status: string;
	error: string;
	startedAt: string;
	finishKey: string;
	fresh?: boolean;
}): string {
	const open = JOB_RUN_STATUS.running;
	const runId = o.fresh
		? `(SELECT x.id FROM (SELECT ${o.runId} AS id) x
                   WHERE NOT EXISTS (SELECT 1 FROM ops.job_runs w WHERE w.id = x.id AND w.status <> '${open}'))`
		: o.runId;
	return `INSERT INTO ops.job_runs AS r (id, job_id, attempt, status, worker, correlation_id, error, started_at, finished_at, finish_key)
  SELECT coalesce(${runId}, (SELECT max(o.id) FROM ops.job_runs o WHERE o.job_id = ${o.jobId} AND o.status = '${open}'),
                  nextval('ops.job_runs_id_seq'::regclass)),
         ${o.jobId}, ${o.attempt}, ${o.status}, ${o.worker}, ${o.correlation}, ${o.error}, ${o.startedAt}, now(), ${o.finishKey}
  FROM ${o.from}
  ON CONFLICT (id) DO UPDATE SET status = excluded.status, error = excluded.error, finished_at = excluded.finished_at,
    finish_key = excluded.finish_key
  WHERE r.status = '${open}' AND r.job_id = excluded.job_id
  RETURNING r.id, r.job_id`;
}

/**
 * The SET assignments `status`, `next_run_at`, `finished_at` of `ops.jobs j` for an attempt that ended, the
 * one fail / retry rule of Finish Job (FINISH_JOBS) and of the Error Pipe's job path (failJobCtes):
 * `succeeded` when `success` is true; else `failed` when `retryable` is false; else `dead` when no attempt
 * is left (attempts >= max_attempts, finished now); else `queued` again at the backoff's next run
 * (nextRunAtSql over `base` / `cap`, seconds), not finished. Statuses from JOB_STATUS.
 *
 * @param o.success SQL boolean expression of a success (absent: the attempt failed, as for the Error Pipe)
 * @param o.retryable SQL boolean expression of a retryable error
 * @param o.base placeholder of the backoff base (s); o.cap: of its cap (s)
 * @returns three comma-separated assignments, for an UPDATE of `ops.jobs j`
 */
function endAttemptSet(o: { success?: string; retryable: string; base: string; cap: string }): string {
	const retry = [o.success ? `NOT ${o.success}` : '', o.retryable, 'j.attempts < j.max_attempts']
		.filter(Boolean)
		.join(' AND ');
	const whens = [
		o.success ? `WHEN ${o.success} THEN '${JOB_STATUS.succeeded}'` : '',
		`WHEN NOT ${o.retryable} THEN '${JOB_STATUS.failed}'`,
		`WHEN j.attempts >= j.max_attempts THEN '${JOB_STATUS.dead}'`,
		`ELSE '${JOB_STATUS.queued}' END`,
	].filter(Boolean);
	return `status = CASE ${whens.join('\n                  ')},
    next_run_at = CASE WHEN ${retry}
      THEN ${nextRunAtSql('j.attempts', o.base, o.cap)} ELSE j.next_run_at END,
    finished_at = CASE WHEN ${retry} THEN NULL ELSE now() END`;
}

/**
 * SQL expression of the ops.job_runs status of an attempt from its job's new status (an SQL expression
 * of a JOB_STATUS value): succeeded, dead and failed as the job; queued (retried) is `retry`.
 */
function runStatusOf(jobStatus: string): string {
	const S = JOB_STATUS;
	const R = JOB_RUN_STATUS;
	return `CASE ${jobStatus} WHEN '${S.succeeded}' THEN '${R.succeeded}' WHEN '${S.queued}' THEN '${R.retry}' WHEN '${S.dead}' THEN '${R.dead}' ELSE '${R.failed}' END`;
}

/**
 * The CTEs `job` and `run` of Release Stale (RELEASE_STALE, RELEASE_STALE_LEASED), after a CTE `stale`
 * (the jobs to release, locked: `id`, `locked_by`, `locked_at`, and `reason` when `o.reason`): each job goes
 * back to `queued`, due now (`dead` and finished when no attempt is left), its lock, claim token, claim key and
 * lease cleared, its last_error `{ kind: 'timeout', message: o.jobMessage }`; its attempt's run is written
 * (writeRun) as retry / dead with error `{ kind: 'timeout', message: o.runMessage }`. `job` returns id,
 * status (and stale's reason).
 *
 * @param o.jobMessage SQL text expression of last_error.message (reads `j` and `stale`)
 * @param o.runMessage SQL text expression of the run's error.message (reads `job`)
 * @param o.reason whether `stale` has a `reason` column, returned by `job`
 */
function releaseCtes(o: { jobMessage: string; runMessage: string; reason?: boolean }): string {
	return `job AS (
  UPDATE ops.jobs j SET
    status = CASE WHEN j.attempts >= j.max_attempts THEN '${JOB_STATUS.dead}' ELSE '${JOB_STATUS.queued}' END,
    next_run_at = now(),
    last_error = jsonb_build_object('kind', 'timeout', 'message', ${o.jobMessage}),
    finished_at = CASE WHEN j.attempts >= j.max_attempts THEN now() ELSE NULL END,
    locked_by = NULL, locked_at = NULL, claim_token = NULL, claim_key = NULL, lease_id = NULL, updated_at = now()
  FROM stale WHERE j.id = stale.id
  RETURNING j.id, j.status, j.attempts, j.run_id, j.correlation_id, stale.locked_by, stale.locked_at${o.reason ? ', stale.reason' : ''}
), run AS (
  ${writeRun({
		from: 'job',
		jobId: 'job.id',
		runId: 'job.run_id',
		attempt: 'job.attempts',
		worker: 'job.locked_by',
		correlation: 'job.correlation_id',
		status: runStatusOf('job.status'),
		error: `jsonb_build_object('kind', 'timeout', 'message', ${o.runMessage})`,
		startedAt: 'coalesce(job.locked_at, now())',
		finishKey: 'NULL',
		fresh: true,
	})}
)`;
}

/**
 * Finish: every job of one execution in one statement, from parallel arrays (one element per job, job
 * ids distinct): $1 id bigint[], $2 worker text[], $3 success boolean[], $4 retryable boolean[], $5 error
 * jsonb[] (NULL on success), $6 backoff base s, $7 backoff cap s, $8 claim_token uuid[] (NULL element: not
 * checked). A job is finished only while `running` under its worker (and token when given): succeeded; or
 * queued again with backoff (retryable, attempts left), dead (none left), failed (not retryable). Its
 * attempt's ops.job_runs row is written with the outcome (writeRun: under ops.jobs.run_id; started_at the
 * claim's locked_at, worker the one given). The rows are locked in id order (no deadlock between two
 * batches). The run also keeps md5 of the claim token given (`finish_key`, migration 021; NULL without a
 * token): a retry of this finish after a lost reply finds it (CURRENT_JOBS). Columns: id, status, attempts,
 * max_attempts, next_run_at, run_id — one row per job finished (a job not held as given returns no row).
 */
export const FINISH_JOBS = finishJobsStatement({ runs: true });

/** FINISH_JOBS as a named statement (../postgres/prepared.ts), as Finish Job runs it. */
export const FINISH_JOBS_NAMED = namedStatement('finish_jobs', FINISH_JOBS);

/**
 * FINISH_JOBS (`runs: true`), or the same statement without writing the attempt's run (`runs: false`: run_id NULL)
 * — the latter only for bench:jobs's measurement of what the runs cost (issue 29 P2); no node runs it.
 */
export function finishJobsStatement(o: { runs: boolean }): string {
	return `
WITH input AS (
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::boolean[], $4::boolean[], $5::jsonb[], $8::uuid[])
    AS i(id, worker, success, retryable, error, token)
), locked AS (
  SELECT j.id, j.locked_at FROM ops.jobs j JOIN input i ON i.id = j.id ORDER BY j.id FOR UPDATE OF j
), job AS (
  UPDATE ops.jobs j SET
    ${endAttemptSet({ success: 'i.success', retryable: 'i.retryable', base: '$6', cap: '$7' })},
    last_error = CASE WHEN i.success THEN j.last_error ELSE i.error END,
    locked_by = NULL, locked_at = NULL, claim_token = NULL, updated_at = now()
  FROM input i, locked l
  WHERE j.id = i.id AND l.id = i.id AND j.status = 'running' AND j.locked_by = i.worker
    AND (i.token IS NULL OR j.claim_token = i.token)
  RETURNING j.id, j.status, j.attempts, j.max_attempts, j.next_run_at, j.run_id, j.correlation_id, l.locked_at,
    i.worker, i.success, i.error, i.token
)${o.runs ? writeFinishedRuns() : ''}
SELECT job.id, job.status, job.attempts, job.max_attempts, job.next_run_at, ${o.runs ? 'run.id' : 'NULL::bigint'} AS run_id
FROM job${o.runs ? ' LEFT JOIN run ON run.job_id = job.id' : ''}`;
}

/** FINISH_JOBS's CTE writing each finished job's run with the outcome (writeRun, migration 026). */
function writeFinishedRuns(): string {
	return `, run AS (
  ${writeRun({
		from: 'job',
		jobId: 'job.id',
		runId: 'job.run_id',
		attempt: 'job.attempts',
		worker: 'job.worker',
		correlation: 'job.correlation_id',
		status: runStatusOf('job.status'),
		error: 'CASE WHEN job.success THEN NULL ELSE job.error END',
		startedAt: 'coalesce(job.locked_at, now())',
		finishKey: 'md5(job.token::text)',
	})}
)`;
}

/**
 * What Finish Job answers for the inputs FINISH_JOBS did not finish, in one statement — parallel arrays, one
 * element per input: $1 id bigint[], $2 claim token uuid[] (NULL: none given), $3 success boolean[],
 * $4 retryable boolean[], $5 error jsonb[] (NULL on success), $6 accept_finished boolean[]. Per input (n,
 * its 1-based position):
 *  - its own finish committed earlier (a retry after a lost reply, issue 26): one of the job's runs was
 *    closed by FINISH_JOBS under that token (finish_key = md5(token), migration 021; found by
 *    job_runs_job_idx) with the same outcome — succeeded for a success; for a failure the same error
 *    (jsonb equality) and failed (not retryable) or retry/dead (retryable). `replayed` true, `status` the
 *    job status that finish set (succeeded, queued, dead, failed), `attempts` that attempt, `run_id` its run;
 *  - else, with accept_finished: the job as it is (Accept Already Finished), `replayed` false, run_id NULL;
 *  - else no row (a 409, or 404 when the job does not exist).
 * Columns: n, id, status, attempts, max_attempts, next_run_at (the job's, as it is now), run_id, replayed.
 */
export const CURRENT_JOBS = `
WITH input AS (
  SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::boolean[], $4::boolean[], $5::jsonb[], $6::boolean[])
    WITH ORDINALITY AS i(id, token, success, retryable, error, accept, n)
)
SELECT i.n, j.id,
       CASE WHEN r.id IS NULL THEN j.status WHEN r.status = 'retry' THEN 'queued' ELSE r.status END AS status,
       coalesce(r.attempt, j.attempts) AS attempts, j.max_attempts, j.next_run_at, r.id AS run_id,
       r.id IS NOT NULL AS replayed
FROM input i
JOIN ops.jobs j ON j.id = i.id
LEFT JOIN LATERAL (
  SELECT o.id, o.status, o.attempt FROM ops.job_runs o
  WHERE i.token IS NOT NULL AND o.job_id = i.id AND o.finish_key = md5(i.token::text)
    AND CASE WHEN i.success THEN o.status = 'succeeded'
             WHEN i.retryable THEN o.status IN ('retry', 'dead') AND o.error = i.error
             ELSE o.status = 'failed' AND o.error = i.error END
  LIMIT 1
) r ON true
WHERE r.id IS NOT NULL OR i.accept`;

/**
 * Release stale (by age only: Release Stale without a lease grace, as before migration 020): up to $2
 * running jobs locked longer than $1 seconds (their worker died) go back to the queue (dead when no attempt
 * is left), their runs written as retry / dead (writeRun). Columns: id, status, runs_closed (runs written).
 */
export const RELEASE_STALE = `
WITH stale AS (
  SELECT id, locked_by, locked_at FROM ops.jobs
  WHERE status = 'running' AND locked_at < now() - make_interval(secs => $1::float8)
  ORDER BY locked_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), ${releaseCtes({
	jobMessage: "'released: locked by ' || coalesce(j.locked_by, '?') || ' for longer than ' || $1::text || ' s'",
	runMessage: "'lock expired'",
})}
SELECT job.id, job.status, (SELECT count(*) FROM run) AS runs_closed FROM job`;

/**
 * Release stale with leases (issue 26 item 3, migration 020; nodes/shared/jobs/lease.ts): up to $2 running
 * jobs go back to the queue (dead when no attempt is left), their runs written as retry / dead (writeRun):
 *  - a job with a lease whose advisory lock no session holds exclusively (ops.job_lease_held: a read of
 *    pg_locks, the lock is never taken here; a claim's share lock, migration 025, does not count) since a Release Stale first saw it so, and since the job was claimed, at
 *    least $3 seconds ago (greatest(since, locked_at): the grace: a lease connection that reconnects within
 *    it keeps its jobs; a job claimed after the absence was recorded gets a whole grace) — reason `lease`;
 *  - a job with a lease locked longer than $4 seconds whatever its lease (the backstop, "Lease Max") —
 *    reason `lease_max`;
 *  - a job without a lease locked longer than $1 seconds (as RELEASE_STALE) — reason `age`.
 * Each run records the leases of running jobs not held now in ops.job_lease_absences (first time seen) and
 * forgets the others (held again, or no running job left); the lease's own process also deletes its row
 * each time it takes or probes its lock (LEASE_LOCK, LEASE_PROBE), so a short drop between two runs is not
 * added to an earlier one. Columns: id, status, runs_closed, reason.
 */
export const RELEASE_STALE_LEASED = `
WITH leases AS (
  SELECT l.lease_id, ops.job_lease_held(l.lease_id) AS held
  FROM (SELECT DISTINCT lease_id FROM ops.jobs WHERE status = 'running' AND lease_id IS NOT NULL) l
), forgotten AS (
  DELETE FROM ops.job_lease_absences a
  WHERE NOT EXISTS (SELECT 1 FROM leases s WHERE s.lease_id = a.lease_id AND NOT s.held)
  RETURNING a.lease_id
), absent AS (
  INSERT INTO ops.job_lease_absences AS a (lease_id)
  SELECT lease_id FROM leases WHERE NOT held
  ON CONFLICT (lease_id) DO UPDATE SET since = a.since
  RETURNING a.lease_id, a.since
), stale AS (
  SELECT j.id, j.locked_by, j.locked_at,
         CASE WHEN j.lease_id IS NULL THEN 'age'
              WHEN a.since IS NOT NULL AND greatest(a.since, j.locked_at) <= now() - make_interval(secs => $3::float8) THEN 'lease'
              ELSE 'lease_max' END AS reason
  FROM ops.jobs j LEFT JOIN absent a ON a.lease_id = j.lease_id
  WHERE j.status = 'running' AND (
    (j.lease_id IS NULL AND j.locked_at < now() - make_interval(secs => $1::float8))
    OR (j.lease_id IS NOT NULL
        AND ((a.since IS NOT NULL AND greatest(a.since, j.locked_at) <= now() - make_interval(secs => $3::float8))
             OR j.locked_at < now() - make_interval(secs => $4::float8))))
  ORDER BY j.locked_at
  LIMIT $2
  FOR UPDATE OF j SKIP LOCKED
), ${releaseCtes({
	jobMessage: `'released: ' || CASE stale.reason
      WHEN 'lease' THEN 'the lease of ' || coalesce(j.locked_by, '?') || ' was not held for ' || $3::text || ' s (its process died)'
      WHEN 'lease_max' THEN 'locked by ' || coalesce(j.locked_by, '?') || ' for longer than the lease max of ' || $4::text || ' s'
      ELSE 'locked by ' || coalesce(j.locked_by, '?') || ' for longer than ' || $1::text || ' s' END`,
	runMessage: "CASE job.reason WHEN 'lease' THEN 'lease lost' ELSE 'lock expired' END",
	reason: true,
})}
SELECT job.id, job.status, (SELECT count(*) FROM run) AS runs_closed, job.reason FROM job`;

/**
 * Lease: take lease $1's advisory lock on this session (pg_try_advisory_lock: never waits; false while an
 * earlier session of the lease still holds it) and, when taken, forget the lease's recorded absence
 * (ops.job_lease_absences: Release Stale counts the grace from a drop it sees after this). Column: held.
 */
export const LEASE_LOCK = `
WITH lock AS MATERIALIZED (SELECT pg_try_advisory_lock(ops.job_lease_key($1::uuid)) AS held),
forget AS (DELETE FROM ops.job_lease_absences a USING lock WHERE lock.held AND a.lease_id = $1::uuid)
SELECT held FROM lock`;

/**
 * Lease probe (every LEASE_PROBE_MS on the lease connection): whether THIS session (pg_backend_pid) holds
 * lease $1's advisory lock — false when the lock went elsewhere or vanished (a pooler that moved the session,
 * a lock released) — and, when it does, forget the lease's recorded absence (see LEASE_LOCK). Column: held.
 */
export const LEASE_PROBE = `
WITH mine AS MATERIALIZED (
  SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks l
    WHERE l.pid = pg_backend_pid() AND l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database())
      AND l.classid = ((ops.job_lease_key($1::uuid) >> 32) & 4294967295)::oid
      AND l.objid = (ops.job_lease_key($1::uuid) & 4294967295)::oid) AS held
), forget AS (DELETE FROM ops.job_lease_absences a USING mine WHERE mine.held AND a.lease_id = $1::uuid)
SELECT held FROM mine`;

/** Whether any job is running under lease $1 (jobs_running_lease_idx; an idle lease is closed only if not). Column: busy. */
export const LEASE_RUNNING_JOBS = `SELECT EXISTS (SELECT 1 FROM ops.jobs WHERE status = 'running' AND lease_id = $1::uuid) AS busy`;

/**
 * Enqueue once per dedup key (ops.jobs.dedup_key is unique): $1 tenant_id, $2 correlation_id, $3 JSON
 * array of `{ job_type, dedup_key, payload }`. Returns the id of every job, created now or found by its
 * dedup key. Columns: id, dedup_key.
 */
export const ENQUEUE_JOBS = `
WITH wanted AS (
  SELECT * FROM jsonb_to_recordset($3::jsonb) AS w(job_type text, dedup_key text, payload jsonb)
), created AS (
  INSERT INTO ops.jobs (tenant_id, job_type, payload, correlation_id, dedup_key)
  SELECT $1, job_type, payload, $2, dedup_key FROM wanted
  ON CONFLICT (dedup_key) DO NOTHING
  RETURNING id, dedup_key
)
SELECT id, dedup_key FROM created
UNION ALL
SELECT j.id, j.dedup_key FROM ops.jobs j JOIN wanted w ON w.dedup_key = j.dedup_key
WHERE NOT EXISTS (SELECT 1 FROM created c WHERE c.dedup_key = w.dedup_key)`;

/** Jobs by dedup key ($1 text[]), committed after ENQUEUE_JOBS' snapshot. Columns: id, dedup_key. */
export const JOBS_BY_DEDUP_KEY = 'SELECT id, dedup_key FROM ops.jobs WHERE dedup_key = ANY($1)';

/**
 * Fail / retry with backoff (the Error Pipe's job path, nodes/ErrorPipe/actions/record.ts; the rule of endAttemptSet) as CTEs `held`, `job`, `run`, `prior` over the 8 parameters from `$p`: job id, retryable,
 * last_error (jsonb, without error_id), backoff base, backoff cap, correlation id, token given (boolean),
 * token (uuid; NULL when the given token is not a UUID, which then matches nothing).
 * `errorId`: SQL expression of the ops.errors id stored in last_error.error_id.
 * With a token, the run it closes keeps `finish_key` = md5('error_pipe:' || token) (migration 021; never
 * equal to Finish Job's md5(token)); CTE `prior` finds the run an earlier call closed for the same claim
 * and the same last_error (its `error_id` and status; `error.details` is not part of last_error, so not
 * compared), so a repeated envelope is answered without a second row (issue 26). `prior` is read in the
 * statement's snapshot: the caller writes its ops.errors row under prior's `error_id` ON CONFLICT (id) DO
 * NOTHING (the row may be missing: written apart from the job path, its insert failed), and settles a
 * stale result again in a new snapshot (a concurrent original committed after this one's).
 */
export function failJobCtes(p: number, errorId: string): string {
	const [id, retryable, lastError, base, cap, correlation, tokenGiven, token] = Array.from(
		{ length: 8 },
		(_, i) => `$${p + i}`,
	);
	return `
error_json AS (SELECT ${lastError}::jsonb || jsonb_build_object('error_id', ${errorId}) AS v
), held AS (
  -- only the attempt still open: running, under the claim the error came from (issue 10 item 2); locked,
  -- so its worker and claim time are read before the job path clears them
  SELECT j.id, j.locked_by, j.locked_at FROM ops.jobs j
  WHERE j.id = ${id} AND j.status = 'running'
    AND (NOT ${tokenGiven}::boolean OR j.claim_token = ${token}::uuid)
  FOR UPDATE
), job AS (
  UPDATE ops.jobs j SET
    ${endAttemptSet({ retryable: `${retryable}::boolean`, base, cap })},
    locked_by = NULL, locked_at = NULL, claim_token = NULL,
    last_error = (SELECT v FROM error_json),
    updated_at = now()
  FROM held h
  WHERE j.id = h.id AND j.status = 'running'
    AND (NOT ${tokenGiven}::boolean OR j.claim_token = ${token}::uuid)
  RETURNING j.id, j.status, j.attempts, j.next_run_at, j.run_id, j.correlation_id, h.locked_by, h.locked_at
), run AS (
  -- the attempt's run (writeRun): under the id Claim Jobs reserved; a job set running other than by Claim
  -- Jobs gets a run of its own (a new id; the envelope's correlation id when the job never had a run id)
  ${writeRun({
		from: 'job',
		jobId: 'job.id',
		runId: 'job.run_id',
		attempt: 'greatest(job.attempts, 1)',
		worker: 'job.locked_by',
		correlation: `CASE WHEN job.run_id IS NULL THEN ${correlation}::uuid ELSE job.correlation_id END`,
		status: runStatusOf('job.status'),
		error: '(SELECT v FROM error_json)',
		startedAt: 'coalesce(job.locked_at, now())',
		finishKey: `CASE WHEN ${tokenGiven}::boolean THEN md5('error_pipe:' || ${token}::uuid::text) END`,
		fresh: true,
	})}
), prior AS (
  -- this error, recorded already for this claim (the same envelope again, issue 26): the run the job path
  -- closed under md5('error_pipe:' || token) with the same last_error; read in the statement's snapshot
  SELECT (r.error->>'error_id')::bigint AS error_id, r.status FROM ops.job_runs r
  WHERE ${tokenGiven}::boolean AND r.job_id = ${id} AND r.finish_key = md5('error_pipe:' || ${token}::uuid::text)
    AND r.error->>'error_id' IS NOT NULL AND r.error - 'error_id' = ${lastError}::jsonb
  ORDER BY r.id DESC LIMIT 1
)`;
}

/**
 * SQL expression (a scalar sub-select) of the job's next run while its last error is still the row of
 * failJobCtes' CTE `prior` (last_error.error_id = prior's error_id), else NULL. `id`: placeholder of the
 * job id. Read by FAIL_JOB and by the Error Pipe's RECORD_WITH_JOB (./errors.ts) as `prior_next_run_at`.
 */
export function priorNextRunAt(id: string): string {
	return `(SELECT j.next_run_at FROM ops.jobs j, prior
        WHERE j.id = ${id} AND (j.last_error->>'error_id')::bigint = prior.error_id)`;
}

/**
 * The Error Pipe's job path alone (nodes/ErrorPipe/actions/record.ts, when its row and job in one statement
 * failed with a SQLSTATE, and when an unknown outcome is settled): failJobCtes over $1–$8 (job id, retryable,
 * last_error, backoff base, cap, correlation id, token given, token), $9 the ops.errors id for
 * last_error.error_id (or NULL). One row: the job's new status and next run (NULL when it was left alone),
 * and `prior` (the same envelope recorded already for this claim: its error id, run status and the job's
 * next run while that error is still its last).
 * Columns: status, next_run_at, prior_error_id, prior_status, prior_next_run_at.
 */
export const FAIL_JOB = `
WITH ${failJobCtes(1, '$9::bigint').trimStart()}
SELECT (SELECT status FROM job) AS status, (SELECT next_run_at FROM job) AS next_run_at,
       (SELECT error_id FROM prior) AS prior_error_id, (SELECT status FROM prior) AS prior_status,
       ${priorNextRunAt('$1')} AS prior_next_run_at`;

/** The ops.jobs columns insertJobOncePerDedupKey fills. */
export type EnqueuedJobColumn = 'tenant_id' | 'job_type' | 'payload' | 'max_attempts' | 'correlation_id' | 'dedup_key';

/**
 * One job per row of `from`, once per dedup key: `INSERT INTO ops.jobs (tenant_id, job_type, payload,
 * max_attempts, correlation_id, dedup_key) SELECT … FROM <from> ON CONFLICT (dedup_key) DO NOTHING
 * RETURNING id` (a key already taken returns no row). Telegram Ingest's INGEST_UPDATE (./telegramRaw.ts)
 * builds its job with it, inside the text migration 015's raw.ingest_update holds verbatim: a change of
 * this layout needs a new migration (test/unit/ingestFunction.test.ts says so).
 *
 * @param values one SQL expression per column (all required)
 * @param from the row source (a CTE name)
 * @returns the statement text, a CTE body
 */
export function insertJobOncePerDedupKey(values: Readonly<Record<EnqueuedJobColumn, string>>, from: string): string {
	const v = values;
	return `INSERT INTO ops.jobs (tenant_id, job_type, payload, max_attempts, correlation_id, dedup_key)
  SELECT ${v.tenant_id}, ${v.job_type},
         ${v.payload},
         ${v.max_attempts}, ${v.correlation_id}, ${v.dedup_key}
  FROM ${from}
  ON CONFLICT (dedup_key) DO NOTHING
  RETURNING id`;
}

/**
 * Queue stats, one row per job type (the types $2 text[] always, plus every type found in ops.jobs or in
 * the window's runs; $3 text[] restricts to those types, NULL: all): counts per status, the age of the
 * oldest queued job (now − created_at, s) and how long the oldest due queued job has waited past its
 * next_run_at (s), and the attempts (ops.job_runs) finished in the last $1 seconds: how many, how many
 * failed (status failed, retry or dead), p50/p95 of their run time (finished_at − started_at, ms,
 * percentile_cont: linear interpolation). NULL where there is nothing to measure.
 */
export const JOB_STATS = `
WITH jobs AS (
  SELECT job_type,
         count(*) FILTER (WHERE status = 'queued')::int AS queued,
         count(*) FILTER (WHERE status = 'running')::int AS running,
         count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
         count(*) FILTER (WHERE status = 'failed')::int AS failed,
         count(*) FILTER (WHERE status = 'dead')::int AS dead,
         extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'queued'))::float8 AS oldest_queued_age_seconds,
         extract(epoch FROM now() - min(next_run_at) FILTER (WHERE status = 'queued' AND next_run_at <= now()))::float8 AS oldest_due_wait_seconds,
         extract(epoch FROM now() - min(locked_at) FILTER (WHERE status = 'running'))::float8 AS oldest_running_age_seconds
  FROM ops.jobs
  WHERE $3::text[] IS NULL OR job_type = ANY($3::text[])
  GROUP BY job_type
), runs AS (
  SELECT j.job_type,
         count(*)::int AS runs,
         count(*) FILTER (WHERE r.status IN ('failed', 'retry', 'dead'))::int AS failures,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM r.finished_at - r.started_at) * 1000)::float8 AS p50_ms,
         percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM r.finished_at - r.started_at) * 1000)::float8 AS p95_ms
  FROM ops.job_runs r JOIN ops.jobs j ON j.id = r.job_id
  WHERE r.finished_at >= now() - make_interval(secs => $1::float8)
    AND ($3::text[] IS NULL OR j.job_type = ANY($3::text[]))
  GROUP BY j.job_type
), types AS (
  SELECT job_type FROM jobs
  UNION SELECT job_type FROM runs
  UNION SELECT t FROM unnest($2::text[]) AS t WHERE $3::text[] IS NULL OR t = ANY($3::text[])
)
SELECT t.job_type,
       coalesce(jobs.queued, 0) AS queued, coalesce(jobs.running, 0) AS running,
       coalesce(jobs.succeeded, 0) AS succeeded, coalesce(jobs.failed, 0) AS failed, coalesce(jobs.dead, 0) AS dead,
       jobs.oldest_queued_age_seconds, jobs.oldest_due_wait_seconds, jobs.oldest_running_age_seconds,
       coalesce(runs.runs, 0) AS runs, coalesce(runs.failures, 0) AS failures, runs.p50_ms, runs.p95_ms
FROM types t LEFT JOIN jobs ON jobs.job_type = t.job_type LEFT JOIN runs ON runs.job_type = t.job_type
ORDER BY t.job_type`;

// --- Retention → Prune (WF60) ---

/** The statuses of a job finished for good (FINISHED_JOB_STATUSES, from JOB_STATUS) as an SQL list of literals: 'succeeded', 'failed', 'dead'. */
export const FINISHED_JOB_STATUS_LIST = FINISHED_JOB_STATUSES.map((s) => `'${s}'`).join(', ');

/**
 * Retention → Prune (WF60), one batch (core.retentionBatch): finished ops.jobs (+ runs) past the raw
 * retention, by finished_at — no chat, so the default days; a finished job keeps its payload (raw row id, or
 * the update in older jobs) while an update key still points at it (raw.telegram_update_keys.job_id).
 */
export const PRUNE_FINISHED_JOBS = retentionBatch({
	table: 'ops.jobs',
	from: 'ops.jobs t',
	tenant: 't.tenant_id',
	chat: 'NULL::bigint',
	age: 't.finished_at',
	policy: 'raw',
	where: `t.status IN (${FINISHED_JOB_STATUS_LIST}) AND NOT EXISTS (SELECT 1 FROM raw.telegram_update_keys k WHERE k.job_id = t.id)`,
});
