/**
 * Run → Capture (seed 001 "idempotent capture"): moves the run along a CAPTURE_* transition of the
 * state machine when it is in that transition's source state. Exactly one of concurrent callers wins.
 * Input: `run_id`, `transition` (CAPTURE_ANALYSIS | CAPTURE_ASSEMBLY | CAPTURE_RESPONSE).
 * Output 0 "Done": `{ captured: true, run_id, status, capture_token, run }` — pass capture_token to
 * Complete Step. Output 1 "Not Captured": `{ captured: false, run_id, status, transition, reason }` — not an
 * error: `reason: "TAKEN"` (another worker was first; `status` is the state that won, e.g. ANALYZING, read
 * after the winner committed) or `"BLOCKED"` (seed 001 blocking rule: an older run of the user is not archived
 * yet; `status` is still the source state, NEW).
 * The transition's EXTERNAL processors run for the winner (Calculation Nodes) after the capture committed,
 * with no connection or lock held; a SYNC / ASYNC_SAME_TX failure gives the run back (RELEASE, compare-and-set
 * on the capture token) or, at Max Processor Failures, ends it FAILED. `warnings` (output 0): the
 * ASYNC_NEW_TX failures, also recorded in ops.errors.
 * A retry after a lost reply finds this worker's own capture and answers output 0 again, with the same
 * capture_token and `replayed: true` (docs/retry-safety.md).
 * Errors: 404 unknown run; 409 ILLEGAL_TRANSITION (legal ones listed); 400 WORKFLOW_FAILED /
 * NO_COMPUTE_MEMBER_FOR_TAG (a processor); 422; 503.
 */
import type { Pool } from 'pg';
import { parseInput } from '../../../shared/contracts/input';
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { ContractError } from '../../../shared/errors';
import type { WorkflowDefinition } from '../../../shared/stateMachine';
import { abortError, evaluate, runTransitionProcessors } from '../../../shared/stateMachine';
import { edgeNamed, edgesOf, OWN_TRANSITIONS, type Edge } from '../../engine/definition';
import {
	CAPTURE,
	CAPTURE_PROCESSED,
	PROCESSOR_FAILED,
	READ_RUN,
	RELEASE_CAPTURE,
} from '../../../shared/statements/pipelineRuns';
import {
	countFailure,
	stepOptionsOf,
	MAX_PROCESSOR_FAILURES_FIELD,
	recordWarnings,
	type StepOptions,
	warningRows,
} from './processorOutcome';
import { notFound, PIPELINE_INPUT, publicRun, query, RUNS, RunInput, type RunRow } from './runRow';

/**
 * How long after its capture (s) a Capture with the same call key, by the same worker, is recognised as the
 * retry of that capture (n8n's Retry On Fail waits at most 5 s between at most 5 tries); after it, the
 * same key is another call (a re-run, an id used again) and loses as TAKEN.
 */
export const CAPTURE_REPLAY_WINDOW_SECONDS = 300;

export interface CaptureResult {
	captured: boolean;
	/**
	 * Why a capture lost: another worker took it (TAKEN; `run.status` is the state it took the run to, or
	 * wherever the run is now), or an older run of the user is not archived yet (BLOCKED; `run.status` is
	 * still the transition's source state). Null for the winner.
	 */
	reason: 'TAKEN' | 'BLOCKED' | null;
	/** The winner's run (with its capture token); for a loser the run as committed after the winner. */
	run: RunRow;
	transition: Edge;
	/** ASYNC_NEW_TX processor failures (also recorded in ops.errors); empty when none. */
	warnings: string[];
	/**
	 * True when this call found its own earlier capture (same `capture_key`, the run in the transition's
	 * target under a capture token: the first call's reply was lost) and answered as that call would have.
	 */
	replayed?: true;
}

