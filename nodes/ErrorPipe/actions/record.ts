/**
 * ErrorPipe step 2 (seed 002 §1.3): records the envelope.
 *  1. always: one `ops.errors` row (details jsonb an object, contract version from ctx.contracts.errorpipe);
 *  2. only when ctx.job_id is set, and only for the attempt that is still open (issue 10 item 2): the job
 *     is `running` and, when ctx carries `job_claim_token`, its `claim_token` (set by Claim Jobs, migration
 *     008) is that token. Then the job becomes `queued` again with an exponential backoff (retryable error,
 *     attempts left), `dead` (retryable, no attempts left) or `failed` (not retryable), its lock and claim
 *     token are cleared, and the attempt's `ops.job_runs` row (under the run id Claim Jobs reserved) is written with that
 *     outcome (a run of its own, under a new id, for a job set running other than by Claim Jobs). Otherwise — the job finished, was re-queued, was
 *     released and claimed again, or does not exist — the job and its runs are left alone: a late error
 *     never revives a finished job nor takes a re-claimed one from its new worker.
 *     A ctx with `job_id` but no token (workflows older than 008) falls back to "the job is running": that
 *     fallback cannot tell a re-claim apart from the attempt that failed. A token that is not a UUID never
 *     matches.
 * The outcome is `error.details.job_outcome`, in the row and in the envelope: the job's new status
 * (`queued` | `dead` | `failed`), `stale` when the job path did not apply, or `write_failed` when the job
 * could not be written (the job is then untouched; see `write_failures`) — or, when the connection was lost
 * and the database could not be reached again to settle it, the outcome is unknown (a write failure says so).
 * Both writes are one statement (the row, its job_outcome, the job, its run and the job's last_error.error_id
 * commit together), under an ops.errors id taken up front (nextval), so that exactly one row is written per
 * item whatever happens to the statement:
 *  - it failed with a SQLSTATE (PostgreSQL rolled it back): the job update and the row are retried apart,
 *    so that either is still written when only the other fails;
 *  - it failed without one (the connection was lost: the statement may have committed, its reply lost):
 *    the outcome is settled on a new connection, in one transaction that does the job path again and then
 *    inserts the row under the same id (`ON CONFLICT (id) DO NOTHING`). That insert waits for the first
 *    statement if it is still running; when its row exists, the first statement committed: the transaction
 *    is rolled back (nothing written twice) and the committed outcome is read from the row. When it does
 *    not, the first statement never committed, and it cannot any more (its own insert would now conflict
 *    with this row and roll it back).
 * The same envelope sent again for a claim whose job path it already applied (same ctx.job_claim_token and
 * the same last_error on the run that job path closed, migration 021; `error.details` is not compared)
 * writes no second row: the first row's id and recorded outcome are answered with `job.replayed: true`
 * (issue 26; without a token there is no such check, the second row says `stale`). When that first row is
 * missing (its insert failed after the job path committed) it is written now under that id: an answered
 * error_id always names a row. A duplicate concurrent with its original (waiting for the job's lock) is
 * answered the same way, from a second statement in a snapshot taken after that lock (RECORD_WITH_JOB).
 * Without a job path the row alone is inserted under an id taken up front too: when its reply is lost it
 * is sent again (twice at most, 100 ms and 400 ms later) and finds its own row (`ON CONFLICT (id) DO
 * NOTHING`), so it is written once and its id answered (issue 26, docs/retry-safety.md).
 * A failure of either write is returned, not thrown: the envelope must reach the caller even when the
 * database is down.
 * The statements: nodes/shared/statements/errors.ts (the ops.errors rows, the job path built from jobs.ts's
 * failJobCtes) and jobs.ts's FAIL_JOB; the settling transaction through inTransaction (issue 28).
 */
import { DatabaseError, type Pool } from 'pg';
import type { ErrorEnvelope } from '../../shared/contracts/envelope';
import { isUuid } from '../../shared/contracts/ids';
import { RETRY_BASE_SECONDS, RETRY_CAP_SECONDS } from '../../shared/jobs/backoff';
import { retryIdempotent } from '../../shared/postgres/outcome';
import { inTransaction, rollback } from '../../shared/postgres/transaction';
import {
	COMMITTED_OUTCOME,
	EXECUTION_CLAIM,
	INSERT_ERROR,
	INSERT_ERROR_WITH_ID,
	NEXT_ERROR_ID,
	RECORD_ONCE_PER_EXECUTION,
	RECORD_WITH_JOB,
} from '../../shared/statements/errors';
import { FAIL_JOB } from '../../shared/statements/jobs';

