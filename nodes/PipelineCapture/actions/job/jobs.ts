/**
 * The ops.jobs queue (created by TelegramIngest, seed 003) with the same capture primitive as the runs:
 *  - Claim Jobs: one statement takes up to `batch_size` due jobs of a type (`FOR UPDATE SKIP LOCKED`, so
 *    concurrent workers never get the same job), counts the attempt, sets locked_by/locked_at, a fresh
 *    `claim_token` (uuid, migration 008) naming this attempt, and opens an ops.job_runs row per job;
 *  - Finish Job: done (succeeded), or failed → queued again with exponential backoff and jitter while
 *    attempts remain (retryable), dead after max_attempts, failed when not retryable; the job_runs row of
 *    the attempt is closed with the outcome. Only the worker holding the lock (and, when given, the
 *    attempt's claim token) can finish (409 otherwise);
 *  - Release Stale: running jobs locked longer than a timeout go back to the queue (their worker died),
 *    closing their run as `retry`, or dead when no attempt is left.
 * Every statement that ends an attempt (Finish Job, Release Stale, the Error Pipe's job path) clears
 * `claim_token`, so a late call carrying the old token (ctx.job_claim_token) can never touch a later one.
 * Anchors: pg-boss (src/plans.ts) and graphile-worker (getJobs).
 */
import type { Pool } from 'pg';
import { isUuid } from '../../../shared/envelope';
import { ContractError, fromPgError } from '../../../shared/errors';
import { nextRunAtSql, RETRY_BASE_SECONDS, RETRY_CAP_SECONDS } from '../../../shared/postgres/backoff';

const JOBS = { table: 'ops.jobs' };

export const CLAIM_JOBS = `
WITH next AS (
  SELECT id FROM ops.jobs
  WHERE status = 'queued' AND job_type = ANY($1::text[]) AND next_run_at <= now()
  ORDER BY priority DESC, next_run_at, id
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE ops.jobs j
  SET status = 'running', attempts = j.attempts + 1, locked_by = $3, locked_at = now(), updated_at = now(),
      claim_token = gen_random_uuid()
  FROM next WHERE j.id = next.id
  RETURNING j.*
), runs AS (
  INSERT INTO ops.job_runs (job_id, attempt, status, worker, correlation_id)
  SELECT id, attempts, 'running', $3, correlation_id FROM claimed
  RETURNING id, job_id
)
SELECT claimed.*, runs.id AS run_id FROM claimed JOIN runs ON runs.job_id = claimed.id ORDER BY claimed.priority DESC, claimed.id`;

export const FINISH_JOB = `
WITH job AS (
  UPDATE ops.jobs j SET
    status = CASE WHEN $3::boolean THEN 'succeeded'
                  WHEN NOT $4::boolean THEN 'failed'
                  WHEN j.attempts >= j.max_attempts THEN 'dead'
                  ELSE 'queued' END,
    next_run_at = CASE WHEN NOT $3::boolean AND $4::boolean AND j.attempts < j.max_attempts
      THEN ${nextRunAtSql('j.attempts', '$6', '$7')} ELSE j.next_run_at END,
    last_error = CASE WHEN $3::boolean THEN j.last_error ELSE $5::jsonb END,
    locked_by = NULL, locked_at = NULL, claim_token = NULL, updated_at = now(),
    finished_at = CASE WHEN NOT $3::boolean AND $4::boolean AND j.attempts < j.max_attempts THEN NULL ELSE now() END
  WHERE j.id = $1 AND j.status = 'running' AND j.locked_by = $2
    AND ($8::uuid IS NULL OR j.claim_token = $8::uuid)
  RETURNING j.id, j.status, j.attempts, j.max_attempts, j.next_run_at
), run AS (
  UPDATE ops.job_runs r SET
    status = CASE job.status WHEN 'succeeded' THEN 'succeeded' WHEN 'queued' THEN 'retry' WHEN 'dead' THEN 'dead' ELSE 'failed' END,
    error = CASE WHEN $3::boolean THEN NULL ELSE $5::jsonb END,
    finished_at = now()
  FROM job
  WHERE r.id = (SELECT max(id) FROM ops.job_runs WHERE job_id = job.id AND status = 'running')
  RETURNING r.id
)
SELECT job.*, (SELECT id FROM run) AS run_id FROM job`;

export const RELEASE_STALE = `
WITH stale AS (
  SELECT id FROM ops.jobs
  WHERE status = 'running' AND locked_at < now() - make_interval(secs => $1::float8)
  ORDER BY locked_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), job AS (
  UPDATE ops.jobs j SET
    status = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'queued' END,
    next_run_at = now(),
    last_error = jsonb_build_object('kind', 'timeout', 'message', 'released: locked by ' || coalesce(j.locked_by, '?') || ' for longer than ' || $1::text || ' s'),
    finished_at = CASE WHEN j.attempts >= j.max_attempts THEN now() ELSE NULL END,
    locked_by = NULL, locked_at = NULL, claim_token = NULL, updated_at = now()
  FROM stale WHERE j.id = stale.id
  RETURNING j.id, j.status
), run AS (
  UPDATE ops.job_runs r SET status = CASE job.status WHEN 'dead' THEN 'dead' ELSE 'retry' END,
    error = jsonb_build_object('kind', 'timeout', 'message', 'lock expired'), finished_at = now()
  FROM job WHERE r.job_id = job.id AND r.status = 'running'
  RETURNING r.id
)
SELECT job.id, job.status, (SELECT count(*) FROM run) AS runs_closed FROM job`;

