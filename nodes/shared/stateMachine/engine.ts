/**
 * The state-machine engine of seed 004, over a WorkflowDefinition:
 *  - `fireManual`: a named manual transition of the current state (404 TRANSITION_NOT_FOUND with the
 *    transitions available, 409 TRANSITION_DISABLED, 409 CRITERION_NOT_MET), then the cascade;
 *  - `cascade`: repeatedly fires the first automated, enabled transition (declaration order) whose
 *    criterion matches, until none does. Limits: a state visited an 11th time, or a 100th automated
 *    transition in one operation, abort it. The starting state counts as a visit.
 *  - processors run in declaration order through the caller's `runProcessor` (see ./processors.ts for
 *    the EXTERNAL dispatcher). SYNC / ASYNC_SAME_TX (and any other mode, the seed's default branch): a
 *    failure aborts, code WORKFLOW_FAILED (or NO_COMPUTE_MEMBER_FOR_TAG when no calculation node
 *    matched); entity changes they return replace the entity the next criteria and processors see
 *    (`result.entity`). ASYNC_NEW_TX: a failure is a warning, the transition completes; the entity
 *    changes it returns are discarded.
 *  - All or nothing (seed 004: the engine runs inside the entity's write transaction): an aborted
 *    operation (limit or processor) reports `ok: false` with `state` = the state BEFORE the operation
 *    (the source state of the manual transition, or the cascade's starting state), `fired: []`, the
 *    entity as given, and the diagnosis in `reason`, `code`, `stoppedAt` (where it stopped) and
 *    `attempted` (the transitions it had fired before the abort, none of which took effect).
 */
import { ContractError } from '../errors';
import { isRecord } from '../json';
import { replaceUnstorable } from '../sanitize';
import { evaluate, type EntityMeta } from './criteria';
import type { ProcessorDefinition, TransitionDefinition, WorkflowDefinition } from './schema';

export const MAX_STATE_VISITS = 10;
export const MAX_CASCADE_DEPTH = 100;

/** What a processor answered: `success: false` fails it; `entity` is the entity as it changed it. */
export interface ProcessorOutcome {
	success: boolean;
	entity?: unknown;
	/** Why it failed (no secrets: it ends in the run's error). */
	error?: string;
}

export interface EngineOptions {
	maxStateVisits?: number;
	maxCascadeDepth?: number;
	/**
	 * Runs a processor of a fired transition against the current entity. Throw, resolve false or
	 * `{ success: false }` to fail it; a thrown ContractError with details.code NO_COMPUTE_MEMBER_FOR_TAG
	 * keeps that code. Without a runner, a transition that has processors aborts the operation
	 * (NO_COMPUTE_MEMBER_FOR_TAG): processors are never silently skipped.
	 */
	runProcessor?: (
		processor: ProcessorDefinition,
		transition: TransitionDefinition,
		entity: unknown,
	) => Promise<boolean | void | ProcessorOutcome>;
}

/** Why an operation aborted. */
export type AbortCode = 'CASCADE_LIMIT' | 'WORKFLOW_FAILED' | 'NO_COMPUTE_MEMBER_FOR_TAG';

export interface EngineResult {
	ok: boolean;
	/** The state the entity ends in; on an abort the state before the operation (nothing took effect). */
	state: string;
	/** Names of the transitions fired, in order (none on an abort). */
	fired: string[];
	/** Why the operation aborted (limits, processor failure); absent when ok. */
	reason?: string;
	code?: AbortCode;
	/** On an abort: the state the engine was in when it stopped, and the transitions it had fired. */
	stoppedAt?: string;
	attempted?: string[];
	/** Non-fatal ASYNC_NEW_TX processor failures. */
	warnings: string[];
	/** The entity after the SYNC / ASYNC_SAME_TX processors' changes (as given on an abort). */
	entity: unknown;
}

/** The transitions a client may fire from `state` (manual, enabled, criterion matching). */
export function availableTransitions(
	definition: WorkflowDefinition,
	state: string,
	entity: unknown,
	meta: Omit<EntityMeta, 'state'> = {},
): string[] {
	return (definition.states[state]?.transitions ?? [])
		.filter((t) => t.manual && !t.disabled && evaluate(t.criterion, entity, { ...meta, state }))
		.map((t) => t.name);
}

interface Failure {
	reason: string;
	code: AbortCode;
}

function isOutcome(value: unknown): value is ProcessorOutcome {
	return isRecord(value) && typeof value.success === 'boolean';
}

/** Longest failure reason kept (UTF-16 units): it is stored in the run's error and in ops.errors. */
export const MAX_REASON_LENGTH = 1000;

