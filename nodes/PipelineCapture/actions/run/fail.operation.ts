/**
 * Run → Fail: FAILED with the error, from any non-terminal state (seed 001 "* → FAILED").
 * Input: `run_id`, `error` (object or message). Output: `{ run_id, status: "FAILED", warnings }`.
 * The `FAIL` transition's EXTERNAL processors (Calculation Nodes), when the definition declares some, run
 * first with no connection or lock held, then one compare-and-set write (failRun below); `warnings` are
 * their ASYNC_NEW_TX failures (also in ops.errors; empty when none).
 * A retry after a lost reply (the run FAILED by FAIL with an equal error and this call's key: the same
 * n8n instance, workflow, execution, node, run index and item) answers the same, with `replayed: true`,
 * and runs no processor again. A SYNC / ASYNC_SAME_TX processor failure does not stop the run failing (Fail
 * is the way out of a run): it is FAILED anyway, the failure counted on the run (`processor_failures`),
 * recorded in ops.errors (severity error) in the same statement and returned as `processor_error: { code,
 * message }` (and in `warnings`). Errors: 404; 409 ALREADY_TERMINAL; 409 RUN_CHANGED (the run kept
 * changing while the processors ran); 422; 503.
 */
import type { Pool } from 'pg';
import { parseInput } from '../../../shared/contracts/input';
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { ContractError } from '../../../shared/errors';
import type { WorkflowDefinition } from '../../../shared/stateMachine';
import { runTransitionProcessors } from '../../../shared/stateMachine';
import { hasProcessors, nonTerminalStates, transitionFrom } from '../../engine/definition';
import { FAIL_READ_RUN, FAIL_RUN, READ_FOR_FAIL } from '../../../shared/statements/pipelineRuns';
import { failureRows, joinRows, warningRows, type StepOptions } from './processorOutcome';
import { doneAnyway, notApplied, recordRows, type ProcessorError } from './processorError';
import { notFound, PIPELINE_INPUT, publicRun, query, RUNS, RunInput, type RunRow } from './runRow';

/** How often Fail reads the run again when it changed while FAIL's processors ran (then 409 RUN_CHANGED). */
export const FAIL_ATTEMPTS = 3;

/**
 * Fail: FAILED with `error` (an object) from any non-terminal state. A run already FAILED by FAIL with an
 * equal `error` (jsonb equality) and this call's key (`call_key`, stored as md5 in `fail_key`) is this
 * call's own commit seen again (a retry after a lost reply): the run is returned with `replayed: true`,
 * nothing is written and no processor runs.
 * Processors (issue 26 item 2): when the definition's `FAIL` leaving the run's state has processors, they
 * run first, with no transaction or row lock held, over the run as it will be written (status FAILED, the
 * error, no capture token); then one compare-and-set on what was read (status, capture token,
 * `updated_at`) writes FAILED and records the ASYNC_NEW_TX warnings in ops.errors. A SYNC / ASYNC_SAME_TX
 * failure does not keep the run from failing (Fail is the way out of a run: refused, the run would stay in
 * progress, the Sweep release it and its step run again, for ever): FAILED is written anyway, the failure
 * counted (`processor_failures` + 1) and recorded as an ops.errors row (severity error, details.applied)
 * by the same statement, and returned in `processor_error` (and `warnings`). A run written by someone else while the
 * processors ran is read again and the FAIL of its new state runs (processors included), at most
 * FAIL_ATTEMPTS times. Without FAIL processors anywhere in the definition: one statement, as before.
 * @returns the run, `warnings` (ASYNC_NEW_TX failure reasons; empty when none; empty on a replay)
 * @throws 404; 409 ALREADY_TERMINAL when the run is COMPLETED, or FAILED otherwise (another error, a cascade
 *         limit, processor failures); 409 RUN_CHANGED when it kept changing under the processors
 */
