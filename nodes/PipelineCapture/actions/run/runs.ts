/**
 * The pipeline_runs operations (seed 001 steps 0–4, seed 004 state machine), as functions over a pg Pool.
 * Each state change is one statement; errors are ContractErrors (404 unknown run, 409 illegal
 * transition / lost capture, 422 invalid input, 503 database unreachable).
 */
import type { Pool } from 'pg';
import { publicRunError } from '../../../shared/envelopeBuilders';
import { isUuid } from '../../../shared/contracts/ids';
import { ContractError, fromPgError } from '../../../shared/errors';
import { unstorablePath } from '../../../shared/sanitize';
import type { EngineResult, WorkflowDefinition } from '../../../shared/stateMachine';
import { abortError, evaluate, fireManual, runTransitionProcessors } from '../../../shared/stateMachine';
import {
	ARCHIVABLE_STATE,
	ARCHIVE,
	edgeNamed,
	edgesOf,
	hasProcessors,
	nonTerminalStates,
	OWN_TRANSITIONS,
	transitionFrom,
	type Edge,
} from '../../engine/definition';
import {
	ARCHIVE_FAILED,
	ARCHIVE_REPLAY,
	ARCHIVE_RUN,
	ARCHIVE_STATE,
	CAPTURE,
	CAPTURE_PROCESSED,
	CLAIM_STUCK,
	completeStepSql,
	CONTEXT_ANALYSIS,
	CONTEXT_ARCHIVE,
	CONTEXT_ASSEMBLY,
	CONTEXT_RESPONSE,
	CREATE_RUN,
	FAIL_AFTER_ABORT,
	FAIL_READ_RUN,
	FAIL_RUN,
	GET_RUN,
	LOST_WAITING,
	PROCESSOR_FAILED,
	READ_FOR_FAIL,
	RELEASE_CAPTURE,
	RELEASE_READ_RUN,
	RELEASE_STUCK,
	READ_FOR_STEP,
	READ_RUN,
	RESULT_COLUMNS,
	STUCK_FOR_RELEASE,
} from './sql';
import { RECORD_WARNINGS } from '../../../shared/statements/errors';
import {
	countFailure,
	failureRows,
	joinRows,
	maxFailuresOf,
	recordWarnings,
	warningRows,
	type StepOptions,
} from './processorOutcome';

const RUNS = { table: 'maas.pipeline_runs' };

/**
 * How long after its capture (s) a Capture with the same call key, by the same worker, is recognised as the
 * retry of that capture (n8n's Retry On Fail waits at most 5 s between at most 5 tries); after it, the
 * same key is another call (a re-run, an id used again) and loses as TAKEN.
 */
export const CAPTURE_REPLAY_WINDOW_SECONDS = 300;

/** Columns of the retry bookkeeping (migrations 019, 022): never in an output, nor in what processors receive. */
const BOOKKEEPING = ['completed_steps', 'capture_key', 'capture_processed', 'fail_key', 'archive_key'] as const;

/** The run without its retry bookkeeping (BOOKKEEPING). */
function publicRun<T extends Record<string, unknown>>(row: T): T {
	const copy: Record<string, unknown> = { ...row };
	for (const column of BOOKKEEPING) delete copy[column];
	return copy as T;
}

/** A run row as the operations return it. */
export type RunRow = Record<string, unknown> & { id: string; status: string };

function runId(value: unknown): string {
	if (typeof value !== 'string' || !isUuid(value)) {
		throw ContractError.validation(
			'invalid input: run_id must be a UUID',
			{ code: 'VALIDATION', field: 'run_id' },
			{ operation: 'validate', ...RUNS },
		);
	}
	return value;
}

async function query<T extends Record<string, unknown>>(
	pool: Pick<Pool, 'query'>,
	sql: string,
	params: unknown[],
	operation: string,
): Promise<T[]> {
	try {
		return (await pool.query<T>(sql, params)).rows;
	} catch (error) {
		throw fromPgError(error, { operation, ...RUNS });
	}
}