function positiveInt(value: unknown, field: string, max: number): number {
	const n = Number(value);
	if (!Number.isInteger(n) || n < 1 || n > max) {
		throw new ContractError(`invalid input: ${field} must be an integer from 1 to ${max}`, 422, 'validation', false, { code: 'VALIDATION', field }, { operation: 'validate', ...JOBS });
	}
	return n;
}

function text(value: unknown, field: string): string {
	if (typeof value !== 'string' || value.trim() === '') {
		throw new ContractError(`invalid input: ${field} is required`, 422, 'validation', false, { code: 'VALIDATION', field }, { operation: 'validate', ...JOBS });
	}
	return value.trim();
}

async function run<T extends Record<string, unknown>>(pool: Pool, sql: string, params: unknown[], operation: string): Promise<T[]> {
	try {
		return (await pool.query<T>(sql, params)).rows;
	} catch (error) {
		throw fromPgError(error, { operation, ...JOBS });
	}
}

/** Job types from "a" or "a, b, c" (one claim serves several queues, e.g. WF90's worker types). */
function jobTypes(value: unknown): string[] {
	const types = text(value, 'job_type')
		.split(',')
		.map((t) => t.trim())
		.filter(Boolean);
	if (types.length === 0) {
		throw new ContractError('invalid input: job_type names no type', 422, 'validation', false, { code: 'VALIDATION', field: 'job_type' }, { operation: 'validate', ...JOBS });
	}
	return types;
}

/**
 * Claim Jobs: the claimed jobs (each the ops.jobs row with `claim_token`, the attempt's uuid, and `run_id`,
 * its ops.job_runs row), possibly none. `job_type`: one type or a comma-separated list.
 */
export async function claimJobs(pool: Pool, input: { job_type: unknown; batch_size: unknown; worker: unknown }) {
	return run<Record<string, unknown>>(pool, CLAIM_JOBS, [jobTypes(input.job_type), positiveInt(input.batch_size, 'batch_size', 1000), text(input.worker, 'worker')], 'update');
}

/** The optional claim token: absent/null/"" → not checked; else it must be a UUID (422 naming the field). */
function claimToken(value: unknown): string | null {
	if (value === undefined || value === null || value === '') return null;
	if (typeof value !== 'string' || !isUuid(value.trim())) {
		throw new ContractError('invalid input: claim_token must be the UUID Claim Jobs returned', 422, 'validation', false, { code: 'VALIDATION', field: 'claim_token' }, { operation: 'validate', ...JOBS });
	}
	return value.trim().toLowerCase();
}

/**
 * Finish Job: `{ id, status, attempts, max_attempts, next_run_at, run_id }`.
 * `claim_token` (optional, the uuid Claim Jobs returned): when given, only that attempt can be finished —
 * a job released as stale and claimed again, even by a worker of the same name, is not this attempt.
 * With `accept_finished`, a job no longer running under this worker and token (e.g. the Error Pipe already
 * re-queued it from the failed sub-workflow) is returned as it is, with `already_finished: true`.
 * @throws 422 invalid input (claim_token not a UUID); 409 NOT_LOCKED_BY_WORKER when the job is not running
 *         under this worker and claim token (finished already, released as stale, claimed again, or never
 *         claimed by it) and accept_finished is off; 404 JOB_NOT_FOUND
 */
export async function finishJob(
	pool: Pool,
	input: { job_id: unknown; worker: unknown; success: boolean; retryable?: boolean; error?: unknown; accept_finished?: boolean; claim_token?: unknown },
) {
	const jobId = positiveInt(input.job_id, 'job_id', Number.MAX_SAFE_INTEGER);
	const worker = text(input.worker, 'worker');
	const token = claimToken(input.claim_token);
	const error = input.success ? null : input.error !== null && typeof input.error === 'object' && !Array.isArray(input.error) ? input.error : { message: String(input.error ?? 'failed') };
	const rows = await run<Record<string, unknown>>(pool, FINISH_JOB, [jobId, worker, input.success, input.retryable ?? true, JSON.stringify(error), RETRY_BASE_SECONDS, RETRY_CAP_SECONDS, token], 'update');
	if (rows.length === 0 && input.accept_finished) {
		const current = await run<Record<string, unknown>>(pool, 'SELECT id, status, attempts, max_attempts, next_run_at, NULL::bigint AS run_id, true AS already_finished FROM ops.jobs WHERE id = $1', [jobId], 'select');
		if (current.length === 0) throw new ContractError(`job ${jobId} not found`, 404, 'not_found', false, { code: 'JOB_NOT_FOUND', job_id: jobId }, { operation: 'select', ...JOBS });
		return current[0];
	}
	if (rows.length === 0) {
		// the token itself is never echoed: it is the attempt's capability
		const claim = token ? ' and this claim token' : '';
		throw new ContractError(`job ${jobId} is not running under worker ${worker}${claim}`, 409, 'conflict', false, { code: 'NOT_LOCKED_BY_WORKER', job_id: jobId, worker, claim_token_checked: token !== null }, { operation: 'update', ...JOBS });
	}
	return rows[0];
}

/** Release Stale: `[{ id, status: "queued" | "dead", runs_closed }]`. */
export async function releaseStale(pool: Pool, input: { older_than_seconds: unknown; limit: unknown }) {
	return run<Record<string, unknown>>(pool, RELEASE_STALE, [positiveInt(input.older_than_seconds, 'older_than_seconds', 86_400 * 7), positiveInt(input.limit, 'limit', 10_000)], 'update');
}