/**
 * Capture: moves the run along `transition` (a CAPTURE_* of the definition) when it is in that
 * transition's source state. `captured: false` with the run as it is now (the state the winner took it
 * to, never the stale source state) and the `reason` when another worker was first or the run is blocked.
 * The transition's processors run for the winner only, after the capture committed and outside any
 * transaction (no connection or row lock is held while a sub-workflow runs). A SYNC / ASYNC_SAME_TX failure
 * gives the run back: RELEASE to the source state under a compare-and-set on the winner's capture token
 * (so the trigger notifies again and a worker retries), or FAILED at the run's `maxProcessorFailures`th
 * failure; the caller gets 400 with `details.failures` and `details.run_status`. ASYNC_NEW_TX failures are
 * recorded as ops.errors warnings and returned in `warnings`.
 * Retry after a lost reply (issue 26): `capture_key` names the call, identically on its retries (the node:
 * n8n instance, workflow, execution, node name, run index, item index) and is stored with the capture
 * (migration 019). A call that finds the run in `edge.to` by `edge.name`, still under a capture token,
 * captured by this worker with its own key less than CAPTURE_REPLAY_WINDOW_SECONDS ago, is a retry of a
 * capture that committed: it answers `captured: true` with that token and `replayed: true`, and runs the
 * processors only when that capture did not mark them done (`capture_processed`). No key (null): no replay
 * (a retry loses as TAKEN and the Sweep releases the run after stuck_after_seconds).
 * @throws 404 unknown run; 409 ILLEGAL_TRANSITION (not in the definition, legal ones listed) or
 *         CRITERION_NOT_MET; 400 WORKFLOW_FAILED / NO_COMPUTE_MEMBER_FOR_TAG
 */
export async function capture(
	pool: Pool,
	definition: WorkflowDefinition,
	input: { run_id: unknown; transition: string; worker: string; capture_key?: string | null },
	options: StepOptions = {},
): Promise<CaptureResult> {
	const { run_id: id } = parseInput(RunInput, input, PIPELINE_INPUT);
	const edge = edgeNamed(definition, input.transition);
	if (OWN_TRANSITIONS.includes(edge.name)) throw ownTransition(definition, edge, 'CAPTURE_');
	const declared = definition.states[edge.from].transitions.find((t) => t.name === edge.name)!;
	if (declared.criterion) {
		const [current] = await query<RunRow>(pool, READ_RUN, [id], 'select');
		if (!current) throw notFound(id);
		if (
			current.status === edge.from &&
			!evaluate(declared.criterion, current, {
				state: current.status,
				previousTransition: (current.previous_transition as string) ?? null,
			})
		) {
			throw ContractError.conflict(
				`transition ${edge.name} is not allowed for run ${id}: its criterion does not match`,
				{ code: 'CRITERION_NOT_MET', run_id: id, transition: edge.name },
				{ operation: 'update', ...RUNS },
			);
		}
	}
	// The first step of a run waits for the user's previous run to be archived (seed 001 blocking rule).
	const blocking = edge.from === definition.initialState;
	const key = typeof input.capture_key === 'string' && input.capture_key ? input.capture_key : null;
	const rows = await query<RunRow & { captured: boolean; fresh: boolean }>(
		pool,
		CAPTURE,
		[id, edge.from, edge.to, edge.name, input.worker, blocking, key, CAPTURE_REPLAY_WINDOW_SECONDS],
		'update',
	);
	if (rows.length === 0) throw notFound(id);
	const { captured, fresh, ...first } = rows[0];
	// a loser whose snapshot still shows the source state reads the run again: this statement starts after
	// the winner committed (the UPDATE waited for it), so it is in the source state only when the blocking
	// rule refused the capture (or the winner's capture was given back since)
	let run = first;
	if (!captured && first.status === edge.from) {
		const [now] = await query<RunRow>(pool, READ_RUN, [id], 'select');
		if (now) run = now;
	}
	// a retry of this caller's own capture whose reply was lost: the run is where that capture took it,
	// still under its token, captured by this worker with this key less than the replay window ago:
	// answered as the first call would have been, with `replayed: true`
	const replay =
		!captured &&
		key !== null &&
		fresh &&
		run === first &&
		run.capture_key === key &&
		run.captured_by === input.worker &&
		run.status === edge.to &&
		run.previous_transition === edge.name &&
		typeof run.capture_token === 'string';
	const won = captured || replay;
	const reason = won ? null : blocking && run.status === edge.from ? 'BLOCKED' : 'TAKEN';
	const result: CaptureResult = {
		captured: won,
		reason,
		run: publicRun(run as RunRow),
		transition: edge,
		warnings: [],
		...(replay ? { replayed: true } : {}),
	};
	if (!won || declared.processors.length === 0) return result;
	// a replay of a capture whose processors succeeded already (its reply was lost after them): not again
	if (replay && run.capture_processed === true) return result;
	// the processors see the run as captured, without the capture token (a credential of the worker)
	const { capture_token, ...entity } = publicRun(run);
	const processed = await runTransitionProcessors(edge.from, declared, entity, options);
	if (!processed.ok) {
		const token = String(capture_token);
		const where = { id, transition: edge.name, holding: edge.to, token, backTo: edge.from, result: processed, options };
		// when even the count cannot be written, the capture is released (same compare-and-set, no count)
		const release = () => pool.query(RELEASE_CAPTURE, [id, edge.to, token, edge.from]);
		throw await countFailure(pool, PROCESSOR_FAILED, where, abortError(processed, { run_id: id }), release);
	}
	// the processors succeeded: marked on the capture (a replay skips them) with the warnings, in one
	// statement; after the capture committed, a failure here must not cost the winner its capture token
	const rowsOfWarnings = warningRows(processed.warnings, { id, transition: edge.name }, options);
	try {
		await pool.query(CAPTURE_PROCESSED, [id, edge.to, String(capture_token), rowsOfWarnings]);
	} catch {
		await recordWarnings(pool, processed.warnings, { id, transition: edge.name }, options);
	}
	return { ...result, warnings: processed.warnings };
}

