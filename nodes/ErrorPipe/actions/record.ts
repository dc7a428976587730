/**
 * ErrorPipe step 2 (seed 002 §1.3): records the envelope.
 *  1. always: one `ops.errors` row (details jsonb an object, contract version from ctx.contracts.errorpipe);
 *  2. only when ctx.job_id is set: in one statement, the job becomes `queued` again with an exponential
 *     backoff (retryable error, attempts left), `dead` (retryable, no attempts left) or `failed`
 *     (not retryable); the attempt's open `ops.job_runs` row (opened by Claim Jobs) is closed with that
 *     outcome, or a run row is written when none is open.
 * A failure of either write is returned, not thrown: the envelope must reach the caller even when the
 * database is down.
 */
import type { Pool } from 'pg';
import type { ErrorEnvelope } from '../../shared/contracts/envelope';
import { nextRunAtSql, RETRY_BASE_SECONDS, RETRY_CAP_SECONDS } from '../../shared/postgres/backoff';

export interface RecordResult {
	/** `ops.errors.id`, or null when the row could not be written. */
	error_id: number | null;
	/** Job path: not run (no job_id), or the job's new status (null when the job does not exist). */
	job: { executed: false } | { executed: true; job_id: number; status: string | null; next_run_at: string | null };
	/** Write failures, each naming the table. Empty when everything was recorded. */
	write_failures: Array<{ table: string; message: string; sqlstate: string | null }>;
}

export { RETRY_BASE_SECONDS, RETRY_CAP_SECONDS };

const INSERT_ERROR = `
INSERT INTO ops.errors
  (correlation_id, tenant_id, job_id, workflow, node, kind, status_code, retryable, message, details, contract_version, source)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12)
RETURNING id`;

// One statement: the job update and its run row commit together or not at all.
const FAIL_JOB = `
WITH job AS (
  UPDATE ops.jobs j SET
    status = CASE WHEN NOT $2::boolean THEN 'failed'
                  WHEN j.attempts >= j.max_attempts THEN 'dead'
                  ELSE 'queued' END,
    next_run_at = CASE WHEN $2::boolean AND j.attempts < j.max_attempts
      THEN ${nextRunAtSql('j.attempts', '$4', '$5')}
      ELSE j.next_run_at END,
    locked_by = NULL, locked_at = NULL,
    last_error = $3::jsonb,
    updated_at = now(),
    finished_at = CASE WHEN $2::boolean AND j.attempts < j.max_attempts THEN NULL ELSE now() END
  WHERE j.id = $1
  RETURNING j.id, j.status, j.attempts, j.next_run_at
), open_run AS (
  -- the attempt a worker claimed (Claim Jobs opened it): closed with the outcome
  UPDATE ops.job_runs r SET status = CASE job.status WHEN 'queued' THEN 'retry' WHEN 'dead' THEN 'dead' ELSE 'failed' END,
         error = $3::jsonb, finished_at = now()
  FROM job
  WHERE r.id = (SELECT max(id) FROM ops.job_runs WHERE job_id = job.id AND status = 'running')
  RETURNING r.id
), new_run AS (
  -- no open attempt (the job was not claimed through Claim Jobs): a run row of its own
  INSERT INTO ops.job_runs (job_id, attempt, status, correlation_id, error, started_at, finished_at)
  SELECT id, greatest(attempts, 1), CASE status WHEN 'queued' THEN 'retry' WHEN 'dead' THEN 'dead' ELSE 'failed' END,
         $6::uuid, $3::jsonb, now(), now()
  FROM job WHERE NOT EXISTS (SELECT 1 FROM open_run)
  RETURNING id
)
SELECT job.status, job.next_run_at, (SELECT count(*) FROM open_run) + (SELECT count(*) FROM new_run) AS runs FROM job`;

function failureOf(table: string, error: unknown) {
	const e = (error ?? {}) as { message?: unknown; code?: unknown };
	return { table, message: String(e.message ?? error), sqlstate: typeof e.code === 'string' ? e.code : null };
}

/** Writes the rows for one envelope. Never throws. */
export async function recordError(
	pool: Pool,
	envelope: ErrorEnvelope,
	jobId: number | null,
	contractVersion: number,
): Promise<RecordResult> {
	const corr = envelope.meta.correlation;
	const result: RecordResult = { error_id: null, job: { executed: false }, write_failures: [] };
	try {
		const { rows } = await pool.query(INSERT_ERROR, [
			corr.correlation_id,
			corr.tenant_id,
			jobId,
			corr.workflow,
			corr.node,
			envelope.error.kind,
			envelope.status_code,
			envelope.error.retryable,
			envelope.error.message,
			envelope.error.details, // pg serialises the object: jsonb receives an object, never a JSON string value
			contractVersion,
			envelope.meta.source,
		]);
		result.error_id = Number(rows[0].id);
	} catch (error) {
		result.write_failures.push(failureOf('ops.errors', error));
	}
	if (jobId !== null) {
		const lastError = {
			kind: envelope.error.kind,
			message: envelope.error.message,
			status_code: envelope.status_code,
			retryable: envelope.error.retryable,
			correlation_id: corr.correlation_id,
			node: corr.node,
			error_id: result.error_id,
		};
		try {
			const { rows } = await pool.query(FAIL_JOB, [
				jobId,
				envelope.error.retryable,
				lastError,
				RETRY_BASE_SECONDS,
				RETRY_CAP_SECONDS,
				corr.correlation_id,
			]);
			result.job = {
				executed: true,
				job_id: jobId,
				status: rows[0]?.status ?? null,
				next_run_at: rows[0]?.next_run_at ? new Date(rows[0].next_run_at).toISOString() : null,
			};
		} catch (error) {
			result.job = { executed: true, job_id: jobId, status: null, next_run_at: null };
			result.write_failures.push(failureOf('ops.jobs', error));
		}
	}
	return result;
}
