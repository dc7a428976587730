/**
 * Run → Archive (Archivist signal 2, seed 001): the LLM summary into lsm_storage and the run marked
 * archived, once, in one statement. Output: `{ run_id, lsm_id, next_run_id, warnings }` — the user's next
 * NEW run, which the blocking rule held back (send it to the Analyzer), or null.
 * When the definition declares `ARCHIVE` (COMPLETED → COMPLETED) with EXTERNAL processors (Calculation
 * Nodes), they run first with no connection or lock held (archiveRun below); `warnings` are their
 * ASYNC_NEW_TX failures (also in ops.errors; empty when none). A retry after a lost reply (archived with
 * this very summary and tags by this call: the same n8n instance, workflow, execution, node, run index and
 * item, migration 022) answers with the first `lsm_id` and `replayed: true` (200), `next_run_id` read
 * again, no processor run again.
 * A SYNC / ASYNC_SAME_TX processor failure is counted on the run (`processor_failures`): below Max
 * Processor Failures (input `max_processor_failures`, default 3, 0 = never) it is 400 WORKFLOW_FAILED /
 * NO_COMPUTE_MEMBER_FOR_TAG with `details.failures` / `details.limit`, nothing stored; at it the run is
 * archived anyway (201) with `processor_error: { code, message, failures }` and the failure in `warnings`
 * and recorded in ops.errors (severity error), so the user's next run is not held back for ever.
 * Errors: 404; 409 NOT_ARCHIVABLE (not COMPLETED, or archived already with another summary); 400; 422; 503.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { parseInput } from '../../../shared/contracts/input';
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { ContractError } from '../../../shared/errors';
import type { EngineResult, WorkflowDefinition } from '../../../shared/stateMachine';
import { abortError, runTransitionProcessors } from '../../../shared/stateMachine';
import { ARCHIVABLE_STATE, ARCHIVE, transitionFrom } from '../../engine/definition';
import {
	ARCHIVE_FAILED,
	ARCHIVE_REPLAY,
	ARCHIVE_RUN,
	ARCHIVE_STATE,
	READ_RUN,
} from '../../../shared/statements/pipelineRuns';
import {
	stepOptionsOf,
	failureRows,
	joinRows,
	MAX_PROCESSOR_FAILURES_FIELD,
	maxFailuresOf,
	recordWarnings,
	type StepOptions,
	warningRows,
} from './processorOutcome';
import { doneAnyway, notApplied, recordRows, type ProcessorError } from './processorError';
import { notFound, PIPELINE_INPUT, publicRun, query, RequiredText, RunId, type RunRow } from './runRow';

/** What Archive validates: the run (a UUID) and the summary (trimmed, not empty). */
const ArchiveInput = z.object({ run_id: RunId, summary: RequiredText });

/**
 * Archive (Archivist signal 2): stores the summary in lsm_storage and marks the run archived, once.
 * Processors (issue 26 item 2): with `definition` (the node passes the active one), a definition may declare `ARCHIVE` (COMPLETED → COMPLETED, manual); its
 * processors run first, with no transaction or row lock held, over the run as read (COMPLETED, not yet
 * archived, without its bookkeeping); then the one statement archives it, compare-and-set on what was read
 * (COMPLETED and not archived: a COMPLETED run changes only by being archived) and records the
 * ASYNC_NEW_TX warnings in ops.errors. A SYNC / ASYNC_SAME_TX failure is counted on the run
 * (ARCHIVE_FAILED, compare-and-set on the count read: concurrent failures over one read count once). Below
 * `maxProcessorFailures` (over the whole run, 0 = never) it refuses the archive: 400 WORKFLOW_FAILED /
 * NO_COMPUTE_MEMBER_FOR_TAG (details.warnings, details.failures, details.limit), nothing stored, the run
 * not archived (the Sweep re-emits it: the Archivist tries again). At it the run is archived anyway (the
 * user's later runs wait for this archive) with the failure in `processor_error` and `warnings` and an
 * ops.errors row (severity error) written by the archive statement.
 * A retry after a lost reply (the run archived already with this very summary and tags by this call's
 * `call_key`, stored as md5 in `archive_key`, migration 022; a keyless call matches only a keyless archive)
 * answers with the first call's `lsm_id` and `replayed: true`; `next_run_id` is read again (the user's
 * oldest NEW run now); no processor runs again.
 * @returns `{ run_id, lsm_id, next_run_id, warnings }` — the user's next NEW run (held back by the blocking
 *          rule), or null; `warnings` the ASYNC_NEW_TX failures (empty when none, and on a replay)
 * @throws 404; 409 NOT_ARCHIVABLE when the run is not COMPLETED or archived already (with another summary);
 *         400 WORKFLOW_FAILED / NO_COMPUTE_MEMBER_FOR_TAG (an ARCHIVE processor failed: nothing stored)
 */
