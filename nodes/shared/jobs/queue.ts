/**
 * The ops.jobs queue's worker side (statements in ../statements/jobs.ts):
 *  - claimJobs: one statement takes up to `batch_size` due jobs (`FOR UPDATE SKIP LOCKED`), counts the
 *    attempt, sets locked_by/locked_at, a fresh `claim_token` naming this attempt, and reserves the
 *    attempt's run id (ops.jobs.run_id; its ops.job_runs row is written when the attempt ends, migration 026);
 *  - finishJobs: all jobs of one execution in ONE statement: done (succeeded), or failed → queued again
 *    with exponential backoff and jitter while attempts remain (retryable), dead after max_attempts, failed
 *    when not retryable; the attempt's job_runs row is written with the outcome. Only the worker holding the
 *    lock (and, when given, the attempt's claim token) can finish; each job's outcome or error is its own;
 *  - releaseStale: running jobs whose worker died go back to the queue, writing their run as `retry`, or
 *    dead when no attempt is left: those whose process's lease (./lease.ts) is not held for a grace period,
 *    and (backstop, or without a lease) those locked longer than a timeout.
 * Claim Jobs is safe to retry after a lost reply (claim key replay); docs/retry-safety.md.
 * Claim and Finish run as named statements on the pool's named-statement pool (../postgres/prepared.ts: parsed
 * and planned once per connection), the other statements unnamed on the pool itself.
 */
import { createHash } from 'node:crypto';
import type { Pool } from 'pg';
import { isUuid } from '../contracts/ids';
import { ContractError } from '../errors';
import { rowsOf } from '../postgres/rows';
import { RETRY_BASE_SECONDS, RETRY_CAP_SECONDS } from './backoff';
import {
	CLAIM_JOBS_NAMED,
	CURRENT_JOBS,
	FINISH_JOBS_NAMED,
	RELEASE_STALE,
	RELEASE_STALE_LEASED,
} from '../statements/jobs';
import { namedStatementPool, type NamedStatement } from '../postgres/prepared';

const JOBS = { table: 'ops.jobs' };

function invalid(message: string, field: string): ContractError {
	return ContractError.validation(
		`invalid input: ${message}`,
		{ code: 'VALIDATION', field },
		{ operation: 'validate', ...JOBS },
	);
}

/** `Number(value)`, or NaN where that throws (an object whose toString / valueOf is not callable). */
function toNumber(value: unknown): number {
	try {
		return Number(value);
	} catch {
		return Number.NaN;
	}
}

/** @throws ContractError 422 naming `field` unless an integer from 1 to `max` */
export function positiveInt(value: unknown, field: string, max: number): number {
	const n = toNumber(value);
	if (!Number.isInteger(n) || n < 1 || n > max) throw invalid(`${field} must be an integer from 1 to ${max}`, field);
	return n;
}

function text(value: unknown, field: string): string {
	if (typeof value !== 'string' || value.trim() === '') throw invalid(`${field} is required`, field);
	return value.trim();
}

async function run<T extends Record<string, unknown>>(
	pool: Pool,
	sql: string | NamedStatement,
	params: unknown[],
	operation: string,
): Promise<T[]> {
	return rowsOf<T>(pool, sql, params, { operation, ...JOBS });
}

/**
 * Job types from "a" or "a, b, c" (one claim serves several queues, e.g. WF90's worker types); empty
 * (or only commas): null. @throws ContractError 422 `job_type` when not text
 */
export function jobTypeList(value: unknown, field = 'job_type'): string[] | null {
	if (value === undefined || value === null) return null;
	if (typeof value !== 'string') throw invalid(`${field} must be text`, field);
	const types = value
		.split(',')
		.map((t) => t.trim())
		.filter(Boolean);
	return types.length === 0 ? null : types;
}

/**
 * How long (s) after a claim its retry may still be answered with that claim's jobs (a lost reply's retry
 * comes within seconds: n8n's Retry On Fail waits 1 s between tries).
 */
export const CLAIM_REPLAY_WINDOW_SECONDS = 300;

/**
 * What ops.jobs.claim_key stores for a call key: md5 (hex) of its JSON text (any string, NUL and lone
 * surrogates included, gives a distinct, storable digest).
 */
export function claimKeyDigest(key: string): string {
	return createHash('md5').update(JSON.stringify(key)).digest('hex');
}

