/**
 * The statements of the seed-001 pipeline run (§2, db/migrations/003, 004, 012, 019, 022): maas.pipeline_runs,
 * its event log maas.raw_logs, the Archivist's summaries maas.lsm_storage and the step prompts
 * maas.system_prompts, as named texts and builders (pg-boss keeps its `plans` so). Bind parameters only;
 * every status a statement names comes from RUN_STATUS.
 * Users: Pipeline Capture's run operations (PipelineCapture/actions/run/runs.ts), Pipeline Push's reads
 * (PipelinePush/transport/runs.ts: OWNED_RUNS, FINISHED_RUNS) and the 'pipeline_events' listener's catch-up
 * (shared/postgres/listener.ts: CATCH_UP_RUNS, used by Pipeline Trigger and Pipeline Push).
 * Every state change is one conditional UPDATE (`WHERE id = $1 AND status = $from`): of concurrent callers
 * exactly one gets the row (FACTS: conditional capture, 20 callers → 1 winner), and the trigger notifies
 * 'pipeline_events' at COMMIT. The ASYNC_NEW_TX warnings written with a statement go to ops.errors through
 * its one writer (./errors.ts warningRows).
 */
import { warningRows } from './errors';

/**
 * The statuses of a pipeline run (seed 001 §2; the CHECK of maas.pipeline_runs.status, db/migrations/003),
 * in the order a run moves through them. The statements below name a status only through this list.
 */
export const RUN_STATUS = Object.freeze({
	NEW: 'NEW',
	ANALYZING: 'ANALYZING',
	ANALYZED: 'ANALYZED',
	ASSEMBLING: 'ASSEMBLING',
	READY: 'READY',
	RESPONDING: 'RESPONDING',
	COMPLETED: 'COMPLETED',
	FAILED: 'FAILED',
} as const);

/** One of RUN_STATUS. */
export type RunStatus = (typeof RUN_STATUS)[keyof typeof RUN_STATUS];

/**
 * Request Handler (step 0): the run (NEW) and its raw_logs `user_query` row, in one statement.
 * $1 user_id, $2 user_query, $3 correlation_id. Columns: id, status, created_at, raw_log_id.
 */
export const CREATE_RUN = `
WITH run AS (
  INSERT INTO maas.pipeline_runs (user_id, user_query, correlation_id)
  VALUES ($1, $2, $3)
  RETURNING id, status, created_at
), log AS (
  INSERT INTO maas.raw_logs (user_id, run_id, message_type, content)
  SELECT $1, id, 'user_query', $2 FROM run
  RETURNING id
)
SELECT run.id, run.status, run.created_at, (SELECT id FROM log) AS raw_log_id FROM run`;

/**
 * Capture ($2 → $3 by transition $4, worker $5, the caller's key $7 stored with it for a retry to recognise
 * its own capture, migration 019; `capture_processed` reset): the winner gets `captured = true` and a fresh
 * capture token; a loser gets `captured = false`, the run as it is now and `fresh` (the run was last written
 * less than $8 s ago: a replay of the caller's own capture is only recognised within that window); no row:
 * the run does not exist.
 * With $6 true (the analysis capture) the run is also refused while an older run of the same user is
 * neither archived nor failed (seed 001 blocking rule: Archivist signal 2 first).
 * The loser's row is the statement's snapshot, which may predate a concurrent winner's commit (the UPDATE
 * re-checks the newest row version, a SELECT does not) and so still show the source state (issue 10 item 6:
 * 777 of 900 losers saw NEW). The caller reads such a row again in a new statement
 * (PipelineCapture/actions/run/capture.operation.ts): the UPDATE waited for the winner, so that read sees the
 * state that won. Locking the loser's row `FOR SHARE` instead made every lost race a write transaction
 * (0.3× a bare compare-and-set at 8 workers, issue 14).
 * $1 the run id. Columns: captured, fresh and every column of maas.pipeline_runs.
 */