/** `details.job_outcome`: the job's new status, or why the job path left it alone. */
export type JobOutcome = 'queued' | 'dead' | 'failed' | 'stale' | 'write_failed';

export interface RecordResult {
	/** `ops.errors.id`, or null when the row could not be written. */
	error_id: number | null;
	/**
	 * Job path: not run (no job_id), or its outcome; `status`/`next_run_at` are the job's new values, null when
	 * the job was left alone (outcome `stale` or `write_failed`).
	 */
	job:
		| { executed: false }
		| {
				executed: true;
				job_id: number;
				outcome: JobOutcome;
				status: string | null;
				next_run_at: string | null;
				/** This envelope was recorded already for the same claim token: its row and outcome, nothing written. */
				replayed?: true;
		  };
	/** Write failures, each naming the table. Empty when everything was recorded. */
	write_failures: Array<{ table: string; message: string; sqlstate: string | null }>;
	/** recordOncePerExecution only: what it did with the failed execution's claim. */
	execution?: ExecutionClaim;
}

export { RETRY_BASE_SECONDS, RETRY_CAP_SECONDS };

/** True when PostgreSQL answered with an error (the statement was rolled back); false when the outcome is unknown. */
function rolledBack(error: unknown): boolean {
	return error instanceof DatabaseError && typeof error.code === 'string' && /^[0-9A-Z]{5}$/.test(error.code);
}

function failureOf(table: string, error: unknown) {
	const e = (error ?? {}) as { message?: unknown; code?: unknown };
	return { table, message: String(e.message ?? error), sqlstate: typeof e.code === 'string' ? e.code : null };
}

/**
 * Writes the rows for one envelope and sets `envelope.error.details.job_outcome` when the job path ran.
 * `jobClaimToken`: ctx.job_claim_token (null: none given, the job path then checks `running` only).
 * Never throws.
 */
export async function recordError(
	pool: Pool,
	envelope: ErrorEnvelope,
	jobId: number | null,
	contractVersion: number,
	jobClaimToken: string | null = null,
): Promise<RecordResult> {
	const corr = envelope.meta.correlation;
	const result: RecordResult = { error_id: null, job: { executed: false }, write_failures: [] };
	const errorParams = [
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
	];
	if (jobId === null) {
		try {
			// under an id taken up front: an insert whose reply was lost is sent again and finds its own row
			// (ON CONFLICT (id) DO NOTHING waits for it if it is still running): one row, its id answered
			const id = Number((await retryIdempotent(() => pool.query(NEXT_ERROR_ID))).rows[0].id);
			await retryIdempotent(() => pool.query(INSERT_ERROR_WITH_ID, [...errorParams, id]));
			result.error_id = id;
		} catch (error) {
			result.write_failures.push(failureOf('ops.errors', error));
		}
		return result;
	}

	const lastError = {
		kind: envelope.error.kind,
		message: envelope.error.message,
		status_code: envelope.status_code,
		retryable: envelope.error.retryable,
		correlation_id: corr.correlation_id,
		node: corr.node,
	};
	const jobParams = [
		jobId,
		envelope.error.retryable,
		lastError,
		RETRY_BASE_SECONDS,
		RETRY_CAP_SECONDS,
		corr.correlation_id,
		jobClaimToken !== null,
		isUuid(jobClaimToken) ? jobClaimToken : null,
	];
	const jobResult = (outcome: JobOutcome, row?: { status?: string | null; next_run_at?: unknown }) => ({
		executed: true as const,
		job_id: jobId,
		outcome,
		status: row?.status ?? null,
		next_run_at: row?.next_run_at ? new Date(row.next_run_at as string).toISOString() : null,
	});
	let errorId: number | null = null;
	try {
		errorId = Number((await pool.query(NEXT_ERROR_ID)).rows[0].id);
		let { rows } = await pool.query(RECORD_WITH_JOB, [...errorParams, ...jobParams, errorId, false]);
		if (rows[0].error_id === null) {
			// a stale error under a claim token: no row yet. The job path may have waited for a concurrent
			// call of the same envelope (its lock on the job) that committed after this statement's snapshot;
			// again, in a new snapshot: that call's row (a replay), or this stale error's row
			({ rows } = await pool.query(RECORD_WITH_JOB, [...errorParams, ...jobParams, errorId, true]));
		}
		result.error_id = Number(rows[0].error_id);
		if (rows[0].prior_status) {
			// recorded already for this claim: that row (written now when it was missing) and its outcome
			result.job = replayedJob(jobResult, rows[0]);
		} else result.job = rows[0].status ? jobResult(rows[0].status, rows[0]) : jobResult('stale');
	} catch (error) {
		if (errorId !== null && !rolledBack(error)) {
			// the statement may have committed, its reply lost: settle it without writing anything twice
			await settleUnknownOutcome(pool, errorId, errorParams, jobParams, envelope, result, jobResult);
		} else {
			// One of the two writes failed and took the other with it (or no id could be taken): each on its
			// own, the job first (its outcome goes into the row).
			let jobFailure: RecordResult['write_failures'][number] | null = null;
			// the row's id: the one taken up front, or the prior call's when this envelope was recorded already
			let rowId = errorId;
			try {
				const { rows } = await pool.query(FAIL_JOB, [...jobParams, errorId]);
				if (rows[0].status) result.job = jobResult(rows[0].status, rows[0]);
				else if (rows[0].prior_status) {
					result.job = replayedJob(jobResult, rows[0]);
					rowId = Number(rows[0].prior_error_id);
				} else result.job = jobResult('stale');
			} catch (failure) {
				result.job = jobResult('write_failed');
				jobFailure = failureOf('ops.jobs', failure);
			}
			try {
				const details = { ...envelope.error.details, job_outcome: result.job.outcome };
				const params = errorParams.map((value, i) => (i === 9 ? details : value));
				const { rows } =
					rowId === null
						? await pool.query(INSERT_ERROR, params)
						: await pool.query(INSERT_ERROR_WITH_ID, [...params, rowId]);
				result.error_id = Number(rows[0]?.id ?? rowId);
			} catch (failure) {
				result.write_failures.push(failureOf('ops.errors', failure));
			}
			if (jobFailure) result.write_failures.push(jobFailure);
		}
	}
	if (result.job.executed) envelope.error.details.job_outcome = result.job.outcome;
	return result;
}