/**
 * Claim bookkeeping never returned by Claim Jobs (docs/retry-safety.md "Jobs: claims and leases"); `replayed` is
 * returned only when true.
 */
const CLAIM_BOOKKEEPING = new Set(['claim_key', 'lease_id', 'replayed', 'lease_lost']);

/** details.code of the 503 Claim Jobs answers when the server does not hold the lease it was given. */
export const LEASE_NOT_HELD = 'JOB_LEASE_NOT_HELD';

/**
 * Claim Jobs: the claimed jobs (each the ops.jobs row with `claim_token`, the attempt's uuid, and `run_id`,
 * its ops.job_runs row), possibly none. `job_type`: one type or a comma-separated list.
 * `claim_key` (optional): the caller's key of this call, identical on its retries (Pipeline Capture: the
 * call key of Capture); a retry after a lost reply, by the same worker with the same key less than
 * CLAIM_REPLAY_WINDOW_SECONDS after the claim, gets the jobs that claim took and that are still running
 * under it (same claim_token and run_id), each with `replayed: true`, and claims nothing new. No key: no
 * replay. `lease_id` (optional): the claiming process's lease (./lease.ts), stored on every job claimed;
 * when no session holds its lock at the claim (checked in the claim's statement), nothing is claimed or
 * replayed: 503 (retryable) `JOB_LEASE_NOT_HELD`.
 * @throws ContractError 422 (job_type, batch_size 1–1000, worker); 503 (JOB_LEASE_NOT_HELD)/500 db
 */
export async function claimJobs(
	pool: Pool,
	input: { job_type: unknown; batch_size: unknown; worker: unknown },
	claim: { claim_key?: string | null; lease_id?: string | null } = {},
) {
	text(input.job_type, 'job_type');
	const types = jobTypeList(input.job_type);
	if (!types) throw invalid('job_type names no type', 'job_type');
	const rows = await run<Record<string, unknown>>(
		namedStatementPool(pool),
		CLAIM_JOBS_NAMED,
		[
			types,
			positiveInt(input.batch_size, 'batch_size', 1000),
			text(input.worker, 'worker'),
			claim.claim_key ? claimKeyDigest(claim.claim_key) : null,
			claim.lease_id || null,
			CLAIM_REPLAY_WINDOW_SECONDS,
		],
		'update',
	);
	if (rows.some((row) => row.lease_lost === true))
		throw ContractError.unavailable(
			'the job lease is not held by this process on the server (its connection is being re-established)',
			{ code: LEASE_NOT_HELD },
			{ operation: 'update', ...JOBS },
		);
	return rows.map((row) => {
		const job: Record<string, unknown> = {};
		for (const key in row) if (!CLAIM_BOOKKEEPING.has(key)) job[key] = row[key];
		if (row.replayed === true) job.replayed = true;
		return job;
	});
}

/** The optional claim token: absent/null/"" → not checked; else it must be a UUID (422 naming the field). */
function claimToken(value: unknown): string | null {
	if (value === undefined || value === null || value === '') return null;
	if (typeof value !== 'string' || !isUuid(value.trim()))
		throw invalid('claim_token must be the UUID Claim Jobs returned', 'claim_token');
	return value.trim().toLowerCase();
}

/** One job to finish (Finish Job's item). */
export interface FinishInput {
	job_id: unknown;
	worker: unknown;
	success: boolean;
	retryable?: boolean;
	/** The failure: an object (kept as is) or anything else (→ `{ message: String(error) }`); ignored on success. */
	error?: unknown;
	/** A job no longer held as given is returned as it is (`already_finished: true`) instead of a 409. */
	accept_finished?: boolean;
	/** The uuid Claim Jobs returned; absent/null/"": not checked. */
	claim_token?: unknown;
}

interface Checked {
	index: number;
	jobId: number;
	worker: string;
	token: string | null;
	success: boolean;
	retryable: boolean;
	error: string | null;
	acceptFinished: boolean;
}

function check(input: FinishInput, index: number): Checked {
	const jobId = positiveInt(input.job_id, 'job_id', Number.MAX_SAFE_INTEGER);
	const worker = text(input.worker, 'worker');
	const token = claimToken(input.claim_token);
	const error = input.success
		? null
		: input.error !== null && typeof input.error === 'object' && !Array.isArray(input.error)
			? input.error
			: { message: String(input.error ?? 'failed') };
	return {
		index,
		jobId,
		worker,
		token,
		success: input.success,
		retryable: input.retryable ?? true,
		error: error === null ? null : JSON.stringify(error),
		acceptFinished: input.accept_finished === true,
	};
}

