/**
 * The state-machine engine of seed 004, over a WorkflowDefinition:
 *  - `fireManual`: a named manual transition of the current state (404 TRANSITION_NOT_FOUND with the
 *    transitions available, 409 TRANSITION_DISABLED, 409 CRITERION_NOT_MET), then the cascade;
 *  - `cascade`: repeatedly fires the first automated, enabled transition (declaration order) whose
 *    criterion matches, until none does. Limits: a state visited an 11th time, or a 100th automated
 *    transition in one operation, ends the cascade as `{ ok: false, reason }` (the caller records the
 *    reason and moves the entity to FAILED). The starting state counts as a visit.
 *  - processors run through the caller's `runProcessor`; a failing SYNC / ASYNC_SAME_TX processor leaves
 *    the entity in the transition's source state (`{ ok: false }`), an ASYNC_NEW_TX failure is a warning.
 */
import { ContractError } from '../errors';
import { evaluate, type EntityMeta } from './criteria';
import type { ProcessorDefinition, TransitionDefinition, WorkflowDefinition } from './schema';

export const MAX_STATE_VISITS = 10;
export const MAX_CASCADE_DEPTH = 100;

export interface EngineOptions {
	maxStateVisits?: number;
	maxCascadeDepth?: number;
	/** Runs a processor of a fired transition; throw (or resolve false) to fail it. */
	runProcessor?: (processor: ProcessorDefinition, transition: TransitionDefinition, entity: unknown) => Promise<boolean | void>;
}

export interface EngineResult {
	ok: boolean;
	/** The state the entity ends in (the source state of a failed processor). */
	state: string;
	/** Names of the transitions fired, in order. */
	fired: string[];
	/** Why the cascade stopped early (limits, processor failure); absent when ok. */
	reason?: string;
	/** Non-fatal ASYNC_NEW_TX processor failures. */
	warnings: string[];
}

/** The transitions a client may fire from `state` (manual, enabled, criterion matching). */
export function availableTransitions(definition: WorkflowDefinition, state: string, entity: unknown, meta: Omit<EntityMeta, 'state'> = {}): string[] {
	return (definition.states[state]?.transitions ?? [])
		.filter((t) => t.manual && !t.disabled && evaluate(t.criterion, entity, { ...meta, state }))
		.map((t) => t.name);
}

async function runProcessors(transition: TransitionDefinition, entity: unknown, options: EngineOptions, warnings: string[]): Promise<string | null> {
	for (const processor of transition.processors) {
		let failure: string | null = null;
		try {
			const result = options.runProcessor ? await options.runProcessor(processor, transition, entity) : true;
			if (result === false) failure = `processor ${processor.name} returned failure`;
		} catch (error) {
			failure = `processor ${processor.name} failed: ${(error as Error).message}`;
		}
		if (!failure) continue;
		if (processor.executionMode === 'ASYNC_NEW_TX') warnings.push(failure);
		else return failure;
	}
	return null;
}

/** Runs the automated cascade from `state`. */
export async function cascade(
	definition: WorkflowDefinition,
	state: string,
	entity: unknown,
	meta: Omit<EntityMeta, 'state'> = {},
	options: EngineOptions = {},
	visits = new Map<string, number>([[state, 1]]),
	fired: string[] = [],
	warnings: string[] = [],
): Promise<EngineResult> {
	const maxVisits = options.maxStateVisits ?? MAX_STATE_VISITS;
	const maxDepth = options.maxCascadeDepth ?? MAX_CASCADE_DEPTH;
	let current = state;
	let previous = meta.previousTransition ?? null;
	let depth = 0;
	for (;;) {
		const transition = (definition.states[current]?.transitions ?? []).find(
			(t) => !t.manual && !t.disabled && evaluate(t.criterion, entity, { ...meta, state: current, previousTransition: previous }),
		);
		if (!transition) return { ok: true, state: current, fired, warnings };
		depth++;
		if (depth >= maxDepth) {
			return { ok: false, state: current, fired, warnings, reason: `cascade depth limit ${maxDepth} reached at ${current}.${transition.name}` };
		}
		const count = (visits.get(transition.next) ?? 0) + 1;
		if (count > maxVisits) {
			return { ok: false, state: current, fired, warnings, reason: `state ${transition.next} visited more than ${maxVisits} times (via ${current}.${transition.name})` };
		}
		const failure = await runProcessors(transition, entity, options, warnings);
		if (failure) return { ok: false, state: current, fired, warnings, reason: failure };
		visits.set(transition.next, count);
		fired.push(transition.name);
		previous = transition.name;
		current = transition.next;
	}
}

/**
 * Fires the manual transition `name` from `state`, then the cascade.
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
		throw new ContractError(`transition ${name} does not exist in state ${state} (available: ${available.join(', ') || 'none'})`, 404, 'not_found', false, {
			code: 'TRANSITION_NOT_FOUND',
			...details,
		});
	}
	if (transition.disabled) throw new ContractError(`transition ${name} is disabled`, 409, 'conflict', false, { code: 'TRANSITION_DISABLED', ...details });
	if (!evaluate(transition.criterion, entity, { ...meta, state })) {
		throw new ContractError(`transition ${name} is not allowed now: its criterion does not match`, 409, 'conflict', false, { code: 'CRITERION_NOT_MET', ...details });
	}
	const warnings: string[] = [];
	const failure = await runProcessors(transition, entity, options, warnings);
	if (failure) return { ok: false, state, fired: [], warnings, reason: failure };
	const visits = new Map<string, number>([
		[state, 1],
		[transition.next, (transition.next === state ? 1 : 0) + 1],
	]);
	return cascade(definition, transition.next, entity, { ...meta, previousTransition: name }, options, visits, [name], warnings);
}

/** The first active workflow whose criterion matches the entity (null criterion matches all), or null. */
export function selectWorkflow(definitions: WorkflowDefinition[], entity: unknown): WorkflowDefinition | null {
	return definitions.find((d) => d.active && evaluate(d.criterion, entity, { state: null })) ?? null;
}