export const CAPTURE = `
WITH moved AS (
  UPDATE maas.pipeline_runs r
  SET status = $3, previous_transition = $4, captured_by = $5, capture_token = gen_random_uuid(), capture_key = $7,
      capture_processed = false, updated_at = now()
  WHERE r.id = $1 AND r.status = $2
    AND (NOT $6::boolean OR NOT EXISTS (
      SELECT 1 FROM maas.pipeline_runs p
      WHERE p.user_id = r.user_id AND p.created_at < r.created_at AND p.id <> r.id
        AND p.status <> '${RUN_STATUS.FAILED}' AND p.archived_at IS NULL))
  RETURNING r.*
), current AS (
  SELECT r.* FROM maas.pipeline_runs r WHERE r.id = $1 AND NOT EXISTS (SELECT 1 FROM moved)
)
SELECT true AS captured, true AS fresh, moved.* FROM moved
UNION ALL
SELECT false AS captured, current.updated_at > now() - make_interval(secs => $8::float8) AS fresh, current.*
FROM current`;

/**
 * After a Capture's processors succeeded: marks the capture ($1 in $2 under token $3) `capture_processed`
 * (a replay of this capture does not run them again) and records the ASYNC_NEW_TX warnings $4 (jsonb array)
 * in ops.errors, in one statement. `marked` 0: the holder lost the run meanwhile (nothing written).
 * Column: marked (integer, 0 or 1).
 */
export const CAPTURE_PROCESSED = `
WITH marked AS (
  UPDATE maas.pipeline_runs SET capture_processed = true
  WHERE id = $1 AND status = $2 AND capture_token = $3
  RETURNING id, correlation_id
), warned AS (
  ${warningRows('marked', '$4')}
)
SELECT count(*)::int AS marked FROM marked`;

/** The result columns a step may write, by the state it completes into (allow-list: never from input). */
export const RESULT_COLUMNS = Object.freeze({
	ANALYZED: 'analysis_result',
	READY: 'final_context_payload',
	COMPLETED: 'final_answer',
} as const);

/**
 * Complete Step ($2 → $3, the state after the step's transition and the cascade; $4 the last transition
 * fired; token $5): stores the result and the final state in one statement, only while the run is still
 * in $2 under capture token $5 (the processors ran before it, outside any transaction). `draft_context`
 * ($7) is kept when null; $8 the ASYNC_NEW_TX warnings (jsonb array) recorded in ops.errors with it.
 * The token's digest is appended to `completed_steps` (migration 019), so a retry recognises this commit.
 * A refused write returns the run as committed (`FOR SHARE`, as in CAPTURE) with `moved = false`, and
 * `done = true` when this token's step was completed already (a concurrent duplicate won).
 * $1 the run id, $6 the result (jsonb for analysis_result, text otherwise). With `final_answer` the answer
 * is also logged in maas.raw_logs ('assistant_response'), in the same statement.
 * Columns: moved, done and every column of maas.pipeline_runs.
 * @param column the result column (one of RESULT_COLUMNS) @returns the statement text
 */
export function completeStepSql(column: (typeof RESULT_COLUMNS)[keyof typeof RESULT_COLUMNS]): string {
	const value = column === 'analysis_result' ? '$6::jsonb' : '$6::text';
	// The final answer is also logged (Archivist signal 1: raw_logs 'assistant_response'), in the same statement.
	const log =
		column === 'final_answer'
			? `, logged AS (
  INSERT INTO maas.raw_logs (user_id, run_id, message_type, content)
  SELECT user_id, id, 'assistant_response', final_answer FROM moved
)`
			: '';
	return `
WITH moved AS (
  UPDATE maas.pipeline_runs
  SET status = $3, previous_transition = $4, ${column} = ${value}, draft_context = coalesce($7::text, draft_context),
      capture_token = NULL, completed_steps = array_append(completed_steps, md5($5::text)), updated_at = now()
  WHERE id = $1 AND status = $2 AND capture_token = $5
  RETURNING *
)${log}, warned AS (
  ${warningRows('moved', '$8')}
), current AS (
  SELECT r.* FROM maas.pipeline_runs r WHERE r.id = $1 AND NOT EXISTS (SELECT 1 FROM moved)
  FOR SHARE
)
SELECT true AS moved, false AS done, moved.* FROM moved
UNION ALL
SELECT false AS moved, md5($5::text) = ANY(current.completed_steps) AS done, current.* FROM current`;
}

/**
 * Complete Step, first statement (a plain read, no lock, nothing written): the run $1 and whether the
 * capture token $2 already completed a step of it (`done`: md5($2) is in `completed_steps`, migration 019).
 * A retry of a Complete Step whose write committed but whose reply was lost finds `done = true` and
 * answers as the first call did, instead of 409.
 * Columns: every column of maas.pipeline_runs and done.
 */
