/**
 * EXTERNAL processors (seed 004 "PROCESSORS") mapped onto n8n: a "calculation node" is an n8n
 * sub-workflow (its first node "When Executed by Another Workflow", accepting all data) listed with the
 * tags it declares. A processor goes to the first listed sub-workflow that declares ALL the tags of
 * its `config.calculationNodesTags` (comma-separated, trimmed, case-sensitive; no tags → the first one
 * listed); none → ContractError 400 NO_COMPUTE_MEMBER_FOR_TAG. The list is a node parameter (Pipeline
 * Capture → Calculation Nodes), not discovered through the n8n API: the routing is visible in the
 * workflow that runs it and needs no n8n API key.
 *
 * The sub-workflow receives one item `{ processor: { name, executionMode, context, tags },
 * transition: { name, next }, entity? }` (`entity` only when `config.attachEntity` is true) and answers
 * with its last node's first item: `{ success?: boolean, entity?: object, error?: string }`.
 * `success: false`, an error thrown by the sub-workflow, no answer within `config.responseTimeoutMs`
 * (0 or absent → DEFAULT_RESPONSE_TIMEOUT_MS) fail the processor; no item or no `success` field is a
 * success without changes. `entity` (an object) is the entity as the processor changed it (applied for
 * SYNC / ASYNC_SAME_TX, discarded for ASYNC_NEW_TX by the engine). A timed-out sub-workflow is not
 * cancelled (n8n gives a node no handle on it): its answer is ignored. `retryPolicy` is not applied
 * (no retry: the seed's "empty means no retry"; named policies are platform-defined and we define none).
 */
import { ContractError } from '../errors';
import { isRecord } from '../json';
import type { EngineOptions, ProcessorOutcome } from './engine';
import type { ProcessorDefinition, TransitionDefinition } from './schema';

/** ms a processor may take when its `responseTimeoutMs` is 0 or absent. */
export const DEFAULT_RESPONSE_TIMEOUT_MS = 60_000;

/** A sub-workflow that processes, and the tags it declares. */
export interface CalculationNode {
	workflowId: string;
	tags: string[];
}

/** What the sub-workflow is sent. */
export interface ProcessorRequest {
	processor: { name: string; executionMode: string; context: string; tags: string[] };
	transition: { name: string; next: string };
	entity?: unknown;
}

/** Runs sub-workflow `workflowId` with one item `request`; resolves its answer item's json (or undefined). */
export type SubWorkflowCaller = (workflowId: string, request: ProcessorRequest) => Promise<unknown>;

/** The tags of a `calculationNodesTags` string or a node parameter: comma-separated, trimmed, non-empty. */
export function parseTags(tags: unknown): string[] {
	return typeof tags === 'string'
		? tags
				.split(',')
				.map((t) => t.trim())
				.filter((t) => t !== '')
		: [];
}

/**
 * The first node declaring every tag in `required`, or null.
 */
export function selectCalculationNode(nodes: CalculationNode[], required: string[]): CalculationNode | null {
	return nodes.find((n) => required.every((t) => n.tags.includes(t))) ?? null;
}

/** Longest wait setTimeout can express (2^31 − 1 ms, about 24.8 days); a longer responseTimeoutMs is clamped to it. */
export const MAX_TIMEOUT_MS = 2_147_483_647;

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const wait = Math.min(ms, MAX_TIMEOUT_MS); // beyond it Node fires after 1 ms
	const timeout = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new Error(`${what}: no response within ${wait} ms`)), wait);
	});
	return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** Reads a sub-workflow's answer as a ProcessorOutcome. */
export function readAnswer(answer: unknown): ProcessorOutcome {
	if (!isRecord(answer)) return { success: true };
	const a = answer;
	// success: true wins; otherwise success: false or an error (n8n's continue-on-fail emits { error }) fails
	const success =
		a.success === true || (a.success !== false && (a.error === undefined || a.error === null || a.error === ''));
	const entity = isRecord(a.entity) ? a.entity : undefined;
	const error =
		typeof a.error === 'string'
			? a.error.slice(0, 500)
			: a.success === false
				? 'success: false'
				: a.error !== undefined
					? 'error (not a string)'
					: undefined;
	return success ? { success, ...(entity ? { entity } : {}) } : { success, ...(error ? { error } : {}) };
}

/**
 * The engine's `runProcessor` for EXTERNAL processors over `nodes`, calling sub-workflows with `call`.
 * @throws (from the returned function) ContractError 400 NO_COMPUTE_MEMBER_FOR_TAG; Error on timeout or
 *         when the sub-workflow fails (the engine turns both into WORKFLOW_FAILED or a warning)
 */
export function externalProcessorRunner(
	nodes: CalculationNode[],
	call: SubWorkflowCaller,
	defaultTimeoutMs = DEFAULT_RESPONSE_TIMEOUT_MS,
): NonNullable<EngineOptions['runProcessor']> {
	return async (processor: ProcessorDefinition, transition: TransitionDefinition, entity: unknown) => {
		const tags = parseTags(processor.config.calculationNodesTags);
		const node = selectCalculationNode(nodes, tags);
		if (!node) {
			throw ContractError.upstream(
				`no calculation node (sub-workflow) declares the tags [${tags.join(', ')}] of processor ${processor.name}`,
				400,
				false,
				{
					code: 'NO_COMPUTE_MEMBER_FOR_TAG',
					processor: processor.name,
					tags,
				},
			);
		}
		const request: ProcessorRequest = {
			processor: {
				name: processor.name,
				executionMode: processor.executionMode,
				context: processor.config.context ?? '',
				tags,
			},
			transition: { name: transition.name, next: transition.next },
			...(processor.config.attachEntity ? { entity } : {}),
		};
		const ms =
			processor.config.responseTimeoutMs && processor.config.responseTimeoutMs > 0
				? processor.config.responseTimeoutMs
				: defaultTimeoutMs;
		const answer = await withTimeout(call(node.workflowId, request), ms, `sub-workflow ${node.workflowId}`);
		return readAnswer(answer);
	};
}