export async function archiveRun(
	pool: Pool,
	input: { run_id: unknown; summary: unknown; tags?: unknown; call_key?: string | null },
	definition?: WorkflowDefinition,
	options: StepOptions = {},
): Promise<{
	run_id: string;
	lsm_id: number;
	next_run_id: string | null;
	warnings: string[];
	replayed?: true;
	processor_error?: ProcessorError;
}> {
	const { run_id: id, summary } = parseInput(ArchiveInput, input, PIPELINE_INPUT);
	const tags = Array.isArray(input.tags)
		? input.tags.map(String)
		: typeof input.tags === 'string' && input.tags
			? input.tags.split(',').map((t) => t.trim())
			: [];
	const key = typeof input.call_key === 'string' && input.call_key ? input.call_key : null;
	const declared = definition && transitionFrom(definition, ARCHIVABLE_STATE, ARCHIVE);
	const step = { id, transition: ARCHIVE };
	let warnings: string[] = [];
	let failure: ContractError | null = null;
	if (declared && declared.processors.length > 0) {
		const [current] = await query<RunRow>(pool, READ_RUN, [id], 'select');
		if (!current) throw notFound(id);
		// archived already or not archivable: answered below without running the processors
		if (current.status === ARCHIVABLE_STATE && current.archived_at === null) {
			const entity: Record<string, unknown> = publicRun(current);
			delete entity.capture_token;
			const processed = await runTransitionProcessors(current.status, declared, entity, options);
			warnings = processed.warnings;
			if (!processed.ok) {
				// counted (once per read: concurrent Archivists failing together count one failure); below
				// Max Processor Failures the archive is refused (the Sweep re-emits the run, the Archivist tries
				// again); at it the run is archived anyway, so a processor that never succeeds cannot hold the
				// user's later runs back for ever (the blocking rule waits for this archive)
				const max = maxFailuresOf(options);
				const [counted] = await query<{ failures: number }>(
					pool,
					ARCHIVE_FAILED,
					[id, current.processor_failures],
					'update',
				);
				const failures = counted ? counted.failures : null;
				if (failures === null || max === 0 || failures < max) {
					const error = await refused(pool, processed, step, options);
					Object.assign(error.details, { failures, limit: max });
					throw error;
				}
				failure = doneAnyway(processed, { run_id: id, transition: ARCHIVE, failures, limit: max });
			}
		}
	}
	const rowsOf = failure
		? joinRows(warningRows(warnings, step, options), failureRows(failure, options))
		: warningRows(warnings, step, options);
	const [row] = await query<{ lsm_id: string; id: string; next_run_id: string | null }>(
		pool,
		ARCHIVE_RUN,
		[id, summary, tags, rowsOf, key],
		'insert',
	);
	if (row) {
		const archived = { run_id: id, lsm_id: Number(row.lsm_id), next_run_id: row.next_run_id, warnings };
		if (!failure) return archived;
		const processorError: ProcessorError = {
			code: String(failure.details.code),
			message: failure.message,
			failures: Number(failure.details.failures),
		};
		return { ...archived, warnings: [...warnings, failure.message], processor_error: processorError };
	}
	await recordRows(pool, id, notApplied(rowsOf));
	const [again] = await query<{ lsm_id: string; next_run_id: string | null }>(
		pool,
		ARCHIVE_REPLAY,
		[id, summary, tags, key],
		'select',
	);
	// archived with this very summary and tags by this call's key: its retry after a lost reply
	if (again)
		return { run_id: id, lsm_id: Number(again.lsm_id), next_run_id: again.next_run_id, warnings: [], replayed: true };
	const [current] = await query<{ status: string; archived_at: string | null }>(pool, ARCHIVE_STATE, [id], 'select');
	if (!current) throw notFound(id);
	throw ContractError.conflict(
		`run ${id} cannot be archived (${current.status}${current.archived_at ? ', already archived' : ''})`,
		{ code: 'NOT_ARCHIVABLE', run_id: id, status: current.status },
		{ operation: 'insert', table: 'maas.lsm_storage' },
	);
}

/**
 * The 400 of a transition refused by a SYNC / ASYNC_SAME_TX processor failure (Fail, Archive): nothing
 * was written; the ASYNC_NEW_TX warnings before it are in `details.warnings` and recorded in ops.errors.
 */
async function refused(
	pool: Pick<Pool, 'query'>,
	result: EngineResult,
	step: { id: string; transition: string },
	options: StepOptions,
): Promise<ContractError> {
	const error = abortError(result, { run_id: step.id, transition: step.transition });
	if (result.warnings.length > 0) {
		Object.assign(error.details, { warnings: result.warnings });
		await recordWarnings(pool, result.warnings, step, options);
	}
	return error;
}

export const archiveOperation: PipelineOperation = {
	value: 'archive',
	name: 'Archive',
	action: 'Archive a completed pipeline run',
	description:
		"Store the run's summary in the long-term memory (LSM) and release the user's next run (after the ARCHIVE transition's processors, if the state machine declares it)",
	fields: fieldsOf({ resource: 'run', operation: 'archive' }, [
		{ displayName: 'Run ID', name: 'runId', required: true, description: 'The completed run' },
		{
			displayName: 'Summary',
			name: 'summary',
			required: true,
			typeOptions: { rows: 3 },
			description: "The Archivist's summary of the exchange",
		},
		{ displayName: 'Tags', name: 'tags', description: 'Comma-separated tags of the summary' },
		{
			...MAX_PROCESSOR_FAILURES_FIELD,
			description:
				"Failed ARCHIVE processor runs (SYNC / ASYNC_SAME_TX errors, timeouts, success: false, no calculation node), counted over the whole run, after which the run is archived anyway (the failure recorded) so the user's next run is not held back. 0 = never.",
		},
	]),
	async execute(deps, input) {
		const archived = await archiveRun(
			deps.pool,
			{ run_id: input.run_id, summary: input.summary, tags: input.tags, call_key: deps.callKey ?? null },
			await deps.definition(),
			stepOptionsOf(deps, input),
		);
		return { data: archived, output: 0, statusCode: archived.replayed ? 200 : 201 };
	},
};