export const READ_FOR_STEP = `
SELECT r.*, md5($2::text) = ANY(r.completed_steps) AS done FROM maas.pipeline_runs r WHERE r.id = $1`;

/**
 * A Capture's processor failed and could not be counted: the capture ($1 in $2 under token $3) back to $4,
 * uncounted. Returns no columns (row count 0: the holder had lost the run meanwhile).
 */
export const RELEASE_CAPTURE = `
UPDATE maas.pipeline_runs SET status = $4, previous_transition = 'RELEASE', capture_token = NULL, updated_at = now()
WHERE id = $1 AND status = $2 AND capture_token = $3`;

/**
 * A failed processor of the holder ($1 run, $2 the state it holds it in, $3 its current token, NULL for a
 * run held under none: the Sweep's stuck run without a token, counted by id + status): counts it; at the
 * `$6`th failure of the run (0: no limit) the run ends FAILED with error $5 (jsonb), else it goes back to
 * $4 (a Capture's source state: RELEASE, the capture token cleared) or, with $4 null, stays where it is
 * under capture token $7 (Complete Step: the worker's own token, kept, so it may retry). $8 (the Sweep's
 * claim, null otherwise): only while `updated_at` is still that (an overlapping Sweep's count of the same
 * stuck period is refused). No row: the holder had lost the run meanwhile (released, failed), and nothing
 * was changed. A run given back this way is not notified (migration 012's trigger condition): the Sweep
 * re-emits it after lost_after_seconds. FAILED written here runs no FAIL processor (docs: pipeline-capture).
 * Columns: id, status, processor_failures.
 */
export const PROCESSOR_FAILED = `
WITH counted AS (
  SELECT id, processor_failures + 1 AS failures, ($6::int > 0 AND processor_failures + 1 >= $6::int) AS ended
  FROM maas.pipeline_runs WHERE id = $1 AND status = $2 AND capture_token IS NOT DISTINCT FROM $3::uuid
    AND ($8::timestamptz IS NULL OR updated_at = $8::timestamptz)
  FOR UPDATE
)
UPDATE maas.pipeline_runs r
SET processor_failures = counted.failures,
    status = CASE WHEN counted.ended THEN '${RUN_STATUS.FAILED}' ELSE coalesce($4::text, r.status) END,
    previous_transition = CASE WHEN counted.ended THEN 'FAIL' WHEN $4::text IS NOT NULL THEN 'RELEASE' ELSE r.previous_transition END,
    error = CASE WHEN counted.ended THEN $5::jsonb ELSE r.error END,
    capture_token = CASE WHEN counted.ended OR $4::text IS NOT NULL THEN NULL ELSE $7::uuid END,
    updated_at = now()
FROM counted WHERE r.id = counted.id AND r.status = $2 AND r.capture_token IS NOT DISTINCT FROM $3::uuid
RETURNING r.id, r.status, r.processor_failures`;

/**
 * The whole run $1 (a plain read, no lock): Capture's criterion check and loser re-read, Archive's read.
 * Columns: every column of maas.pipeline_runs.
 */
export const READ_RUN = `SELECT * FROM maas.pipeline_runs WHERE id = $1`;

/** Where run $1 is, for Archive's 409 NOT_ARCHIVABLE. Columns: status, archived_at. */
export const ARCHIVE_STATE = `SELECT status, archived_at FROM maas.pipeline_runs WHERE id = $1`;

/**
 * FAILED after an aborted Complete Step ($2 its source state, $3 the capture token, $4 the error); the token's
 * digest is recorded as for a completed step, so a retry after a lost reply is answered as a replay (FAILED).
 * $1 the run id. Columns: every column of the run as written; no row: refused (the run changed meanwhile).
 */
export const FAIL_AFTER_ABORT = `
UPDATE maas.pipeline_runs
SET status = '${RUN_STATUS.FAILED}', previous_transition = 'CASCADE_LIMIT', error = $4::jsonb, capture_token = NULL,
    completed_steps = array_append(completed_steps, md5($3::text)), updated_at = now()
WHERE id = $1 AND status = $2 AND capture_token = $3
RETURNING *`;

/**
 * Fail: FAILED with the error, from any non-terminal state ($3); md5 of the caller's call key $4 (null: none)
 * stored as `fail_key`. A refused row says whether the run is already FAILED by FAIL with this very error
 * and this caller's key (`same`: a retry of this call after a lost reply; never for a call without a key).
 * $1 the run id, $2 the error (jsonb), $3 the non-terminal states (text[]).
 * Columns: moved, same and every column of maas.pipeline_runs; no row: the run does not exist.
 */
