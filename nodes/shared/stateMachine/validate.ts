/**
 * Import-time validation of a WorkflowDefinition (seed 004 "Static validation"): the initial state and
 * every transition's `next` exist, transition names are unique within their state, and no cycle can be
 * run by automated, enabled transitions without a criterion ("definite infinite loop"). Guarded or manual
 * cycles are allowed: the engine's visit and depth limits stop them at run time.
 */
import { ContractError } from '../errors';
import type { WorkflowDefinition } from './schema';

/** @throws ContractError 400 validation, details.code VALIDATION_FAILED, with every problem found */
export function validateDefinition(definition: WorkflowDefinition): void {
	const problems: string[] = [];
	const states = definition.states;
	if (!(definition.initialState in states)) problems.push(`initialState ${definition.initialState} is not a state`);
	for (const [state, { transitions }] of Object.entries(states)) {
		const seen = new Set<string>();
		for (const t of transitions) {
			if (!(t.next in states)) problems.push(`transition ${state}.${t.name}: next state ${t.next} does not exist`);
			if (seen.has(t.name)) problems.push(`transition ${state}.${t.name} is declared twice`);
			seen.add(t.name);
		}
	}
	const cycle = findUnguardedCycle(definition);
	if (cycle) problems.push(`infinite loop detected: ${cycle.join(' -> ')} via unguarded automated transitions`);
	if (problems.length) {
		throw ContractError.badRequest(`workflow ${definition.name} is invalid: ${problems.join('; ')}`, {
			code: 'VALIDATION_FAILED',
			workflow: definition.name,
			problems,
		});
	}
}

/**
 * A cycle of automated (`manual: false`), enabled transitions without criterion, as the list of states
 * from its first state back to it (`["A", "B", "A"]`), or null. Depth-first search; a back edge is a cycle.
 */
export function findUnguardedCycle(definition: WorkflowDefinition): string[] | null {
	const edges = new Map<string, string[]>();
	for (const [state, { transitions }] of Object.entries(definition.states)) {
		edges.set(
			state,
			transitions
				.filter((t) => !t.manual && !t.disabled && t.criterion === null && t.next in definition.states)
				.map((t) => t.next),
		);
	}
	const color = new Map<string, 'grey' | 'black'>();
	const path: string[] = [];
	const visit = (state: string): string[] | null => {
		color.set(state, 'grey');
		path.push(state);
		for (const next of edges.get(state) ?? []) {
			if (color.get(next) === 'grey') return [...path.slice(path.indexOf(next)), next];
			if (!color.has(next)) {
				const found = visit(next);
				if (found) return found;
			}
		}
		path.pop();
		color.set(state, 'black');
		return null;
	};
	for (const state of edges.keys()) {
		if (!color.has(state)) {
			const found = visit(state);
			if (found) return found;
		}
	}
	return null;
}
