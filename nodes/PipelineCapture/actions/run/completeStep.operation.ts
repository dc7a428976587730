/**
 * Run → Complete Step: stores the step's result and moves the run to the next state in one statement,
 * only for the worker holding the capture token. ANALYSIS_DONE stores `analysis_result` (JSON),
 * ASSEMBLY_DONE `final_context_payload` (and `draft_context` when given), RESPONSE_DONE `final_answer`.
 * Input: `run_id`, `transition`, `capture_token`, `result`, `draft_context`, `max_processor_failures`.
 * The transition's EXTERNAL processors (Calculation Nodes) and the automated cascade run first, with no
 * connection or lock held; then one compare-and-set write (completeStep below). All or nothing.
 * Output: `{ run_id, status, warnings }` (status FAILED when the cascade hit a limit; `warnings` the
 * ASYNC_NEW_TX failures, also in ops.errors). A retry with a token whose step committed already (its reply
 * was lost) answers on output 0 with `replayed: true`, the run's status as it is now and no warnings
 * (docs/retry-safety.md). Errors: 404; 409 ILLEGAL_TRANSITION (run released, failed
 * or completed meanwhile, also while the processors ran; legal transitions listed), 409
 * CRITERION_NOT_MET; 400 WORKFLOW_FAILED / NO_COMPUTE_MEMBER_FOR_TAG (a processor failed or has no
 * sub-workflow: nothing applied, the run stays captured until Max Processor Failures, then FAILED;
 * details.failures, details.run_status); 422; 503.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { parseInput } from '../../../shared/contracts/input';
import { fieldsOf, fromBodyValue } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { isUuid } from '../../../shared/contracts/ids';
import { ContractError } from '../../../shared/errors';
import { unstorablePath } from '../../../shared/sanitize';
import type { EngineResult, WorkflowDefinition } from '../../../shared/stateMachine';
import { abortError, fireManual } from '../../../shared/stateMachine';
import { edgeNamed, edgesOf, OWN_TRANSITIONS, type Edge } from '../../engine/definition';
import {
	completeStepSql,
	FAIL_AFTER_ABORT,
	PROCESSOR_FAILED,
	READ_FOR_STEP,
	RESULT_COLUMNS,
} from '../../../shared/statements/pipelineRuns';
import {
	countFailure,
	stepOptionsOf,
	MAX_PROCESSOR_FAILURES_FIELD,
	recordWarnings,
	type StepOptions,
	warningRows,
} from './processorOutcome';
import { BOOKKEEPING, notFound, PIPELINE_INPUT, publicRun, query, RUNS, RunInput, type RunRow } from './runRow';

/** The capture token Complete Step must hold: the UUID Capture returned. */
const TokenInput = z.object({
	capture_token: z.custom<string>(isUuid, 'must be the UUID Capture returned'),
});

/**
 * What Complete Step writes (`result`, and `draft_context` as text or null) must be storable by PostgreSQL:
 * the first string or key holding NUL or a lone surrogate (result first) is named with its path
 * (unstorablePath: `result.answer[2]`), as one field.
 */
const StorableInput = z
	.object({ result: z.unknown(), draft_context: z.string().nullable() })
	.superRefine((input, ctx) => {
		for (const field of ['result', 'draft_context'] as const) {
			const path = unstorablePath(input[field]);
			if (path !== null) {
				ctx.addIssue({
					code: z.ZodIssueCode.custom,
					path: [`${field}${path}`],
					message: 'contains NUL or a lone surrogate, which PostgreSQL cannot store',
				});
				return;
			}
		}
	});