export const FAIL_RUN = `
WITH moved AS (
  UPDATE maas.pipeline_runs
  SET status = '${RUN_STATUS.FAILED}', previous_transition = 'FAIL', error = $2::jsonb, capture_token = NULL,
      fail_key = md5($4::text), updated_at = now()
  WHERE id = $1 AND status = ANY($3::text[])
  RETURNING *
)
SELECT true AS moved, false AS same, moved.* FROM moved
UNION ALL
SELECT false AS moved, (r.status = '${RUN_STATUS.FAILED}' AND r.previous_transition = 'FAIL' AND r.error = $2::jsonb
  AND $4::text IS NOT NULL AND r.fail_key = md5($4::text)) AS same, r.*
FROM maas.pipeline_runs r WHERE r.id = $1 AND NOT EXISTS (SELECT 1 FROM moved)`;

/** Whether run `r` is FAILED by FAIL with error $2 and the digest of call key $3 (a retry of that Fail). */
const FAILED_BY_THIS_CALL = `(r.status = '${RUN_STATUS.FAILED}' AND r.previous_transition = 'FAIL' AND r.error = $2::jsonb
  AND $3::text IS NOT NULL AND r.fail_key = md5($3::text))`;

/**
 * Fail with processors, first statement (a plain read, no lock, nothing written): the run $1, its
 * `updated_at` as text (`read_at`, exact to the microsecond, for the compare-and-set) and `same`: it is
 * FAILED by FAIL with error $2 and call key $3 already (a retry of a Fail that committed: no processor runs).
 * Columns: every column of maas.pipeline_runs, read_at, same.
 */
export const READ_FOR_FAIL = `
SELECT r.*, r.updated_at::text AS read_at, ${FAILED_BY_THIS_CALL} AS same FROM maas.pipeline_runs r WHERE r.id = $1`;

/**
 * Fail with processors, after them: FAILED with error $2 and md5(call key $3) as `fail_key`, only while the
 * run is as it was read (status $4, capture token $5, `updated_at` $6: nothing wrote it while the
 * processors ran), recording the ASYNC_NEW_TX warnings and a failed FAIL processor's error $7 (jsonb
 * array of ops.errors rows) in the same statement; $8 (0 or 1) is added to `processor_failures` (a FAIL
 * processor that failed is counted, and does not stop the run failing). A refused row (`moved = false`)
 * is the run as it is now, with `same` as in READ_FOR_FAIL. $1 the run id.
 * Columns: moved, same and every column of maas.pipeline_runs.
 */
export const FAIL_READ_RUN = `
WITH moved AS (
  UPDATE maas.pipeline_runs
  SET status = '${RUN_STATUS.FAILED}', previous_transition = 'FAIL', error = $2::jsonb, capture_token = NULL,
      fail_key = md5($3::text), processor_failures = processor_failures + $8::int, updated_at = now()
  WHERE id = $1 AND status = $4 AND capture_token IS NOT DISTINCT FROM $5::uuid AND updated_at = $6::timestamptz
  RETURNING *
), warned AS (
  ${warningRows('moved', '$7')}
)
SELECT true AS moved, false AS same, moved.* FROM moved
UNION ALL
SELECT false AS moved, ${FAILED_BY_THIS_CALL} AS same, r.*
FROM maas.pipeline_runs r WHERE r.id = $1 AND NOT EXISTS (SELECT 1 FROM moved)`;

/**
 * Sweep, RELEASE with processors, first statement (a plain read, no lock): runs in the in-progress states
 * $1 unchanged for $2 s, oldest first, at most $3, with `updated_at` as text (`read_at`) for the
 * compare-and-set of RELEASE_READ_RUN. Columns: every column of maas.pipeline_runs and read_at.
 */
export const STUCK_FOR_RELEASE = `
SELECT r.*, r.updated_at::text AS read_at FROM maas.pipeline_runs r
WHERE r.status = ANY($1::text[]) AND r.updated_at < now() - make_interval(secs => $2::float8)
ORDER BY r.updated_at
LIMIT $3`;

