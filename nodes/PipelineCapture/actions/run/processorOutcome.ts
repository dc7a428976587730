/**
 * What Capture and Complete Step do with the outcome of a transition's processors (seed 004 EXTERNAL
 * processors, run before the write, outside any transaction):
 *  - ASYNC_NEW_TX warnings become ops.errors rows (kind `upstream`, status 400, details.code
 *    PROCESSOR_WARNING, details.severity `warning`), so no processor failure is lost;
 *  - a SYNC / ASYNC_SAME_TX failure is counted on the run (`processor_failures`, migration 012): the run
 *    goes back for a retry until the node's Max Processor Failures, then ends FAILED (error.code
 *    PROCESSOR_FAILURES); the caller still gets the 400 abort error, with `failures` and `run_status`.
 */
import type { Pool } from 'pg';
import type { ContractError } from '../../../shared/errors';
import type { FieldInit } from '../../../shared/node/fields';
import { replaceUnstorable } from '../../../shared/sanitize';
import type { EngineOptions, EngineResult } from '../../../shared/stateMachine';
import { RECORD_WARNINGS } from '../../../shared/statements/errors';

/** Failed processor runs of one run after which it ends FAILED (0: never). */
export const DEFAULT_MAX_PROCESSOR_FAILURES = 3;
/** Largest Max Processor Failures (the column is an int4). */
export const MAX_PROCESSOR_FAILURES_LIMIT = 2_147_483_647;

/** The node field of Capture and Complete Step (input `max_processor_failures`). */
export const MAX_PROCESSOR_FAILURES_FIELD: FieldInit = {
	displayName: 'Max Processor Failures',
	name: 'maxProcessorFailures',
	type: 'number',
	default: DEFAULT_MAX_PROCESSOR_FAILURES,
	typeOptions: { minValue: 0, maxValue: MAX_PROCESSOR_FAILURES_LIMIT },
	description:
		'Failed processor runs (SYNC / ASYNC_SAME_TX errors, timeouts, success: false, no calculation node) after which the run ends FAILED instead of waiting for a retry, counted over the whole run. 0 = never.',
};

/** Options of Capture and Complete Step: the engine's, plus how failures and warnings are handled. */
export interface StepOptions extends EngineOptions {
	/** Failed processor runs of a run (in all, every step) after which it ends FAILED; 0 = never. Default 3. */
	maxProcessorFailures?: number;
	/** Where warnings are recorded from (ops.errors workflow and node). */
	origin?: { workflow?: string | null; node?: string | null };
}

/**
 * The StepOptions an operation hands its run: the node's processor runner and origin (`deps`), and the
 * item's Max Processor Failures field (`input.max_processor_failures`; absent: DEFAULT_MAX_PROCESSOR_FAILURES).
 */
export function stepOptionsOf(
	deps: { runProcessor?: StepOptions['runProcessor']; origin?: StepOptions['origin'] },
	input: { max_processor_failures?: unknown },
): StepOptions {
	return {
		runProcessor: deps.runProcessor,
		maxProcessorFailures: Number(input.max_processor_failures ?? DEFAULT_MAX_PROCESSOR_FAILURES),
		origin: deps.origin,
	};
}

/** The ops.errors rows of `warnings` as the jsonb array RECORD_WARNINGS / completeStepSql take. */
export function warningRows(warnings: string[], run: { id: string; transition: string }, options: StepOptions): string {
	return JSON.stringify(
		warnings.map((message) => ({
			message,
			details: {
				code: 'PROCESSOR_WARNING',
				severity: 'warning',
				execution_mode: 'ASYNC_NEW_TX',
				run_id: run.id,
				transition: run.transition,
			},
			workflow: storable(options.origin?.workflow),
			node: storable(options.origin?.node),
		})),
	);
}

/**
 * A refused transition's failure as ops.errors rows for RECORD_WARNINGS (for an operation that reports it in
 * its output instead of its error output, the Sweep): kind `upstream`, status 400, `details` the error's
 * (code WORKFLOW_FAILED / NO_COMPUTE_MEMBER_FOR_TAG, run_id, transition, failures, run_status…) with
 * `severity: "error"`.
 */