/**
 * Complete Step: stores the step's result (analysis_result / final_context_payload / final_answer, by
 * the target state) and moves the run on, only for the holder of the capture token. Seed 004 order, with
 * the processors before the write (issue 26 item 2): (1) read the run (no lock, nothing written): a token
 * whose step already committed is answered at once with the run as it is now and `replayed: true` (a
 * retry after a lost reply; migration 019's `completed_steps`); a run not in `edge.from` under this token
 * is refused with 409; (2) the engine fires the step's transition and the automated cascade over the run
 * as it will be written, running their processors (sub-workflows) with no connection or lock held;
 * (3) one statement writes the result and the final state, compare-and-set on status + capture token,
 * appends the token's digest to `completed_steps` and records the ASYNC_NEW_TX warnings in ops.errors
 * (a run released, failed or re-captured meanwhile is refused with 409 and nothing is written; the
 * processors' effects outside the run are not undone; a duplicate with the same token that wrote first
 * makes this call a replay). A plain step (isPlainStep: no criterion, no processor, no cascade, as every
 * step of the shipped definition) skips (1) and (2): the write of (3) alone answers the same (404, replay,
 * 409 lost capture), one statement instead of two.
 * All or nothing: a SYNC / ASYNC_SAME_TX processor failure writes nothing of the step (the run stays in
 * its in-progress state under the worker's capture token: retry Complete Step, or Fail) and answers 400 WORKFLOW_FAILED /
 * NO_COMPUTE_MEMBER_FOR_TAG; it is counted, and the run ends FAILED (error.code PROCESSOR_FAILURES) at its
 * `maxProcessorFailures`th failure (details.failures, details.run_status say so). A cascade limit ends the
 * run FAILED from that in-progress state with `error.code` CASCADE_LIMIT and the reason (a retry would
 * loop again), and returns it.
 * @returns the run as written, with `warnings` (ASYNC_NEW_TX failure reasons; empty when none); a replay
 *          adds `replayed: true` (the run as it is now, `warnings` empty)
 * @throws 404; 409 ILLEGAL_TRANSITION (listing the transitions legal from the run's current state) when
 *         the run is no longer where this worker captured it (released, failed, or completed); 409
 *         CRITERION_NOT_MET; 400 WORKFLOW_FAILED / NO_COMPUTE_MEMBER_FOR_TAG
 */
export async function completeStep(
	pool: Pool,
	definition: WorkflowDefinition,
	input: { run_id: unknown; transition: string; capture_token: unknown; result: unknown; draft_context?: unknown },
	options: StepOptions = {},
): Promise<RunRow & { warnings: string[] }> {
	const { run_id: id } = parseInput(RunInput, input, PIPELINE_INPUT);
	const edge = edgeNamed(definition, input.transition);
	const column = OWN_TRANSITIONS.includes(edge.name)
		? undefined
		: RESULT_COLUMNS[edge.to as keyof typeof RESULT_COLUMNS];
	if (!column) {
		throw ContractError.conflict(
			`transition ${edge.name} is not a step completion (${edge.to} has no result column)`,
			{
				code: 'ILLEGAL_TRANSITION',
				transition: edge.name,
				legal: edgesOf(definition)
					.filter((e) => e.to in RESULT_COLUMNS)
					.map((e) => e.name),
			},
			{ operation: 'update', ...RUNS },
		);
	}
	const { capture_token: token } = parseInput(TokenInput, input, PIPELINE_INPUT);
	const value =
		column === 'analysis_result'
			? JSON.stringify(input.result ?? null)
			: input.result === null || input.result === undefined
				? null
				: typeof input.result === 'string'
					? input.result
					: JSON.stringify(input.result);
	const draft = input.draft_context === undefined || input.draft_context === null ? null : String(input.draft_context);
	// refused before any processor runs: a value PostgreSQL refuses would fail the final write after them
	parseInput(StorableInput, { result: input.result, draft_context: draft }, PIPELINE_INPUT);
	const step = { id, transition: edge.name };
	// nothing for the engine to do (no criterion, no processor, no cascade): the compare-and-set write alone
	// decides, as the read below would have (404, replay, 409 lost capture), in one statement (issue 29 P7)
	if (isPlainStep(definition, edge))
		return await writeStep(pool, definition, column, edge, step, token, value, draft, options);
	const [read] = await query<RunRow & { done: boolean }>(pool, READ_FOR_STEP, [id, token], 'select');
	if (!read) throw notFound(id);
	const { done, ...current } = read;
	// this token's step committed already (a retry after a lost reply): the first call's answer, replayed
	if (done) return replayed(current as RunRow);
	if (current.status !== edge.from || current.capture_token !== token)
		throw lostCapture(definition, id, current as RunRow, edge);
	// the entity criteria and processors see: the run as this step writes it (result stored, `status` the
	// step's target, capture token cleared); the engine's lifecycle state is tracked apart. Nothing is
	// held while the processors run: the write below is a compare-and-set on the capture token.
	const entity: Record<string, unknown> = {
		...current,
		status: edge.to,
		previous_transition: edge.name,
		[column]: column === 'analysis_result' ? (JSON.parse(value as string) as unknown) : value,
		draft_context: draft ?? current.draft_context ?? null,
		capture_token: null,
	};
	for (const column of BOOKKEEPING) delete entity[column];
	// refused before anything ran (CRITERION_NOT_MET…): nothing was written, the worker keeps its capture
	const result: EngineResult = await fireManual(
		definition,
		edge.from,
		edge.name,
		entity,
		{ previousTransition: previousOf(current) },
		options,
	);
	if (!result.ok) {
		if (result.code === 'CASCADE_LIMIT') {
			// the pipeline cannot retry a deterministic loop: FAILED from the state before the step
			const failure = JSON.stringify({
				message: result.reason,
				code: 'CASCADE_LIMIT',
				stopped_at: result.stoppedAt,
				attempted: result.attempted,
			});
			const [failed] = await query<RunRow>(pool, FAIL_AFTER_ABORT, [id, edge.from, token, failure], 'update');
			if (failed) {
				await recordWarnings(pool, result.warnings, step, options);
				return { ...publicRun(failed), warnings: result.warnings };
			}
		}
		const where = { ...step, holding: edge.from, token, backTo: null, restoreToken: token, result, options };
		throw await countFailure(pool, PROCESSOR_FAILED, where, abortError(result, { run_id: id }), async () => undefined);
	}
	return await writeStep(pool, definition, column, edge, step, token, value, draft, options, result);
}