type JobResult = (outcome: JobOutcome, row?: { status?: string | null; next_run_at?: unknown }) => RecordResult['job'];

/** The job part of a replay: the outcome the prior call's run recorded (`retry` is the job's `queued`). */
function replayedJob(
	jobResult: JobResult,
	row: { prior_status: string; prior_next_run_at?: unknown },
): Extract<RecordResult['job'], { executed: true }> {
	const outcome = (row.prior_status === 'retry' ? 'queued' : row.prior_status) as JobOutcome;
	const job = jobResult(outcome, { status: outcome, next_run_at: row.prior_next_run_at });
	return { ...(job as Extract<RecordResult['job'], { executed: true }>), replayed: true };
}

/** How settleUnknownOutcome's transaction ended: a replay's row, this row written, or the first statement's committed. */
type Settled =
	| { kind: 'replay'; priorId: number }
	| { kind: 'written'; jobFailure: RecordResult['write_failures'][number] | null }
	| { kind: 'committed' };

/**
 * After RECORD_WITH_JOB failed without a SQLSTATE (connection lost: committed or not, unknown): on a new
 * connection, one transaction does the job path again (under a savepoint: a job that cannot be written is
 * `write_failed`, the row is still written) and inserts the row under `errorId` ON CONFLICT DO NOTHING.
 * No row inserted = the first statement committed: roll back (inTransaction's `rollback(value)`), report the
 * committed outcome. Fills `result`.
 */