/**
 * Sweep, RELEASE with processors, before them: claims the stuck run $1 as read (status $2, capture token
 * $3, `updated_at` $4) by moving its `updated_at` to now (not a status change: nobody is notified). A
 * second Sweep that read the same row finds it changed and leaves it alone, so one stuck period runs
 * RELEASE's processors (and counts their failure) once. The claim restarts the stuck clock: a Sweep that
 * dies while the processors run leaves the run to be tried again `stuck_after_seconds` later. `read_at` the
 * new `updated_at` as text, for RELEASE_READ_RUN / PROCESSOR_FAILED. No row: the run changed (skip it).
 */
export const CLAIM_STUCK = `
UPDATE maas.pipeline_runs SET updated_at = now()
WHERE id = $1 AND status = $2 AND capture_token IS NOT DISTINCT FROM $3::uuid AND updated_at = $4::timestamptz
RETURNING updated_at::text AS read_at`;

/**
 * Sweep, RELEASE with processors, after them: the run $1 back to its waiting state $5, only while it is as
 * it was read (status $2, capture token $3, `updated_at` $4: still stuck, nobody completed, failed or
 * released it meanwhile), recording the ASYNC_NEW_TX warnings $6 in ops.errors in the same statement.
 * No row: the run changed meanwhile (nothing written). Columns: id, status.
 */
export const RELEASE_READ_RUN = `
WITH moved AS (
  UPDATE maas.pipeline_runs
  SET status = $5, previous_transition = 'RELEASE', capture_token = NULL, updated_at = now()
  WHERE id = $1 AND status = $2 AND capture_token IS NOT DISTINCT FROM $3::uuid AND updated_at = $4::timestamptz
  RETURNING id, status, correlation_id
), warned AS (
  ${warningRows('moved', '$6')}
)
SELECT id, status FROM moved`;

/**
 * Get Status: the run $1, only when its owner is $2 (NULL: any owner); another user's run is no row, as an
 * unknown one. Columns: id, status, final_answer, error, created_at, updated_at.
 */
export const GET_RUN = `SELECT id, status, final_answer, error, created_at, updated_at FROM maas.pipeline_runs WHERE id = $1 AND ($2::text IS NULL OR user_id = $2::text)`;

/**
 * Sweep, part 1: runs stuck in progress ($1 states, mapped to their waiting state by $2, text[] each)
 * longer than $3 s go back, oldest first, at most $4 (a run another transaction holds is skipped).
 * Columns: id, status (the waiting state it went back to).
 */
export const RELEASE_STUCK = `
WITH stuck AS (
  SELECT r.id, s.waiting
  FROM maas.pipeline_runs r
  JOIN unnest($1::text[], $2::text[]) AS s(in_progress, waiting) ON s.in_progress = r.status
  WHERE r.updated_at < now() - make_interval(secs => $3::float8)
  ORDER BY r.updated_at
  LIMIT $4
  FOR UPDATE OF r SKIP LOCKED
)
UPDATE maas.pipeline_runs r
SET status = stuck.waiting, previous_transition = 'RELEASE', capture_token = NULL, updated_at = now()
FROM stuck WHERE r.id = stuck.id
RETURNING r.id, r.status`;

/**
 * Sweep, part 2: runs waiting ($1 states) longer than $2 s — their notification may have been lost — and
 * completed runs still not archived (the Archivist failed: the user's next run waits for it); oldest first,
 * at most $3. Columns: id, status.
 */
export const LOST_WAITING = `
SELECT id, status FROM maas.pipeline_runs
WHERE (status = ANY($1::text[]) OR (status = '${RUN_STATUS.COMPLETED}' AND archived_at IS NULL))
  AND updated_at < now() - make_interval(secs => $2::float8)
ORDER BY updated_at
LIMIT $3`;

/**
 * Load Step Context, analysis: the query, the Analyzer prompt, the user's last 20 LSM rows (may be none).
 * $1 the run id. Columns: id, user_id, user_query, prompt (null: no active Analyzer prompt), lsm (json array).
 */
export const CONTEXT_ANALYSIS = `
SELECT r.id, r.user_id, r.user_query,
  (SELECT prompt_template FROM maas.system_prompts WHERE role_name = 'Analyzer' AND is_active) AS prompt,
  coalesce((SELECT json_agg(l) FROM (
    SELECT id, time_bucket_start, time_bucket_end, tags, summary FROM maas.lsm_storage
    WHERE user_id = r.user_id OR user_id IS NULL ORDER BY time_bucket_start DESC LIMIT 20) l), '[]'::json) AS lsm
FROM maas.pipeline_runs r WHERE r.id = $1`;