function notHeld(c: Checked): ContractError {
	// the token itself is never echoed: it is the attempt's capability
	const claim = c.token ? ' and this claim token' : '';
	return ContractError.conflict(
		`job ${c.jobId} is not running under worker ${c.worker}${claim}`,
		{ code: 'NOT_LOCKED_BY_WORKER', job_id: c.jobId, worker: c.worker, claim_token_checked: c.token !== null },
		{ operation: 'update', ...JOBS },
	);
}

/**
 * Finish Job for every item of one execution: ONE statement finishes all valid inputs (FINISH_JOBS). Of
 * those it did not finish, the ones with a claim token whose own finish committed earlier (a retry after a
 * lost reply: the attempt's run was closed by Finish Job under that token with the same outcome, migration
 * 021) are answered with that outcome and `replayed: true`, the others with `accept_finished` with the job
 * as it is (`already_finished: true`) — one more statement (CURRENT_JOBS) for both. Returns, per input in order,
 * `{ id, status, attempts, max_attempts, next_run_at, run_id, replayed? | already_finished? }` or that
 * input's own ContractError: 422 (job_id, worker, claim_token not a UUID), 409 NOT_LOCKED_BY_WORKER (not
 * running under this worker and claim token — finished by someone else, released as stale, claimed again,
 * or never claimed by it — unless accept_finished), 404 JOB_NOT_FOUND. A replay's `status` is the status
 * its finish set (the job may have moved on since: a queued job claimed again), `attempts` that attempt's
 * number, `next_run_at` the job's as it is now. Without a claim token there is no replay (accept_finished
 * still answers). A job named twice is finished by its first input; the later ones see it finished
 * (replayed with the same token and outcome, else 409 or already_finished), as one after the other would.
 * @throws ContractError 503/500 when a statement fails (then no input of the batch was finished)
 */
export async function finishJobs(
	pool: Pool,
	inputs: FinishInput[],
): Promise<Array<Record<string, unknown> | ContractError>> {
	const out: Array<Record<string, unknown> | ContractError> = new Array(inputs.length);
	const first: Checked[] = [];
	const repeated: Checked[] = [];
	const seen = new Set<number>();
	inputs.forEach((input, index) => {
		try {
			const c = check(input, index);
			(seen.has(c.jobId) ? repeated : first).push(c);
			seen.add(c.jobId);
		} catch (error) {
			out[index] = error as ContractError;
		}
	});
	const finished = new Map<number, Record<string, unknown>>();
	if (first.length > 0) {
		const rows = await run<Record<string, unknown>>(
			namedStatementPool(pool),
			FINISH_JOBS_NAMED,
			[
				first.map((c) => c.jobId),
				first.map((c) => c.worker),
				first.map((c) => c.success),
				first.map((c) => c.retryable),
				first.map((c) => c.error),
				RETRY_BASE_SECONDS,
				RETRY_CAP_SECONDS,
				first.map((c) => c.token),
			],
			'update',
		);
		for (const row of rows) finished.set(Number(row.id), row);
	}
	const missed = [...first.filter((c) => !finished.has(c.jobId)), ...repeated];
	for (const c of first) if (finished.has(c.jobId)) out[c.index] = finished.get(c.jobId)!;
	// a retry whose own finish committed (its reply lost) is found by its claim token; accept_finished reads the job
	const lookup = missed.filter((c) => c.token !== null || c.acceptFinished);
	const answers = new Map<number, Record<string, unknown>>();
	if (lookup.length > 0)
		for (const { n, replayed, ...row } of await run<Record<string, unknown>>(
			pool,
			CURRENT_JOBS,
			[
				lookup.map((c) => c.jobId),
				lookup.map((c) => c.token),
				lookup.map((c) => c.success),
				lookup.map((c) => c.retryable),
				lookup.map((c) => c.error),
				lookup.map((c) => c.acceptFinished),
			],
			'select',
		))
			answers.set(
				lookup[Number(n) - 1].index,
				replayed ? { ...row, replayed: true } : { ...row, already_finished: true },
			);
	for (const c of missed) {
		out[c.index] =
			answers.get(c.index) ??
			(c.acceptFinished
				? ContractError.notFound(
						`job ${c.jobId} not found`,
						{ code: 'JOB_NOT_FOUND', job_id: c.jobId },
						{ operation: 'select', ...JOBS },
					)
				: notHeld(c));
	}
	return out;
}

