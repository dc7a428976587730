/**
 * A processor failure of a transition written anyway (Fail always; Archive at Max Processor Failures): its
 * error and its public shape, and the ops.errors rows a refused write (the run had moved on) could not carry.
 */
import type { Pool } from 'pg';
import { ContractError } from '../../../shared/errors';
import type { EngineResult } from '../../../shared/stateMachine';
import { abortError } from '../../../shared/stateMachine';
import { RECORD_WARNINGS } from '../../../shared/statements/errors';

/**
 * The ops.errors rows of a write that was refused (the run had moved on): a processor failure's row says
 * `applied: false` (its transition was not written by this call) and loses `run_status`.
 */
export function notApplied(rows: string): string {
	const parsed = JSON.parse(rows) as { details: Record<string, unknown> }[];
	for (const row of parsed) {
		if (row.details.applied === true) {
			row.details.applied = false;
			delete row.details.run_status;
		}
	}
	return JSON.stringify(parsed);
}

/** Records ops.errors rows (a jsonb array, RECORD_WARNINGS) a refused write could not carry; best effort. */
export async function recordRows(pool: Pick<Pool, 'query'>, id: string, rows: string): Promise<void> {
	if (rows === '[]') return;
	await pool.query(RECORD_WARNINGS, [id, rows]).catch(() => undefined);
}

/**
 * The error of a SYNC / ASYNC_SAME_TX processor failure whose transition is written anyway (Fail always;
 * Archive at Max Processor Failures): code WORKFLOW_FAILED / NO_COMPUTE_MEMBER_FOR_TAG as abortError, a
 * message saying the transition happened.
 */
export function doneAnyway(result: EngineResult, details: Record<string, unknown>): ContractError {
	const aborted = abortError(result, details);
	return ContractError.upstream(
		`${String(details.transition)} processor failed (${String(aborted.details.code)}), the transition was written anyway: ${result.reason}`,
		400,
		false,
		{ ...aborted.details, applied: true },
	);
}

/** A failed processor of a transition that happened anyway (Fail; Archive at Max Processor Failures). */
export interface ProcessorError {
	code: string;
	message: string;
	/** Archive: the run's processor failures after this one. */
	failures?: number;
}
