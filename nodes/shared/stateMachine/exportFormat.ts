/**
 * Export of a WorkflowDefinition with seed 004's omission rules: a transition omits `disabled` when
 * false, `processors` when empty and `criterion` when null; a state without transitions is `{}`;
 * `desc` and the workflow `criterion` are omitted when empty.
 */
import type { WorkflowDefinition } from './schema';

export function exportDefinition(definition: WorkflowDefinition): Record<string, unknown> {
	const states: Record<string, unknown> = {};
	for (const [name, state] of Object.entries(definition.states)) {
		states[name] =
			state.transitions.length === 0
				? {}
				: {
						transitions: state.transitions.map((t) => ({
							name: t.name,
							next: t.next,
							manual: t.manual,
							...(t.disabled ? { disabled: true } : {}),
							...(t.criterion ? { criterion: t.criterion } : {}),
							...(t.processors.length ? { processors: t.processors } : {}),
						})),
					};
	}
	return {
		version: definition.version,
		name: definition.name,
		...(definition.desc ? { desc: definition.desc } : {}),
		initialState: definition.initialState,
		active: definition.active,
		...(definition.criterion ? { criterion: definition.criterion } : {}),
		states,
	};
}