/**
 * Whether firing `edge` is nothing but the move itself: its transition has no criterion and no processors,
 * and its target has no enabled automated transition (no cascade). Then fireManual would answer `edge.to`,
 * `[edge.name]`, no warnings, whatever the run holds, and Complete Step needs no read before its write.
 */
export function isPlainStep(definition: WorkflowDefinition, edge: Edge): boolean {
	const declared = definition.states[edge.from]?.transitions.find(
		(t) => t.name === edge.name && t.manual && !t.disabled,
	);
	return (
		declared !== undefined &&
		!declared.criterion &&
		declared.processors.length === 0 &&
		!(definition.states[edge.to]?.transitions ?? []).some((t) => !t.manual && !t.disabled)
	);
}

/**
 * Complete Step's one write (completeStepSql): the result and the final state (`result`: the engine's; none:
 * a plain step, edge.to by edge.name), compare-and-set on status + capture token. A run not written is a
 * replay when this token's step committed already (a duplicate wrote first, or the first call's reply was
 * lost), else 409 lost capture; no row at all is 404.
 */
async function writeStep(
	pool: Pool,
	definition: WorkflowDefinition,
	column: (typeof RESULT_COLUMNS)[keyof typeof RESULT_COLUMNS],
	edge: Edge,
	step: { id: string; transition: string },
	token: string,
	value: string | null,
	draft: string | null,
	options: StepOptions,
	result: { state: string; fired: string[]; warnings: string[] } = { state: edge.to, fired: [edge.name], warnings: [] },
): Promise<RunRow & { warnings: string[] }> {
	const { id } = step;
	const last = result.fired[result.fired.length - 1];
	const rows = await query<RunRow & { moved: boolean; done: boolean }>(
		pool,
		completeStepSql(column),
		[id, edge.from, result.state, last, token, value, draft, warningRows(result.warnings, step, options)],
		'update',
	);
	if (rows.length === 0) throw notFound(id);
	const { moved, done: doneMeanwhile, ...run } = rows[0];
	if (!moved) {
		// this token's step committed already (a retry after a lost reply, or a duplicate that wrote first):
		// the step is done once, answered as its writer was
		if (doneMeanwhile) return replayed(run as RunRow);
		throw lostCapture(definition, id, run as RunRow, edge);
	}
	return { ...publicRun(run as RunRow), warnings: result.warnings };
}