export async function failRun(
	pool: Pool,
	definition: WorkflowDefinition,
	input: { run_id: unknown; error: unknown; call_key?: string | null },
	options: StepOptions = {},
): Promise<RunRow & { warnings: string[]; processor_error?: ProcessorError }> {
	const { run_id: id } = parseInput(RunInput, input, PIPELINE_INPUT);
	const error = JSON.stringify(
		input.error !== null && typeof input.error === 'object' && !Array.isArray(input.error)
			? input.error
			: { message: String(input.error ?? 'failed') },
	);
	const key = input.call_key || null;
	const open = nonTerminalStates(definition);
	if (!hasProcessors(definition, 'FAIL')) {
		const rows = await query<RunRow & { moved: boolean; same: boolean }>(
			pool,
			FAIL_RUN,
			[id, error, open, key],
			'update',
		);
		if (rows.length === 0) throw notFound(id);
		return failAnswer(id, rows[0], []);
	}
	for (let attempt = 1; ; attempt++) {
		const [read] = await query<RunRow & { same: boolean; read_at: string }>(
			pool,
			READ_FOR_FAIL,
			[id, error, key],
			'select',
		);
		if (!read) throw notFound(id);
		const { same, read_at, ...current } = read;
		// FAILED by this very call (a retry after a lost reply): answered as the first call, no processor again
		if (same || !open.includes(current.status)) return failAnswer(id, { ...current, moved: false, same }, []);
		const declared = transitionFrom(definition, current.status, 'FAIL');
		const step = { id, transition: 'FAIL' };
		let warnings: string[] = [];
		let failure: ContractError | null = null;
		if (declared && declared.processors.length > 0) {
			const entity: Record<string, unknown> = {
				...publicRun(current as RunRow),
				status: 'FAILED',
				previous_transition: 'FAIL',
				error: JSON.parse(error) as unknown,
			};
			delete entity.capture_token; // a credential of the worker: processors never see it
			const processed = await runTransitionProcessors(current.status, declared, entity, options);
			warnings = processed.warnings;
			// Fail is the way out of a run: a failed FAIL processor does not keep the run from failing (it
			// would stay in progress, be released by the Sweep and its step redone, forever). It is counted
			// on the run, recorded as an ops.errors row (severity error) with the write, and returned.
			if (!processed.ok) failure = doneAnyway(processed, { run_id: id, transition: 'FAIL', run_status: 'FAILED' });
		}
		const rowsOf = failure
			? joinRows(warningRows(warnings, step, options), failureRows(failure, options))
			: warningRows(warnings, step, options);
		const rows = await query<RunRow & { moved: boolean; same: boolean }>(
			pool,
			FAIL_READ_RUN,
			[id, error, key, current.status, current.capture_token ?? null, read_at, rowsOf, failure ? 1 : 0],
			'update',
		);
		if (rows.length === 0) throw notFound(id);
		const [after] = rows;
		const processorError = failure ? { code: String(failure.details.code), message: failure.message } : null;
		// written; or a concurrent duplicate of this call wrote first (replay); or the run ended meanwhile (409)
		if (after.moved || after.same || !open.includes(after.status)) {
			if (!after.moved) await recordRows(pool, id, notApplied(rowsOf));
			return failAnswer(id, after, after.moved ? warnings : [], after.moved ? processorError : null);
		}
		// the run moved on while the processors ran (captured, completed, released): FAIL from where it is now
		await recordRows(pool, id, notApplied(rowsOf));
		if (attempt >= FAIL_ATTEMPTS) {
			throw ContractError.conflict(
				`run ${id} changed ${FAIL_ATTEMPTS} times while FAIL's processors ran (now ${after.status}); retry Fail`,
				{ code: 'RUN_CHANGED', run_id: id, status: after.status },
				{ operation: 'update', ...RUNS },
			);
		}
	}
}

/** Fail's answer from its statement's row: written, a replay (`same`), or 409 ALREADY_TERMINAL. */
function failAnswer(
	id: string,
	row: RunRow & { moved: boolean; same: boolean },
	warnings: string[],
	processorError: ProcessorError | null = null,
): RunRow & { warnings: string[]; processor_error?: ProcessorError } {
	const { moved, same, ...run } = row;
	// FAILED by FAIL with this very error and this caller's key: this call's retry after a lost reply
	if (!moved && same) return { ...publicRun(run as RunRow), warnings: [], replayed: true };
	if (!moved) {
		throw ContractError.conflict(
			`run ${id} is already ${String(run.status)}`,
			{ code: 'ALREADY_TERMINAL', run_id: id, status: run.status },
			{ operation: 'update', ...RUNS },
		);
	}
	if (processorError)
		return {
			...publicRun(run as RunRow),
			warnings: [...warnings, processorError.message],
			processor_error: processorError,
		};
	return { ...publicRun(run as RunRow), warnings };
}

export const failOperation: PipelineOperation = {
	value: 'fail',
	name: 'Fail',
	action: 'Fail a pipeline run',
	description: "Mark a run FAILED with its error (after the FAIL transition's processors, if it has any)",
	fields: fieldsOf({ resource: 'run', operation: 'fail' }, [
		{ displayName: 'Run ID', name: 'runId', required: true, description: 'The run that failed' },
		{
			displayName: 'Error',
			name: 'error',
			default: '={{ $json.error || { message: "failed" } }}',
			description: 'What went wrong (an object with message, or text)',
		},
	]),
	async execute(deps, input) {
		const run = await failRun(
			deps.pool,
			await deps.definition(),
			{ run_id: input.run_id, error: input.error, call_key: deps.callKey ?? null },
			{ runProcessor: deps.runProcessor, origin: deps.origin },
		);
		const data = {
			run_id: run.id,
			status: run.status,
			warnings: run.warnings,
			...(run.processor_error ? { processor_error: run.processor_error } : {}),
		};
		return { data: 'replayed' in run ? { ...data, replayed: true } : data, output: 0 };
	},
};