/**
 * Load Step Context, assembly: the four elements of the draft (seed 001 step 2.1). $1 the run id.
 * Columns: id, user_id, user_query, analysis_result, history (json array: the user's last 10 raw_logs rows
 * of other runs), lsm (json array), mentor_prompt, assembler_prompt.
 */
export const CONTEXT_ASSEMBLY = `
SELECT r.id, r.user_id, r.user_query, r.analysis_result,
  coalesce((SELECT json_agg(h) FROM (
    SELECT message_type, content, created_at FROM maas.raw_logs
    WHERE user_id = r.user_id AND (run_id IS DISTINCT FROM r.id) ORDER BY created_at DESC LIMIT 10) h), '[]'::json) AS history,
  coalesce((SELECT json_agg(l) FROM (
    SELECT time_bucket_start, time_bucket_end, tags, summary FROM maas.lsm_storage
    WHERE user_id = r.user_id OR user_id IS NULL ORDER BY time_bucket_start DESC LIMIT 20) l), '[]'::json) AS lsm,
  (SELECT prompt_template FROM maas.system_prompts WHERE role_name = 'Mentor' AND is_active) AS mentor_prompt,
  (SELECT prompt_template FROM maas.system_prompts WHERE role_name = 'Assembler' AND is_active) AS assembler_prompt
FROM maas.pipeline_runs r WHERE r.id = $1`;

/**
 * Load Step Context, response: the payload the Assembler prepared. $1 the run id.
 * Columns: id, user_id, user_query, final_context_payload, prompt (the Mentor's).
 */
export const CONTEXT_RESPONSE = `
SELECT r.id, r.user_id, r.user_query, r.final_context_payload,
  (SELECT prompt_template FROM maas.system_prompts WHERE role_name = 'Mentor' AND is_active) AS prompt
FROM maas.pipeline_runs r WHERE r.id = $1`;

/**
 * Load Step Context, archive: the exchange to summarise (Archivist signal 2). $1 the run id.
 * Columns: id, user_id, user_query, final_answer, status, archived_at, prompt (the Archivist's).
 */
export const CONTEXT_ARCHIVE = `
SELECT r.id, r.user_id, r.user_query, r.final_answer, r.status, r.archived_at,
  (SELECT prompt_template FROM maas.system_prompts WHERE role_name = 'Archivist' AND is_active) AS prompt
FROM maas.pipeline_runs r WHERE r.id = $1`;

/**
 * Archive (Archivist signal 2): the summary into lsm_storage (time bucket = the run's lifetime, the run's
 * raw_logs ids) and the run marked archived, in one statement, once; then the user's next waiting run,
 * which the blocking rule held back. $4: the ASYNC_NEW_TX warnings of ARCHIVE's processors (jsonb array,
 * '[]' when none), recorded in ops.errors by the same statement. $5 the caller's call key (null: none),
 * stored as md5 in `archive_key` (migration 022) for ARCHIVE_REPLAY. Its conditions (COMPLETED, not archived)
 * are the compare-and-set on what Archive read before the processors: a COMPLETED run changes only by
 * being archived. $1 the run id, $2 the summary, $3 the tags (text[]).
 * Columns: lsm_id, id, next_run_id (null: none waiting); no row: not archived by this call.
 */
export const ARCHIVE_RUN = `
WITH run AS (
  UPDATE maas.pipeline_runs SET archived_at = now(), archive_key = md5($5::text)
  WHERE id = $1 AND status = '${RUN_STATUS.COMPLETED}' AND archived_at IS NULL
  RETURNING id, user_id, created_at, updated_at, correlation_id
), warned AS (
  ${warningRows('run', '$4')}
), lsm AS (
  INSERT INTO maas.lsm_storage (user_id, run_id, time_bucket_start, time_bucket_end, tags, summary, raw_log_ids)
  SELECT run.user_id, run.id, run.created_at, greatest(run.updated_at, run.created_at), $3::text[], $2,
         coalesce((SELECT array_agg(id ORDER BY id) FROM maas.raw_logs WHERE run_id = run.id), '{}')
  FROM run
  RETURNING id
)
SELECT (SELECT id FROM lsm) AS lsm_id, run.id,
  (SELECT n.id FROM maas.pipeline_runs n WHERE n.user_id = run.user_id AND n.status = '${RUN_STATUS.NEW}' ORDER BY n.created_at LIMIT 1) AS next_run_id
FROM run`;