async function settleUnknownOutcome(
	pool: Pool,
	errorId: number,
	errorParams: unknown[],
	jobParams: unknown[],
	envelope: ErrorEnvelope,
	result: RecordResult,
	jobResult: JobResult,
): Promise<void> {
	try {
		// inTransaction: its own client (a connection lost while checked out, also emitted as 'error', is
		// reported by the failed query), ROLLBACK on a throw, and a client whose ROLLBACK failed is destroyed
		const settled = await inTransaction<Settled>(pool, async (client) => {
			let jobFailure: RecordResult['write_failures'][number] | null = null;
			// the prior call's row id when this envelope was recorded already for the claim by another call
			// (not by the statement being settled: its own row would carry errorId)
			let priorId: number | null = null;
			await client.query('SAVEPOINT job_path');
			try {
				const { rows } = await client.query(FAIL_JOB, [...jobParams, errorId]);
				if (rows[0].status) result.job = jobResult(rows[0].status, rows[0]);
				else if (rows[0].prior_status && Number(rows[0].prior_error_id) !== errorId) {
					result.job = replayedJob(jobResult, rows[0]);
					priorId = Number(rows[0].prior_error_id);
				} else result.job = jobResult('stale');
			} catch (failure) {
				await client.query('ROLLBACK TO SAVEPOINT job_path');
				result.job = jobResult('write_failed');
				jobFailure = failureOf('ops.jobs', failure);
			}
			const outcome = (result.job as { outcome: JobOutcome }).outcome;
			const details = { ...envelope.error.details, job_outcome: outcome };
			const inserted = await client.query(INSERT_ERROR_WITH_ID, [
				...errorParams.map((value, i) => (i === 9 ? details : value)),
				priorId ?? errorId,
			]);
			if (priorId !== null) {
				// a replay: the prior call's row, written now if it was missing (by no one, or by the first statement)
				const replay = { kind: 'replay' as const, priorId };
				return inserted.rows.length ? replay : rollback(replay);
			}
			// no row inserted: the first statement committed (its row holds the id), nothing of this is kept
			return inserted.rows.length ? { kind: 'written' as const, jobFailure } : rollback({ kind: 'committed' as const });
		});
		if (settled.kind === 'replay') {
			result.error_id = settled.priorId;
			return;
		}
		if (settled.kind === 'written') {
			if (settled.jobFailure) result.write_failures.push(settled.jobFailure);
		} else {
			const { rows } = await pool.query(COMMITTED_OUTCOME, [errorId]);
			const committed = (rows[0]?.outcome ?? 'stale') as JobOutcome;
			const applied = committed === 'queued' || committed === 'dead' || committed === 'failed';
			result.job = jobResult(committed, applied ? { status: committed, next_run_at: rows[0]?.next_run_at } : undefined);
		}
		result.error_id = errorId;
	} catch (error) {
		// the database could not be reached again: whether the first statement committed stays unknown
		result.error_id = null;
		result.job = jobResult('write_failed');
		const failure = failureOf('ops.errors', error);
		result.write_failures.push({
			...failure,
			message: `outcome unknown (connection lost, not settled): ${failure.message}`,
		});
	}
}

/**
 * How long (seconds: 7 days) a claim of an execution suppresses a new row. An older claim is taken for an
 * execution id used again (n8n's ids restart with a new n8n database): a new failure replaces it. Migration
 * 018's trigger (an error branch's row) uses the same window.
 */
export const CLAIM_STALE_AFTER_SECONDS = 7 * 24 * 3600;

/** What the catch-all did: wrote the row, or found the failure recorded already (by whom, which row). */
export interface ExecutionClaim {
	/** The n8n instance (getInstanceId(); '' when unknown) and its execution id: together they key the claim. */
	instance_id: string;
	execution_id: string;
	/**
	 * `recorded`: this item's row is written (the execution's first, or — `branch_error_id` set — a failure of
	 * another node than the error branch recorded); `already_recorded`: an earlier row is (no row written).
	 */
	outcome: 'recorded' | 'already_recorded';
	/** This item's row when recorded, else the row that records the failure; null when none can be named. */
	error_id: number | null;
	recorded_by: 'branch' | 'catch_all';
	/** The error branch's row this row is linked to (a failure of another node in the same execution). */
	branch_error_id?: number;
}

export interface OncePerExecutionOptions {
	/** n8n's instance id (IExecuteFunctions.getInstanceId()); '' or absent when unknown. */
	instanceId?: string | null;
	/** The failing node (the Error Trigger's execution.error.node.name, else lastNodeExecuted); default: envelope's node. */
	failedNode?: string | null;
	/** CLAIM_STALE_AFTER_SECONDS unless given (seconds). */
	staleAfterSeconds?: number;
}