/** `reason` with NUL and lone surrogates replaced (PostgreSQL text and jsonb refuse them), cut to MAX_REASON_LENGTH. */
function storableReason(reason: string): string {
	return replaceUnstorable(reason.length > MAX_REASON_LENGTH ? reason.slice(0, MAX_REASON_LENGTH) : reason).text;
}

/** Runs the processors of `transition`; returns the entity after them, or the failure that aborts. */
async function runProcessors(
	transition: TransitionDefinition,
	entity: unknown,
	options: EngineOptions,
	warnings: string[],
): Promise<{ entity: unknown } | Failure> {
	let current = entity;
	for (const processor of transition.processors) {
		let failure: Failure | null = null;
		let changed: unknown = undefined;
		if (!options.runProcessor) {
			failure = {
				reason: `processor ${processor.name}: no processor runner (no calculation node can be reached)`,
				code: 'NO_COMPUTE_MEMBER_FOR_TAG',
			};
		} else {
			try {
				const result = await options.runProcessor(processor, transition, current);
				if (result === false)
					failure = { reason: `processor ${processor.name} returned failure`, code: 'WORKFLOW_FAILED' };
				else if (isOutcome(result)) {
					if (!result.success)
						failure = {
							reason: `processor ${processor.name} returned failure${result.error ? `: ${result.error}` : ''}`,
							code: 'WORKFLOW_FAILED',
						};
					else changed = result.entity;
				}
			} catch (error) {
				const code =
					error instanceof ContractError && error.details.code === 'NO_COMPUTE_MEMBER_FOR_TAG'
						? 'NO_COMPUTE_MEMBER_FOR_TAG'
						: 'WORKFLOW_FAILED';
				failure = { reason: `processor ${processor.name} failed: ${(error as Error).message}`, code };
			}
		}
		// the reason ends in rows (the run's error, ops.errors): storable text, bounded
		if (failure) failure = { ...failure, reason: storableReason(failure.reason) };
		if (processor.executionMode === 'ASYNC_NEW_TX') {
			// its own savepoint: a failure is a warning; what it returns is discarded either way
			if (failure) warnings.push(failure.reason);
			continue;
		}
		if (failure) return failure;
		if (changed !== undefined) current = changed;
	}
	return { entity: current };
}

/** Where the cascade loop stopped: ok, or the failure, with the state it was in. */
interface Run {
	state: string;
	fired: string[];
	entity: unknown;
	failure?: Failure;
}

async function runCascade(
	definition: WorkflowDefinition,
	state: string,
	entity: unknown,
	meta: Omit<EntityMeta, 'state'>,
	options: EngineOptions,
	visits: Map<string, number>,
	fired: string[],
	warnings: string[],
): Promise<Run> {
	const maxVisits = options.maxStateVisits ?? MAX_STATE_VISITS;
	const maxDepth = options.maxCascadeDepth ?? MAX_CASCADE_DEPTH;
	let current = state;
	let working = entity;
	let previous = meta.previousTransition ?? null;
	let depth = 0;
	for (;;) {
		const transition = (definition.states[current]?.transitions ?? []).find(
			(t) =>
				!t.manual &&
				!t.disabled &&
				evaluate(t.criterion, working, { ...meta, state: current, previousTransition: previous }),
		);
		if (!transition) return { state: current, fired, entity: working };
		depth++;
		if (depth >= maxDepth) {
			return {
				state: current,
				fired,
				entity: working,
				failure: {
					reason: `cascade depth limit ${maxDepth} reached at ${current}.${transition.name}`,
					code: 'CASCADE_LIMIT',
				},
			};
		}
		const count = (visits.get(transition.next) ?? 0) + 1;
		if (count > maxVisits) {
			return {
				state: current,
				fired,
				entity: working,
				failure: {
					reason: `state ${transition.next} visited more than ${maxVisits} times (via ${current}.${transition.name})`,
					code: 'CASCADE_LIMIT',
				},
			};
		}
		const processed = await runProcessors(transition, working, options, warnings);
		if ('reason' in processed) return { state: current, fired, entity: working, failure: processed };
		working = processed.entity;
		visits.set(transition.next, count);
		fired.push(transition.name);
		previous = transition.name;
		current = transition.next;
	}
}

/** The result of an operation that started in `origin` with `entity`: all of it, or nothing. */
function settle(origin: string, entity: unknown, run: Run, warnings: string[]): EngineResult {
	if (!run.failure) return { ok: true, state: run.state, fired: run.fired, warnings, entity: run.entity };
	return {
		ok: false,
		state: origin,
		fired: [],
		warnings,
		entity,
		reason: run.failure.reason,
		code: run.failure.code,
		stoppedAt: run.state,
		attempted: run.fired,
	};
}