/**
 * The answer to a Complete Step whose token's step committed already (a retry after a lost reply, or a
 * duplicate): the run as it is now, `replayed: true`, and no warnings (the first call recorded them in
 * ops.errors). Nothing is written and no processor runs.
 */
function replayed(run: RunRow): RunRow & { warnings: string[]; replayed: true } {
	return { ...publicRun(run), warnings: [], replayed: true };
}

/** 409 ILLEGAL_TRANSITION: the run is not (or no longer) in `edge.from` under this worker's capture. */
function lostCapture(definition: WorkflowDefinition, id: string, run: RunRow, edge: Edge): ContractError {
	const legal = edgesOf(definition)
		.filter((e) => e.from === run.status)
		.map((e) => e.name);
	const why =
		run.status === edge.from && run.capture_token
			? `run ${id} is ${edge.from} under another capture token (a Complete Step with this token is running, or the run was released and captured again)`
			: `run ${id} is ${String(run.status)}, not ${edge.from} under this capture`;
	return ContractError.conflict(
		`${why}: ${edge.name} refused (legal now: ${legal.join(', ') || 'none'})`,
		{ code: 'ILLEGAL_TRANSITION', run_id: id, status: run.status, transition: edge.name, legal },
		{ operation: 'update', ...RUNS },
	);
}

function previousOf(run: Record<string, unknown>): string | null {
	return typeof run.previous_transition === 'string' ? run.previous_transition : null;
}

export const completeStepOperation: PipelineOperation = {
	value: 'completeStep',
	name: 'Complete Step',
	action: 'Complete a pipeline step',
	description: "Store the step's result and move the run on (holder of the capture only)",
	fields: fieldsOf({ resource: 'run', operation: 'completeStep' }, [
		{ displayName: 'Run ID', name: 'runId', required: true, description: 'The captured run' },
		{
			displayName: 'Transition',
			name: 'transition',
			type: 'options',
			options: [
				{ name: 'ANALYSIS_DONE (ANALYZING → ANALYZED, Stores Analysis_result)', value: 'ANALYSIS_DONE' },
				{ name: 'ASSEMBLY_DONE (ASSEMBLING → READY, Stores Final_context_payload)', value: 'ASSEMBLY_DONE' },
				{ name: 'RESPONSE_DONE (RESPONDING → COMPLETED, Stores Final_answer)', value: 'RESPONSE_DONE' },
			],
			default: 'ANALYSIS_DONE',
			description: 'The completion transition of the step',
		},
		{
			displayName: 'Capture Token',
			name: 'captureToken',
			required: true,
			description: 'The capture_token Capture returned',
		},
		{
			displayName: 'Result',
			name: 'result',
			required: true,
			description: "The step's result: an object for the analysis, text for the others",
		},
		{
			displayName: 'Draft Context',
			name: 'draftContext',
			description: "The assembler's draft (ASSEMBLY_DONE only; kept when empty)",
		},
		MAX_PROCESSOR_FAILURES_FIELD,
	]),
	// Draft Context's default (fromBody), as n8n would evaluate it: M11 and M13 keep it (issue 29 P7)
	directDefaults: { draftContext: fromBodyValue('draft_context') },
	async execute(deps, input) {
		const run = await completeStep(
			deps.pool,
			await deps.definition(),
			{
				run_id: input.run_id,
				transition: String(input.transition),
				capture_token: input.capture_token,
				result: input.result,
				draft_context: input.draft_context,
			},
			stepOptionsOf(deps, input),
		);
		const data = { run_id: run.id, status: run.status, warnings: run.warnings };
		return { data: 'replayed' in run ? { ...data, replayed: true } : data, output: 0 };
	},
};
