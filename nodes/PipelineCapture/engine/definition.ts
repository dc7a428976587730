/**
 * The pipeline_runs state machine (seed 001 statuses, seed 004 format): the definition imported into
 * ops.workflow_definitions for model `pipeline_runs` v1 when there is one (so users can edit it), else
 * the one shipped in db/state-machines/pipeline_runs.json. Cached per pool for 30 s.
 *
 * Conventions the operations rely on:
 *  - `CAPTURE_*` transitions take a waiting run into an in-progress state (one worker wins);
 *  - from an in-progress state, one `*_DONE` transition stores the step's result and moves on, and
 *    `RELEASE` returns the run to its waiting state (Sweep);
 *  - `FAIL` is available from every non-terminal state; terminal states have no transitions (but ARCHIVE);
 *  - `ARCHIVE`, when declared, leaves `COMPLETED` for `COMPLETED` (archiving is not a state: Archive sets
 *    `archived_at`); it is how a definition gives Archive processors (checked by `assertPipelineTransitions`);
 *  - `FAIL`, `RELEASE` and `ARCHIVE` are fired by their own operations (Fail, the Sweep, Archive), never by
 *    Capture or Complete Step; their processors run as Complete Step's do (issue 26 item 2).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';
import { ContractError } from '../../shared/errors';
import { loadWorkflows, parseImport, validateDefinition, type WorkflowDefinition } from '../../shared/stateMachine';

export const PIPELINE_MODEL = { model: 'pipeline_runs', modelVersion: 1 };
const FILE = 'pipeline_runs.json';
const CACHE_MS = 30_000;

/** The definition shipped with the package (works from the sources and from dist/). */
export function shippedDefinition(): WorkflowDefinition {
	const candidates = [
		path.join(__dirname, '..', '..', '..', 'db', 'state-machines', FILE),
		path.join(__dirname, '..', '..', '..', '..', 'db', 'state-machines', FILE),
	];
	const file = candidates.find((f) => existsSync(f));
	if (!file) throw new Error(`shipped state machine ${FILE} not found (looked in ${candidates.join(', ')})`);
	const [definition] = parseImport(JSON.parse(readFileSync(file, 'utf8'))).workflows;
	validateDefinition(definition);
	return definition;
}

const cache = new WeakMap<Pool, { at: number; definition: WorkflowDefinition }>();

/** The active pipeline definition for this database. */
export async function pipelineDefinition(pool: Pool): Promise<WorkflowDefinition> {
	const hit = cache.get(pool);
	if (hit && Date.now() - hit.at < CACHE_MS) return hit.definition;
	const stored = (await loadWorkflows(pool, PIPELINE_MODEL)).find((w) => w.active);
	const definition = stored ?? shippedDefinition();
	cache.set(pool, { at: Date.now(), definition });
	return definition;
}

/** Drops the cached definition of a database (after an import, so the next operation uses it). */
export function forgetDefinition(pool: Pool): void {
	cache.delete(pool);
}

export interface Edge {
	name: string;
	from: string;
	to: string;
}

/** Every manual transition as an edge. */
export function edgesOf(definition: WorkflowDefinition): Edge[] {
	return Object.entries(definition.states).flatMap(([from, s]) =>
		s.transitions.filter((t) => t.manual && !t.disabled).map((t) => ({ name: t.name, from, to: t.next })),
	);
}

/** The states a run can still leave (they have transitions other than ARCHIVE, which stays in COMPLETED). */
export function nonTerminalStates(definition: WorkflowDefinition): string[] {
	return Object.entries(definition.states)
		.filter(([, s]) => s.transitions.some((t) => t.name !== ARCHIVE))
		.map(([name]) => name);
}

/** Archive's transition (optional in a definition): `COMPLETED` → `COMPLETED`, manual. */
export const ARCHIVE = 'ARCHIVE';
/** The state Archive works on (seed 001: a COMPLETED run is archived, once). */
export const ARCHIVABLE_STATE = 'COMPLETED';

/**
 * Transitions the pipeline's own operations fire (Fail → `FAIL`, the Sweep → `RELEASE`, Archive →
 * `ARCHIVE`); Capture and Complete Step refuse them.
 */
export const OWN_TRANSITIONS = ['FAIL', 'RELEASE', ARCHIVE];

/** The enabled transition `name` leaving `state`, or undefined (a disabled one is skipped, seed 004). */
export function transitionFrom(definition: WorkflowDefinition, state: string, name: string) {
	return definition.states[state]?.transitions.find((t) => t.name === name && !t.disabled);
}

/** Whether any enabled transition named `name` has processors (then its operation runs them). */
export function hasProcessors(definition: WorkflowDefinition, name: string): boolean {
	return Object.values(definition.states).some((s) =>
		s.transitions.some((t) => t.name === name && !t.disabled && t.processors.length > 0),
	);
}

/**
 * The one edge named `transition` (leaving `from` when given).
 * @throws ContractError 409 ILLEGAL_TRANSITION listing the legal transitions
 */
export function edgeNamed(definition: WorkflowDefinition, transition: string, from?: string): Edge {
	const all = edgesOf(definition);
	const matches = all.filter((e) => e.name === transition && (from === undefined || e.from === from));
	if (matches.length === 1) return matches[0];
	const legal = [...new Set(all.filter((e) => from === undefined || e.from === from).map((e) => e.name))];
	throw ContractError.conflict(
		matches.length === 0
			? `transition ${transition}${from ? ` from ${from}` : ''} is not in the ${definition.name} state machine (legal: ${legal.join(', ')})`
			: `transition ${transition} leaves several states (${matches.map((m) => m.from).join(', ')}): give the source state`,
		{ code: 'ILLEGAL_TRANSITION', transition, from: from ?? null, legal },
	);
}

/**
 * The pipeline's own rule for an imported definition of model pipeline_runs: `ARCHIVE`, when declared, is
 * a manual transition of `COMPLETED` back to `COMPLETED` (archiving is not a state; Archive works on
 * COMPLETED runs only), so that its processors run on Archive. Processors are allowed on every
 * transition, `FAIL` and `RELEASE` included (issue 26 item 2: Fail, the Sweep and Archive run them).
 * @throws ContractError 400 VALIDATION_FAILED naming each `states.<state>.transitions[<i>]`
 */
export function assertPipelineTransitions(definition: WorkflowDefinition): void {
	const problems = Object.entries(definition.states).flatMap(([state, s]) =>
		s.transitions.flatMap((t, i) =>
			t.name === ARCHIVE && (state !== ARCHIVABLE_STATE || t.next !== ARCHIVABLE_STATE || !t.manual)
				? [
						`states.${state}.transitions[${i}]: ${ARCHIVE} is Archive's transition, a manual ${ARCHIVABLE_STATE} → ${ARCHIVABLE_STATE} (archiving is not a state); declare it only there`,
					]
				: [],
		),
	);
	if (problems.length > 0) {
		throw ContractError.badRequest(
			`workflow ${definition.name} is invalid for ${PIPELINE_MODEL.model}: ${problems.join('; ')}`,
			{
				code: 'VALIDATION_FAILED',
				workflow: definition.name,
				problems,
			},
		);
	}
}