/**
 * Records the envelope once per failure of an n8n execution (the Error Pipe's "Once per Failed Execution",
 * the catch-all error workflow): one `ops.errors` row unless that failure has one (an error branch recorded
 * the same node's error in that execution within CLAIM_STALE_AFTER_SECONDS, or this catch-all ran for it
 * before). Conditional on the claim read in the same statement; safe to retry: a statement whose reply was
 * lost is sent again with the same id, and finds its own claim when it had committed. `executionId` null (an
 * Error Trigger item without an execution, e.g. a trigger that failed to activate): recorded as
 * recordError does. When the claim cannot be made (PostgreSQL answered with an error, e.g. 42P01: migration
 * 018 missing), the row is still written, as recordError does, with `details.claim_failed` = the SQLSTATE.
 * The job path does not run (a catch-all item has no ctx.job_id). Never throws.
 */
export async function recordOncePerExecution(
	pool: Pool,
	envelope: ErrorEnvelope,
	executionId: string | null,
	contractVersion: number,
	options: OncePerExecutionOptions = {},
): Promise<RecordResult> {
	if (executionId === null) return recordError(pool, envelope, null, contractVersion);
	const corr = envelope.meta.correlation;
	const instanceId = typeof options.instanceId === 'string' ? options.instanceId : '';
	const failedNode = options.failedNode === undefined ? corr.node : options.failedNode;
	const result: RecordResult = {
		error_id: null,
		job: { executed: false },
		write_failures: [],
	};
	const params = [
		corr.correlation_id,
		corr.tenant_id,
		null,
		corr.workflow,
		corr.node,
		envelope.error.kind,
		envelope.status_code,
		envelope.error.retryable,
		envelope.error.message,
		envelope.error.details,
		contractVersion,
		envelope.meta.source,
		instanceId,
		executionId,
	];
	const staleAfter = options.staleAfterSeconds ?? CLAIM_STALE_AFTER_SECONDS;
	let errorId: number;
	try {
		errorId = Number((await pool.query(NEXT_ERROR_ID)).rows[0].id);
	} catch (error) {
		result.write_failures.push(failureOf('ops.errors', error));
		return result;
	}
	try {
		let rows: Array<{ error_id: string; branch_error_id: string | number | null }>;
		try {
			({ rows } = await pool.query(RECORD_ONCE_PER_EXECUTION, [...params, errorId, staleAfter, failedNode ?? null]));
		} catch (error) {
			if (rolledBack(error)) throw error;
			// the reply was lost (committed or not): the same statement again, on another connection, either
			// writes the row (the first never committed) or finds this id's own claim
			({ rows } = await pool.query(RECORD_ONCE_PER_EXECUTION, [...params, errorId, staleAfter, failedNode ?? null]));
		}
		const base = { instance_id: instanceId, execution_id: executionId };
		if (rows.length) {
			result.error_id = Number(rows[0].error_id);
			const branch = rows[0].branch_error_id;
			result.execution = {
				...base,
				outcome: 'recorded',
				error_id: errorId,
				recorded_by: 'catch_all',
				...(branch !== null && branch !== undefined ? { branch_error_id: Number(branch) } : {}),
			};
			if (branch !== null && branch !== undefined) envelope.error.details.branch_error_id = Number(branch);
		} else {
			const claim = (await pool.query(EXECUTION_CLAIM, [instanceId, executionId])).rows[0];
			const first = claim ? Number(claim.error_id) : null;
			const linked = claim?.catch_all_error_id ? Number(claim.catch_all_error_id) : null;
			const own = first === errorId || linked === errorId;
			// the claim vanished (its row deleted since): no row can be named
			result.error_id = own ? errorId : first;
			result.execution = {
				...base,
				outcome: own ? 'recorded' : 'already_recorded',
				error_id: own ? errorId : first,
				recorded_by: linked === errorId ? 'catch_all' : (claim?.recorded_by ?? 'catch_all'),
				...(linked === errorId && first !== null ? { branch_error_id: first } : {}),
			};
		}
	} catch (error) {
		if (!rolledBack(error)) {
			result.write_failures.push(failureOf('ops.errors', error));
			return result;
		}
		// the claim could not be made (e.g. 42P01: ops.error_executions missing): the row is written anyway,
		// unclaimed, as an error branch's would be — a lost row is worse than a second one
		const code = (error as DatabaseError).code as string;
		envelope.error.details.claim_failed = code;
		const fallback = await recordError(pool, envelope, null, contractVersion);
		if (fallback.error_id !== null)
			fallback.execution = {
				instance_id: instanceId,
				execution_id: executionId,
				outcome: 'recorded',
				error_id: fallback.error_id,
				recorded_by: 'catch_all',
			};
		return fallback;
	}
	return result;
}