export function failureRows(error: ContractError, options: StepOptions): string {
	return JSON.stringify([
		{
			message: storable(error.message),
			details: { ...error.details, severity: 'error' },
			workflow: storable(options.origin?.workflow),
			node: storable(options.origin?.node),
		},
	]);
}

function storable(text: string | null | undefined): string | null {
	return typeof text === 'string' ? replaceUnstorable(text).text : null;
}

/** Two jsonb arrays of ops.errors rows (warningRows / failureRows) as one. */
export function joinRows(a: string, b: string): string {
	return JSON.stringify([...(JSON.parse(a) as unknown[]), ...(JSON.parse(b) as unknown[])]);
}

/**
 * Records `warnings` (RECORD_WARNINGS) after a statement that could not carry them (a Capture, an aborted
 * step). Best effort: the operation's own answer matters more; a failure is returned in the answer's
 * `warnings_recorded: false`.
 * @returns whether they were recorded
 */
export async function recordWarnings(
	pool: Pick<Pool, 'query'>,
	warnings: string[],
	run: { id: string; transition: string },
	options: StepOptions,
): Promise<boolean> {
	if (warnings.length === 0) return true;
	try {
		await pool.query(RECORD_WARNINGS, [run.id, warningRows(warnings, run, options)]);
		return true;
	} catch {
		return false;
	}
}

/** The limit of `options` as an integer in 0 … MAX_PROCESSOR_FAILURES_LIMIT. */
export function maxFailuresOf(options: StepOptions): number {
	const n = options.maxProcessorFailures;
	return typeof n === 'number' && Number.isFinite(n) && n >= 0
		? Math.min(Math.floor(n), MAX_PROCESSOR_FAILURES_LIMIT)
		: DEFAULT_MAX_PROCESSOR_FAILURES;
}

/** The run's `error` when its processors failed `limit` times (the limit in force when it ended). */
export function failuresError(result: EngineResult, limit: number): string {
	return JSON.stringify({
		message: `processor failures reached the limit (${limit}): ${result.reason}`,
		code: 'PROCESSOR_FAILURES',
		cause: result.code,
		limit,
		stopped_at: result.stoppedAt,
	});
}

/**
 * Counts a processor failure (PROCESSOR_FAILED) and adds to `error` what became of the run:
 * `details.failures` and `details.run_status` (FAILED when this was the last failure allowed), or
 * `details.capture_lost: true` when the holder no longer held the run; `details.warnings` the
 * ASYNC_NEW_TX failures before it (also recorded in ops.errors, best effort). When the count cannot be
 * written, `details.failures` is null and `onCountFailed` gives the run back as it can (the worker's
 * token restored, or the capture released), so it is not left held under a token nobody knows.
 */
export async function countFailure(
	pool: Pick<Pool, 'query'>,
	sql: string,
	params: {
		id: string;
		transition: string;
		holding: string;
		/** The holder's capture token; null: a run held under none (the Sweep's), counted by id + status. */
		token: string | null;
		backTo: string | null;
		restoreToken?: string;
		/** The Sweep's claim (`updated_at` as text): counted only while the run still has it. */
		readAt?: string;
		result: EngineResult;
		options: StepOptions;
	},
	error: ContractError,
	onCountFailed: () => Promise<unknown>,
): Promise<ContractError> {
	if (params.result.warnings.length > 0) {
		Object.assign(error.details, { warnings: params.result.warnings });
		await recordWarnings(
			pool,
			params.result.warnings,
			{ id: params.id, transition: params.transition },
			params.options,
		);
	}
	const max = maxFailuresOf(params.options);
	try {
		const { rows } = await pool.query<{ status: string; processor_failures: number }>(sql, [
			params.id,
			params.holding,
			params.token,
			params.backTo,
			// the failure count is not known before the statement: the message names the limit reached
			failuresError(params.result, max),
			max,
			params.restoreToken ?? null,
			params.readAt ?? null,
		]);
		if (rows.length === 0) Object.assign(error.details, { capture_lost: true });
		else Object.assign(error.details, { failures: rows[0].processor_failures, run_status: rows[0].status });
	} catch {
		// counting is best effort: the abort error is what the caller must get
		Object.assign(error.details, { failures: null });
		await onCountFailed().catch(() => undefined);
	}
	return error;
}