function notFound(id: string): ContractError {
	return ContractError.notFound(
		`pipeline run ${id} does not exist`,
		{ code: 'NOT_FOUND', run_id: id },
		{ operation: 'update', ...RUNS },
	);
}

/** A user id (string or number, trimmed). @throws ContractError 422 when missing or empty */
function userIdOf(value: unknown): string {
	const userId = typeof value === 'string' || typeof value === 'number' ? String(value).trim() : '';
	if (!userId)
		throw ContractError.validation(
			'invalid input: user_id is required',
			{ code: 'VALIDATION', field: 'user_id' },
			{ operation: 'validate', ...RUNS },
		);
	return userId;
}

/** Create Run (step 0): `{ request_id, status: "processing", raw_log_id }`. */
export async function createRun(
	pool: Pool,
	input: { user_id: unknown; query: unknown; correlation_id?: string | null },
) {
	const userId = userIdOf(input.user_id);
	const text = typeof input.query === 'string' ? input.query.trim() : '';
	if (!text)
		throw ContractError.validation(
			'invalid input: query is required',
			{ code: 'VALIDATION', field: 'query' },
			{ operation: 'validate', ...RUNS },
		);
	const [row] = await query<{ id: string; raw_log_id: string }>(
		pool,
		CREATE_RUN,
		[userId, text, input.correlation_id ?? null],
		'insert',
	);
	return { request_id: row.id, status: 'processing', raw_log_id: Number(row.raw_log_id) };
}

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
	const id = runId(input.run_id);
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
 * makes this call a replay).
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
	const id = runId(input.run_id);
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
	if (typeof input.capture_token !== 'string' || !isUuid(input.capture_token)) {
		throw ContractError.validation(
			'invalid input: capture_token must be the UUID Capture returned',
			{ code: 'VALIDATION', field: 'capture_token' },
			{ operation: 'validate', ...RUNS },
		);
	}
	const token = input.capture_token;
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
	for (const [field, v] of [
		['result', input.result],
		['draft_context', draft],
	] as const) {
		const path = unstorablePath(v);
		if (path !== null) {
			throw ContractError.validation(
				`invalid input: ${field}${path} contains NUL or a lone surrogate, which PostgreSQL cannot store`,
				{ code: 'VALIDATION', field: `${field}${path}` },
				{ operation: 'validate', ...RUNS },
			);
		}
	}
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
	const step = { id, transition: edge.name };
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
		// a duplicate of this call (same token) wrote first: the step is done once, answered as its writer was
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

function previousOf(run: Record<string, unknown>): string | null {
	return typeof run.previous_transition === 'string' ? run.previous_transition : null;
}

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
	const id = runId(input.run_id);
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

/**
 * The ops.errors rows of a write that was refused (the run had moved on): a processor failure's row says
 * `applied: false` (its transition was not written by this call) and loses `run_status`.
 */
