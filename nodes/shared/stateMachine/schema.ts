/**
 * The WorkflowDefinition format of seed 004 (cyoda-go v0.6.1 "workflows"), as zod schemas: the single
 * source of the state machines this package ships (e.g. db/state-machines/pipeline_runs.json),
 * validated at import, typed for the engine. Defaults: `manual`/`disabled` false, `criterion` null,
 * `processors` and `transitions` empty, `active` true.
 */
import { z } from 'zod';
import { isRecord } from '../json';

/** Operators of a `simple` / `lifecycle` criterion (FACTS: the state-machine format of seed 004). */
export const OperatorType = z.enum([
	'EQUALS',
	'NOT_EQUAL',
	'GREATER_THAN',
	'GREATER_OR_EQUAL',
	'LESS_THAN',
	'LESS_OR_EQUAL',
	'CONTAINS',
	'STARTS_WITH',
	'ENDS_WITH',
	'LIKE',
	'MATCHES_PATTERN',
	'BETWEEN',
	'IS_NULL',
	'NOT_NULL',
	'IEQUALS',
	'INOT_EQUAL',
	'ICONTAINS',
	'INOT_CONTAINS',
	'ISTARTS_WITH',
	'INOT_STARTS_WITH',
	'IENDS_WITH',
	'INOT_ENDS_WITH',
]);
export type OperatorType = z.infer<typeof OperatorType>;

export interface SimpleCondition {
	type: 'simple';
	jsonPath: string;
	operatorType: OperatorType;
	value?: unknown;
}
export interface LifecycleCondition {
	type: 'lifecycle';
	field: 'state' | 'creationDate' | 'previousTransition';
	operatorType: OperatorType;
	value?: unknown;
}
export interface GroupCondition {
	type: 'group';
	operator: 'AND' | 'OR';
	conditions: Condition[];
}
export interface ArrayCondition {
	type: 'array';
	jsonPath: string;
	operatorType?: OperatorType;
	/**
	 * The format's field (plural): values[i] is compared with element i of the array at jsonPath; a null
	 * entry is skipped. Our earlier singular `value` is accepted at import as an alias and stored as `values`.
	 */
	values: unknown[];
}
export type Condition = SimpleCondition | LifecycleCondition | GroupCondition | ArrayCondition;

/**
 * An array condition written with our earlier singular `value` (and no `values`) is read as `values`,
 * so definitions stored before the format's plural field was adopted still load; export writes `values`.
 * Both fields at once is refused (which one was meant is unknowable).
 */
function legacyArrayValue(input: unknown): unknown {
	if (!isRecord(input) || input.type !== 'array' || !('value' in input) || 'values' in input) return input;
	const { value, ...rest } = input;
	return { ...rest, values: value };
}

/** The Condition DSL (simple, lifecycle, group, array). */
export const Condition: z.ZodType<Condition> = z.lazy(() =>
	z.preprocess(
		legacyArrayValue,
		z.discriminatedUnion('type', [
			z.object({
				type: z.literal('simple'),
				jsonPath: z.string().min(1),
				operatorType: OperatorType,
				value: z.unknown().optional(),
			}),
			z.object({
				type: z.literal('lifecycle'),
				field: z.enum(['state', 'creationDate', 'previousTransition']),
				operatorType: OperatorType,
				value: z.unknown().optional(),
			}),
			z.object({ type: z.literal('group'), operator: z.enum(['AND', 'OR']), conditions: z.array(Condition) }),
			z.object({
				type: z.literal('array'),
				jsonPath: z.string().min(1),
				operatorType: OperatorType.optional(),
				values: z.array(z.unknown()),
				// present only when both were written (legacyArrayValue renames a lone `value`)
				value: z
					.undefined({
						errorMap: () => ({ message: "give values (the format's field) or the legacy value, not both" }),
					})
					.optional(),
			}),
		]),
	),
) as unknown as z.ZodType<Condition>;

export const ProcessorDefinition = z.object({
	/** Only "EXTERNAL" exists in v0.6.1; anything else fails import. */
	type: z.literal('EXTERNAL'),
	name: z.string().min(1),
	/** SYNC | ASYNC_SAME_TX | ASYNC_NEW_TX; any other value behaves as SYNC (seed 004). */
	executionMode: z.string().default('SYNC'),
	config: z
		.object({
			attachEntity: z.boolean().optional(),
			calculationNodesTags: z.string().optional(),
			responseTimeoutMs: z.number().int().nonnegative().optional(),
			retryPolicy: z.string().optional(),
			context: z.string().optional(),
		})
		.passthrough()
		.default({}),
});
export type ProcessorDefinition = z.infer<typeof ProcessorDefinition>;

export const TransitionDefinition = z.object({
	name: z.string().min(1),
	next: z.string().min(1),
	manual: z.boolean().default(false),
	disabled: z.boolean().default(false),
	criterion: Condition.nullable().default(null),
	processors: z.array(ProcessorDefinition).default([]),
});
export type TransitionDefinition = z.infer<typeof TransitionDefinition>;

export const StateDefinition = z.object({ transitions: z.array(TransitionDefinition).default([]) });
export type StateDefinition = z.infer<typeof StateDefinition>;

export const WorkflowDefinition = z.object({
	version: z.string().default('1'),
	name: z.string().min(1),
	desc: z.string().optional(),
	initialState: z.string().min(1),
	active: z.boolean().default(true),
	criterion: Condition.nullable().default(null),
	states: z.record(z.string().min(1), StateDefinition),
});
export type WorkflowDefinition = z.infer<typeof WorkflowDefinition>;
/** The JSON as written (defaults not yet applied). */
export type WorkflowDefinitionInput = z.input<typeof WorkflowDefinition>;

/**
 * MERGE | REPLACE | ACTIVATE, case-insensitive (`merge`, `Replace`…); absent, null or an empty (or
 * blank) string is the default MERGE (seed 004: "MERGE (default)").
 */
export const ImportMode = z.preprocess(
	(v) =>
		v === undefined || v === null ? 'MERGE' : typeof v === 'string' ? (v.trim() === '' ? 'MERGE' : v.toUpperCase()) : v,
	z.enum(['MERGE', 'REPLACE', 'ACTIVATE']),
);
export type ImportMode = z.infer<typeof ImportMode>;

export const ImportRequest = z.object({ importMode: ImportMode, workflows: z.array(WorkflowDefinition).min(1) });
export type ImportRequest = z.infer<typeof ImportRequest>;