/**
 * Archive, an ARCHIVE processor failed (SYNC / ASYNC_SAME_TX): counts it on run $1 while it is still
 * COMPLETED, not archived and its count still $2 (what Archive read before the processors: of concurrent
 * Archivists failing over the same read, one failure is counted). `updated_at` is not touched (it ends the
 * summary's time bucket). `failures` the new count; no row: archived or counted by someone else meanwhile.
 * Column: failures.
 */
export const ARCHIVE_FAILED = `
UPDATE maas.pipeline_runs SET processor_failures = processor_failures + 1
WHERE id = $1 AND status = '${RUN_STATUS.COMPLETED}' AND archived_at IS NULL AND processor_failures = $2::int
RETURNING processor_failures AS failures`;

/**
 * Archive after a lost reply: the run $1 archived already with summary $2 and tags $3 (what this call
 * would have stored) by this call's key $4 (its md5 in `archive_key`; a call without a key matches only an
 * archive written without one): the first call's `lsm_id`, and the user's oldest NEW run read now
 * (`next_run_id`: the one the first answer named unless it was captured since). No row: not a replay.
 * Columns: lsm_id, id, next_run_id.
 */
export const ARCHIVE_REPLAY = `
SELECT l.id AS lsm_id, r.id,
  (SELECT n.id FROM maas.pipeline_runs n WHERE n.user_id = r.user_id AND n.status = '${RUN_STATUS.NEW}' ORDER BY n.created_at LIMIT 1) AS next_run_id
FROM maas.pipeline_runs r
JOIN maas.lsm_storage l ON l.run_id = r.id AND l.summary = $2 AND l.tags = $3::text[]
WHERE r.id = $1 AND r.archived_at IS NOT NULL AND r.archive_key IS NOT DISTINCT FROM md5($4::text)
ORDER BY l.id
LIMIT 1`;

/** The columns Pipeline Push reads of a run (its RunRow: id as text, user_id, status, final_answer, error). */
const PUSH_COLUMNS = 'id::text AS id, user_id, status, final_answer, error';

/**
 * Pipeline Push, at subscription: the runs among $1 (uuid[]) whose user_id is $2 (any status).
 * Columns: id (text), user_id, status, final_answer, error.
 */
export const OWNED_RUNS = `SELECT ${PUSH_COLUMNS} FROM maas.pipeline_runs WHERE id = ANY($1::uuid[]) AND user_id = $2`;

/**
 * Pipeline Push, the answer: the runs among $1 (uuid[]) that are COMPLETED or FAILED.
 * Columns: id (text), user_id, status, final_answer, error.
 */
export const FINISHED_RUNS = `SELECT ${PUSH_COLUMNS} FROM maas.pipeline_runs WHERE id = ANY($1::uuid[]) AND status IN ('${RUN_STATUS.COMPLETED}', '${RUN_STATUS.FAILED}')`;

/**
 * The 'pipeline_events' listener's catch-up after a (re)connect, one page: keyset pagination on
 * (updated_at, id), so every matching run is read exactly once even when more than a page match (a plain
 * `ORDER BY updated_at LIMIT n` would keep the n oldest and silently drop the newest). A catch-up must
 * deliver every waiting run and every run changed since the connection was lost; a repeat is harmless
 * (consumers are idempotent), a loss is not.
 * $1 the waiting statuses (text[]: every run in one of them), $2 since when (timestamptz, the disconnect
 * time less a margin; NULL: the first connect), $3 the statuses emitted (text[]; empty: all), $4 the page
 * size, $5/$6 the last row of the previous page (its `cursor` and id; NULL: the first page).
 * Columns: id, status, operation ('CATCHUP'), cursor (updated_at as PostgreSQL prints it, microseconds kept).
 */
export const CATCH_UP_RUNS = `
SELECT id, status, 'CATCHUP' AS operation, updated_at::text AS cursor FROM maas.pipeline_runs
WHERE (status = ANY($1::text[]) OR ($2::timestamptz IS NOT NULL AND updated_at >= $2::timestamptz))
  AND (cardinality($3::text[]) = 0 OR status = ANY($3::text[]))
  AND ($5::timestamptz IS NULL OR (updated_at, id) > ($5::timestamptz, $6::uuid))
ORDER BY updated_at, id
LIMIT $4`;