function notApplied(rows: string): string {
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
async function recordRows(pool: Pick<Pool, 'query'>, id: string, rows: string): Promise<void> {
	if (rows === '[]') return;
	await pool.query(RECORD_WARNINGS, [id, rows]).catch(() => undefined);
}

/**
 * The error of a SYNC / ASYNC_SAME_TX processor failure whose transition is written anyway (Fail always;
 * Archive at Max Processor Failures): code WORKFLOW_FAILED / NO_COMPUTE_MEMBER_FOR_TAG as abortError, a
 * message saying the transition happened.
 */
function doneAnyway(result: EngineResult, details: Record<string, unknown>): ContractError {
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

/**
 * Get Status (seed 001 step 4, polling): `{ request_id, status: "processing" }`,
 * `{ request_id, status: "completed", answer }` or `{ request_id, status: "failed", error }`; `error` is the
 * stored error's public message (publicRunError: a 4xx keeps its message, anything else a fixed text of its kind).
 * `user_id`: the caller; only that user's run is found. `null` reads any user's run (for callers that
 * are not a user, e.g. a maintenance workflow; the Get Status operation always passes its identity).
 * @throws 404 NOT_FOUND for an unknown run and, with the same message and details, for another
 *         user's run (ids cannot be probed); 422 run_id not a UUID, user_id missing
 */
export async function getStatus(pool: Pool, input: { run_id: unknown; user_id: unknown }) {
	const id = runId(input.run_id);
	const owner = input.user_id === null ? null : userIdOf(input.user_id);
	const [row] = await query<{ status: string; final_answer: string | null; error: Record<string, unknown> | null }>(
		pool,
		GET_RUN,
		[id, owner],
		'select',
	);
	if (!row)
		throw ContractError.notFound(
			`pipeline run ${id} does not exist`,
			{ code: 'NOT_FOUND', run_id: id },
			{ operation: 'select', ...RUNS },
		);
	if (row.status === 'COMPLETED') return { request_id: id, status: 'completed', answer: row.final_answer };
	if (row.status === 'FAILED')
		return {
			request_id: id,
			status: 'failed',
			error: publicRunError(row.error),
		};
	return { request_id: id, status: 'processing' };
}

/** A run the Sweep released (with `warnings` when its RELEASE has processors) or could not release. */
export interface SweptRun {
	id: string;
	status: string;
	/** ASYNC_NEW_TX failures of RELEASE's processors (also in ops.errors); only for RELEASEs with processors. */
	warnings?: string[];
	/** Set when a SYNC / ASYNC_SAME_TX processor of RELEASE failed: the run was not released. */
	error?: { code: string; message: string; failures: number | null };
}

/**
 * Sweep: releases runs stuck in an in-progress state (the target of a CAPTURE_*) for longer than
 * `stuck_after_seconds` back to their waiting state (RELEASE; the trigger notifies again), and re-emits
 * runs waiting longer than `lost_after_seconds` (their notification may have been lost).
 * RELEASEs without processors: one statement (FOR UPDATE SKIP LOCKED). A RELEASE with processors (issue 26
 * item 2): the stuck runs are read (no lock), then for each, one after another, it is claimed (CLAIM_STUCK:
 * `updated_at` moved to now on what was read, so an overlapping Sweep skips it and one stuck period runs
 * the processors once), its processors run over the run as released (waiting state, no capture token)
 * with nothing held, and one compare-and-set on the claim (status, capture token, `updated_at`) releases it and records the ASYNC_NEW_TX warnings in
 * ops.errors (a run completed, failed or released meanwhile is left alone and not listed). A SYNC /
 * ASYNC_SAME_TX failure refuses the release: the run stays in progress under its worker's token, the
 * failure is counted under the claim (PROCESSOR_FAILED; by id + status for a run without a capture token;
 * it also restarts its stuck clock: the next try is `stuck_after_seconds` later) and at Max Processor
 * Failures the run ends FAILED (PROCESSOR_FAILURES); unless the run was completed or failed meanwhile (not
 * listed, no error row), it is listed in `refused` with the error, which is also recorded as an ops.errors row (kind upstream, 400,
 * details.code WORKFLOW_FAILED / NO_COMPUTE_MEMBER_FOR_TAG, details.severity "error"), as are its
 * ASYNC_NEW_TX warnings.
 * @returns `{ released, refused, waiting }`: `released` and `refused` together at most `limit` rows,
 *          `waiting` at most `limit` rows
 */
export async function sweep(
	pool: Pool,
	definition: WorkflowDefinition,
	input: { stuck_after_seconds: number; lost_after_seconds: number; limit: number },
	options: StepOptions = {},
): Promise<{ released: SweptRun[]; refused: SweptRun[]; waiting: { id: string; status: string }[] }> {
	const captures = edgesOf(definition).filter((e) => e.name.startsWith('CAPTURE_'));
	const withProcessors = (c: Edge) => (transitionFrom(definition, c.to, 'RELEASE')?.processors.length ?? 0) > 0;
	const plain = captures.filter((c) => !withProcessors(c));
	const processed = captures.filter(withProcessors);
	const released: SweptRun[] =
		plain.length === 0
			? []
			: await query<{ id: string; status: string }>(
					pool,
					RELEASE_STUCK,
					[plain.map((c) => c.to), plain.map((c) => c.from), input.stuck_after_seconds, input.limit],
					'update',
				);
	const refused: SweptRun[] = [];
	const room = input.limit - released.length;
	if (processed.length > 0 && room > 0) {
		const stuck = await query<RunRow & { read_at: string }>(
			pool,
			STUCK_FOR_RELEASE,
			[processed.map((c) => c.to), input.stuck_after_seconds, room],
			'select',
		);
		for (const { read_at, ...run } of stuck) {
			const outcome = await releaseWithProcessors(pool, definition, run as RunRow, read_at, options);
			if (outcome?.error) refused.push(outcome);
			else if (outcome) released.push(outcome);
		}
	}
	const waiting = await query<{ id: string; status: string }>(
		pool,
		LOST_WAITING,
		[captures.map((c) => c.from), input.lost_after_seconds, input.limit],
		'select',
	);
	return { released, refused, waiting };
}

/**
 * One stuck run through RELEASE with its processors (see sweep): the released run, the refused one, or
 * null when the run changed meanwhile (not stuck any more: nothing written, not listed).
 */
async function releaseWithProcessors(
	pool: Pool,
	definition: WorkflowDefinition,
	run: RunRow,
	readAt: string,
	options: StepOptions,
): Promise<SweptRun | null> {
	const declared = transitionFrom(definition, run.status, 'RELEASE')!;
	const step = { id: run.id, transition: 'RELEASE' };
	const token = typeof run.capture_token === 'string' ? run.capture_token : null;
	// claimed before its processors run: an overlapping Sweep that read the same row skips it
	const [claim] = await query<{ read_at: string }>(pool, CLAIM_STUCK, [run.id, run.status, token, readAt], 'update');
	if (!claim) return null;
	const entity: Record<string, unknown> = {
		...publicRun(run),
		status: declared.next,
		previous_transition: 'RELEASE',
	};
	delete entity.capture_token; // a credential of the stuck worker: processors never see it
	const result = await runTransitionProcessors(run.status, declared, entity, options);
	if (!result.ok) {
		const error = abortError(result, { run_id: run.id, transition: 'RELEASE' });
		// counted on the run (by id + status when it has no token, id + status + token otherwise, and only
		// under this Sweep's claim); it keeps its worker's token (the worker may still complete it)
		const where = {
			...step,
			holding: run.status,
			token,
			backTo: null,
			restoreToken: token ?? undefined,
			readAt: claim.read_at,
			result,
			options,
		};
		const counted = await countFailure(pool, PROCESSOR_FAILED, where, error, async () => undefined);
		// the run was completed, failed or released meanwhile: nothing was refused (its warnings are recorded)
		if (counted.details.capture_lost === true) return null;
		// no error output carries it (the Sweep lists it on Done): recorded in ops.errors here, best effort
		await pool.query(RECORD_WARNINGS, [run.id, failureRows(counted, options)]).catch(() => undefined);
		return {
			id: run.id,
			status: typeof counted.details.run_status === 'string' ? counted.details.run_status : run.status,
			warnings: result.warnings,
			error: {
				code: String(counted.details.code),
				message: counted.message,
				failures: typeof counted.details.failures === 'number' ? counted.details.failures : null,
			},
		};
	}
	const rows = await query<{ id: string; status: string }>(
		pool,
		RELEASE_READ_RUN,
		[run.id, run.status, token, claim.read_at, declared.next, warningRows(result.warnings, step, options)],
		'update',
	);
	if (rows.length === 0) {
		await recordWarnings(pool, result.warnings, step, options);
		return null;
	}
	return { ...rows[0], warnings: result.warnings };
}

/** Seed 001 step 2.2: the assembled context must fit 8000 tokens (estimated as characters / 4). */
export const TOKEN_LIMIT = 8000;
const CHARS_PER_TOKEN = 4;

/**
 * The draft of seed 001 step 2.1: element 1 the query, element 2 the history (last 10 raw_logs, the
 * analysis, the LSM summaries), element 3 the Mentor prompt, element 4 the Assembler prompt, concatenated.
 * Over `tokenLimit`, element 2 is cut from its oldest end first, then the whole draft.
 */
export function buildDraft(
	parts: { query: string; history: string; mentor: string; assembler: string },
	tokenLimit = TOKEN_LIMIT,
) {
	const frame = (history: string) =>
		`## Element 1: query\n${parts.query}\n\n## Element 2: history\n${history}\n\n## Element 3: role\n${parts.mentor}\n\n## Element 4: assembler\n${parts.assembler}`;
	const maxChars = tokenLimit * CHARS_PER_TOKEN;
	let draft = frame(parts.history);
	let truncated = false;
	if (draft.length > maxChars) {
		truncated = true;
		const room = Math.max(0, maxChars - frame('').length);
		draft = frame(room > 0 ? parts.history.slice(parts.history.length - room) : '');
		if (draft.length > maxChars) draft = draft.slice(0, maxChars);
	}
	return { draft_context: draft, tokens: Math.ceil(draft.length / CHARS_PER_TOKEN), truncated };
}

export type Step = 'analysis' | 'assembly' | 'response' | 'archive';

/**
 * Load Step Context: what the step's model call needs (seed 001 steps 1–3 and the Archivist).
 * analysis → `{ user_query, prompt, lsm }` (lsm may be empty: the Analyzer continues without context);
 * assembly → `{ draft_context, tokens, truncated, assembler_prompt }`; response → `{ final_context_payload,
 * prompt }`; archive → `{ user_query, final_answer, prompt }`. Missing prompts are null.
 * @throws 404 unknown run; 422
 */
export async function loadStepContext(
	pool: Pool,
	input: { run_id: unknown; step: Step },
): Promise<Record<string, unknown>> {
	const id = runId(input.run_id);
	const sql = {
		analysis: CONTEXT_ANALYSIS,
		assembly: CONTEXT_ASSEMBLY,
		response: CONTEXT_RESPONSE,
		archive: CONTEXT_ARCHIVE,
	}[input.step];
	if (!sql)
		throw ContractError.validation(
			`invalid input: step must be analysis, assembly, response or archive`,
			{ code: 'VALIDATION', field: 'step' },
			{ operation: 'validate', ...RUNS },
		);
	const [row] = await query<Record<string, unknown>>(pool, sql, [id], 'select');
	if (!row)
		throw ContractError.notFound(
			`pipeline run ${id} does not exist`,
			{ code: 'NOT_FOUND', run_id: id },
			{ operation: 'select', ...RUNS },
		);
	if (input.step !== 'assembly') return { run_id: id, step: input.step, ...row };
	const history = [
		...(row.history as { message_type: string; content: string }[])
			.reverse()
			.map((h) => `[${h.message_type}] ${h.content}`),
		...(row.analysis_result ? [`[analysis] ${JSON.stringify(row.analysis_result)}`] : []),
		...(row.lsm as { summary: string; tags: string[] }[]).map((l) => `[memory ${l.tags.join(',')}] ${l.summary}`),
	].join('\n');
	const draft = buildDraft({
		query: String(row.user_query),
		history,
		mentor: String(row.mentor_prompt ?? ''),
		assembler: String(row.assembler_prompt ?? ''),
	});
	return {
		run_id: id,
		step: input.step,
		user_id: row.user_id,
		user_query: row.user_query,
		assembler_prompt: row.assembler_prompt ?? null,
		...draft,
	};
}

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
	const id = runId(input.run_id);
	const summary = typeof input.summary === 'string' ? input.summary.trim() : '';
	if (!summary)
		throw ContractError.validation(
			'invalid input: summary is required',
			{ code: 'VALIDATION', field: 'summary' },
			{ operation: 'validate', ...RUNS },
		);
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