/**
 * Runs only the processors of `transition` (leaving `state`), no criterion and no cascade: for callers
 * that move the entity themselves (the pipeline's Capture). All or nothing like the rest.
 */
export async function runTransitionProcessors(
	state: string,
	transition: TransitionDefinition,
	entity: unknown,
	options: EngineOptions = {},
): Promise<EngineResult> {
	const warnings: string[] = [];
	const processed = await runProcessors(transition, entity, options, warnings);
	if ('reason' in processed) return settle(state, entity, { state, fired: [], entity, failure: processed }, warnings);
	return { ok: true, state: transition.next, fired: [transition.name], warnings, entity: processed.entity };
}

/** Runs the automated cascade from `state` (all or nothing). */
export async function cascade(
	definition: WorkflowDefinition,
	state: string,
	entity: unknown,
	meta: Omit<EntityMeta, 'state'> = {},
	options: EngineOptions = {},
): Promise<EngineResult> {
	const warnings: string[] = [];
	const run = await runCascade(definition, state, entity, meta, options, new Map([[state, 1]]), [], warnings);
	return settle(state, entity, run, warnings);
}

/**
 * Fires the manual transition `name` from `state` (its processors first), then the cascade; all or
 * nothing: an abort anywhere reports `state` unchanged.
 * @throws ContractError 404 TRANSITION_NOT_FOUND (details.available), 409 TRANSITION_DISABLED,
 *         409 CRITERION_NOT_MET
 */
export async function fireManual(
	definition: WorkflowDefinition,
	state: string,
	name: string,
	entity: unknown,
	meta: Omit<EntityMeta, 'state'> = {},
	options: EngineOptions = {},
): Promise<EngineResult> {
	const transition = (definition.states[state]?.transitions ?? []).find((t) => t.name === name && t.manual);
	const available = availableTransitions(definition, state, entity, meta);
	const details = { workflow: definition.name, state, transition: name, available };
	if (!transition) {
		throw ContractError.notFound(
			`transition ${name} does not exist in state ${state} (available: ${available.join(', ') || 'none'})`,
			{
				code: 'TRANSITION_NOT_FOUND',
				...details,
			},
		);
	}
	if (transition.disabled)
		throw ContractError.conflict(`transition ${name} is disabled`, { code: 'TRANSITION_DISABLED', ...details });
	if (!evaluate(transition.criterion, entity, { ...meta, state })) {
		throw ContractError.conflict(`transition ${name} is not allowed now: its criterion does not match`, {
			code: 'CRITERION_NOT_MET',
			...details,
		});
	}
	const processed = await runTransitionProcessors(state, transition, entity, options);
	if (!processed.ok) return processed;
	const visits = new Map<string, number>([
		[state, 1],
		[transition.next, (transition.next === state ? 1 : 0) + 1],
	]);
	const run = await runCascade(
		definition,
		transition.next,
		processed.entity,
		{ ...meta, previousTransition: name },
		options,
		visits,
		[name],
		processed.warnings,
	);
	return settle(state, entity, run, processed.warnings);
}

/**
 * The ContractError of an aborted operation: 400 WORKFLOW_FAILED (seed 004: processor failure, timeout,
 * `success: false`), 400 NO_COMPUTE_MEMBER_FOR_TAG (no calculation node declares the tags; the seed gives
 * no status, 400 like the other processor failures), or 400 WORKFLOW_FAILED for a cascade limit
 * (details.code CASCADE_LIMIT is not a seed code: the seed names no error for it).
 */
export function abortError(result: EngineResult, details: Record<string, unknown> = {}): ContractError {
	const code = result.code === 'NO_COMPUTE_MEMBER_FOR_TAG' ? 'NO_COMPUTE_MEMBER_FOR_TAG' : 'WORKFLOW_FAILED';
	return ContractError.upstream(
		`workflow aborted, nothing applied (state stays ${result.state}): ${result.reason}`,
		400,
		false,
		{
			code,
			cause: result.code,
			state: result.state,
			stopped_at: result.stoppedAt,
			attempted: result.attempted,
			...details,
		},
	);
}

/** The first active workflow whose criterion matches the entity (null criterion matches all), or null. */
export function selectWorkflow(definitions: WorkflowDefinition[], entity: unknown): WorkflowDefinition | null {
	return definitions.find((d) => d.active && evaluate(d.criterion, entity, { state: null })) ?? null;
}
