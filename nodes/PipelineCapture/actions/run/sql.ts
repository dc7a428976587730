/**
 * SQL of the pipeline_runs operations (seed 001). Every state change is one conditional UPDATE
 * (`WHERE id = $1 AND status = $from`): of concurrent callers exactly one gets the row (FACTS:
 * conditional capture, 20 callers → 1 winner), and the trigger notifies 'pipeline_events' at COMMIT.
 */

/** Request Handler (step 0): the run (NEW) and its raw_logs `user_query` row, in one statement. */
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
 * Capture ($2 → $3 by transition $4): the winner gets `captured = true` and a fresh capture token; a
 * loser gets `captured = false` and the run as it is now; no row: the run does not exist.
 */
export const CAPTURE = `
WITH moved AS (
  UPDATE maas.pipeline_runs
  SET status = $3, previous_transition = $4, captured_by = $5, capture_token = gen_random_uuid(), updated_at = now()
  WHERE id = $1 AND status = $2
  RETURNING *
)
SELECT true AS captured, moved.* FROM moved
UNION ALL
SELECT false AS captured, r.* FROM maas.pipeline_runs r WHERE r.id = $1 AND NOT EXISTS (SELECT 1 FROM moved)`;

/** The result columns a step may write, by the state it completes into (allow-list: never from input). */
export const RESULT_COLUMNS = {
	ANALYZED: 'analysis_result',
	READY: 'final_context_payload',
	COMPLETED: 'final_answer',
} as const;

/**
 * Complete Step ($2 → $3 by transition $4, token $5): stores the result and moves on in one statement.
 * `draft_context` ($7) is kept when null.
 */
export function completeStepSql(column: (typeof RESULT_COLUMNS)[keyof typeof RESULT_COLUMNS]): string {
	const value = column === 'analysis_result' ? '$6::jsonb' : '$6::text';
	return `
WITH moved AS (
  UPDATE maas.pipeline_runs
  SET status = $3, previous_transition = $4, ${column} = ${value}, draft_context = coalesce($7::text, draft_context),
      capture_token = NULL, updated_at = now()
  WHERE id = $1 AND status = $2 AND capture_token = $5
  RETURNING *
)
SELECT true AS moved, moved.* FROM moved
UNION ALL
SELECT false AS moved, r.* FROM maas.pipeline_runs r WHERE r.id = $1 AND NOT EXISTS (SELECT 1 FROM moved)`;
}

/** Fail: FAILED with the error, from any non-terminal state ($3). */
export const FAIL_RUN = `
WITH moved AS (
  UPDATE maas.pipeline_runs
  SET status = 'FAILED', previous_transition = 'FAIL', error = $2::jsonb, capture_token = NULL, updated_at = now()
  WHERE id = $1 AND status = ANY($3::text[])
  RETURNING *
)
SELECT true AS moved, moved.* FROM moved
UNION ALL
SELECT false AS moved, r.* FROM maas.pipeline_runs r WHERE r.id = $1 AND NOT EXISTS (SELECT 1 FROM moved)`;

export const GET_RUN = `SELECT id, status, final_answer, error, created_at, updated_at FROM maas.pipeline_runs WHERE id = $1`;

/** Sweep, part 1: runs stuck in progress ($1 states, mapped to their waiting state by $2) longer than $3 s go back. */
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

/** Sweep, part 2: runs waiting ($1 states) longer than $2 s: their notification may have been lost. */
export const LOST_WAITING = `
SELECT id, status FROM maas.pipeline_runs
WHERE status = ANY($1::text[]) AND updated_at < now() - make_interval(secs => $2::float8)
ORDER BY updated_at
LIMIT $3`;