/**
 * 409 ILLEGAL_TRANSITION: `edge` is fired by its own operation (FAIL by Fail, RELEASE by the Sweep, ARCHIVE
 * by Archive), not by Capture / Complete Step; `legal` lists that operation's transitions (by `prefix`).
 */
function ownTransition(definition: WorkflowDefinition, edge: Edge, prefix: string): ContractError {
	const legal = [...new Set(edgesOf(definition).map((e) => e.name))].filter((n) => n.startsWith(prefix));
	return ContractError.conflict(
		`transition ${edge.name} is fired by its own operation (FAIL: Fail, RELEASE: Sweep, ARCHIVE: Archive), not here (legal: ${legal.join(', ')})`,
		{ code: 'ILLEGAL_TRANSITION', transition: edge.name, legal },
		{ operation: 'update', ...RUNS },
	);
}

export const captureOperation: PipelineOperation = {
	value: 'capture',
	name: 'Capture',
	action: 'Capture a pipeline run',
	description: 'Take a waiting run for this worker (exactly one worker wins)',
	outputs: ['Done', 'Not Captured'],
	fields: fieldsOf({ resource: 'run', operation: 'capture' }, [
		{
			displayName: 'Run ID',
			name: 'runId',
			required: true,
			default: '={{ $json.id || $json.run_id || $json.request_id }}',
			description: 'The pipeline run (request_id)',
		},
		{
			displayName: 'Transition',
			name: 'transition',
			type: 'options',
			options: [
				{ name: 'CAPTURE_ANALYSIS (NEW → ANALYZING)', value: 'CAPTURE_ANALYSIS' },
				{ name: 'CAPTURE_ASSEMBLY (ANALYZED → ASSEMBLING)', value: 'CAPTURE_ASSEMBLY' },
				{ name: 'CAPTURE_RESPONSE (READY → RESPONDING)', value: 'CAPTURE_RESPONSE' },
			],
			default: 'CAPTURE_ANALYSIS',
			description: 'The capture transition of the state machine to take',
		},
		MAX_PROCESSOR_FAILURES_FIELD,
	]),
	async execute(deps, input) {
		const result = await capture(
			deps.pool,
			await deps.definition(),
			{
				run_id: input.run_id,
				transition: String(input.transition),
				worker: deps.worker,
				capture_key: deps.callKey ?? null,
			},
			stepOptionsOf(deps, input),
		);
		const base = {
			captured: result.captured,
			run_id: result.run.id,
			status: result.run.status,
			transition: result.transition.name,
		};
		return result.captured
			? {
					data: {
						...base,
						capture_token: result.run.capture_token,
						run: result.run,
						warnings: result.warnings,
						...(result.replayed ? { replayed: true } : {}),
					},
					output: 0,
				}
			: { data: { ...base, reason: result.reason }, output: 1 };
	},
};