/**
 * One job of finishJobs. @throws its ContractError (422, 409 NOT_LOCKED_BY_WORKER, 404 JOB_NOT_FOUND, 503)
 */
export async function finishJob(pool: Pool, input: FinishInput): Promise<Record<string, unknown>> {
	const [result] = await finishJobs(pool, [input]);
	if (result instanceof ContractError) throw result;
	return result;
}

/** Release Stale's thresholds (s): `lease_grace_seconds` 0 (or absent) → leases are not looked at. */
export interface ReleaseStaleInput {
	/** Jobs locked longer than this (s) are released: all jobs without lease grace, else those without a lease. */
	older_than_seconds: unknown;
	limit: unknown;
	/** A job whose lease is not held for this long (s) is released; 0 / absent: by age only (as before). */
	lease_grace_seconds?: unknown;
	/** With a lease grace: a job with a lease locked longer than this (s) is released anyway (backstop). */
	lease_max_seconds?: unknown;
}

/** The default Lease Max (s): one day (a step that runs longer than that is taken for hung). */
export const DEFAULT_LEASE_MAX_SECONDS = 86_400;
/** The smallest Lease Grace (s) other than 0: a lease connection's reconnect (250 ms → 5 s backoff) fits in it. */
export const MIN_LEASE_GRACE_SECONDS = 10;

/**
 * A whole number of seconds from a node field: a number, or a string of digits (spaces around allowed);
 * anything else (true, " ", "1e3", 1.5, objects) → 422 naming `field`.
 */
function seconds(value: unknown, field: string, min: number, max: number): number {
	const n =
		typeof value === 'number'
			? value
			: typeof value === 'string' && /^\s*\d+\s*$/.test(value)
				? Number(value)
				: Number.NaN;
	if (!Number.isInteger(n) || n < min || n > max)
		throw invalid(`${field} must be a whole number of seconds from ${min} to ${max}`, field);
	return n;
}

/** Absent, null or "" (an empty node field). */
const blank = (value: unknown) => value === undefined || value === null || value === '';

/**
 * Release Stale: `[{ id, status: "queued" | "dead", runs_closed }]` (+ `reason`: "lease" | "lease_max" |
 * "age" with a lease grace). Without `lease_grace_seconds`: every running job locked longer than
 * `older_than_seconds`. With it (whole s, 10–3600): jobs whose lease (./lease.ts) is not held for that long,
 * jobs with a lease locked longer than `lease_max_seconds` (whole s, ≥ the grace, ≤ 604,800; default 86,400),
 * jobs without a lease locked longer than `older_than_seconds` (RELEASE_STALE_LEASED). Grace and max are
 * numbers or digit strings (no `true`, blanks inside, exponents or fractions).
 * @throws ContractError 422 naming the field; 503/500
 */
export async function releaseStale(pool: Pool, input: ReleaseStaleInput) {
	const olderThan = positiveInt(input.older_than_seconds, 'older_than_seconds', 86_400 * 7);
	const limit = positiveInt(input.limit, 'limit', 10_000);
	const grace = blank(input.lease_grace_seconds)
		? 0
		: seconds(input.lease_grace_seconds, 'lease_grace_seconds', 0, 3600);
	if (grace === 0) return run<Record<string, unknown>>(pool, RELEASE_STALE, [olderThan, limit], 'update');
	if (grace < MIN_LEASE_GRACE_SECONDS)
		throw invalid(
			`lease_grace_seconds must be 0 or from ${MIN_LEASE_GRACE_SECONDS} to 3600 (a lease reconnect must fit in it)`,
			'lease_grace_seconds',
		);
	const leaseMax = blank(input.lease_max_seconds)
		? DEFAULT_LEASE_MAX_SECONDS
		: seconds(input.lease_max_seconds, 'lease_max_seconds', 1, 86_400 * 7);
	if (leaseMax < grace)
		throw invalid('lease_max_seconds must not be less than lease_grace_seconds', 'lease_max_seconds');
	return run<Record<string, unknown>>(pool, RELEASE_STALE_LEASED, [olderThan, limit, grace, leaseMax], 'update');
}
