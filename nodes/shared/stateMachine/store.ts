/**
 * WorkflowDefinitions in PostgreSQL (ops.workflow_definitions, db/migrations/002), with seed 004's
 * import modes, each one transaction (a failed validation writes nothing):
 *  - MERGE (default): incoming workflows overwrite same-named ones; others are kept;
 *  - REPLACE: every existing workflow of the model is discarded; only the incoming set remains;
 *  - ACTIVATE: incoming workflows replace same-named ones; every other workflow of the model is set inactive.
 * Every imported workflow is stored `active: true`, whatever its body says (seed 004).
 * The statements: shared/statements/workflowDefinitions.ts.
 */
import type { Pool } from 'pg';
import { ContractError } from '../errors';
import { inTransaction } from '../postgres/transaction';
import {
	DEACTIVATE_OTHER_WORKFLOWS,
	DELETE_MODEL_WORKFLOWS,
	LOAD_WORKFLOWS,
	LOCK_MODEL,
	NEXT_POSITION,
	UPSERT_WORKFLOW,
} from '../statements/workflowDefinitions';
import { exportDefinition } from './exportFormat';
import { ImportRequest, WorkflowDefinition, type WorkflowDefinitionInput } from './schema';
import { validateDefinition } from './validate';

export interface ModelRef {
	model: string;
	modelVersion: number;
}

/** Parses an import body. @throws ContractError 400 VALIDATION_FAILED naming the field */
export function parseImport(body: unknown): ImportRequest {
	const parsed = ImportRequest.safeParse(body);
	if (parsed.success) return parsed.data;
	const issue = parsed.error.issues[0];
	const field = issue.path.join('.') || '(body)';
	throw ContractError.badRequest(`invalid workflow import: ${field} ${issue.message}`, {
		code: 'VALIDATION_FAILED',
		field,
	});
}

/**
 * Validates and stores the workflows of an import body for `ref`.
 * @returns the names stored, in order
 * `check`: the model's own rules (e.g. the pipeline's, PipelineCapture/engine/definition.ts), run on
 * every workflow after the seed's validation and before anything is written.
 * @throws ContractError 400 VALIDATION_FAILED (schema, missing states, unguarded automated cycle, `check`)
 */
export async function importWorkflows(
	pool: Pool,
	ref: ModelRef,
	body: unknown,
	check?: (definition: WorkflowDefinition) => void,
): Promise<string[]> {
	const request = parseImport(body);
	const names = request.workflows.map((w) => w.name);
	if (new Set(names).size !== names.length) {
		throw ContractError.badRequest('invalid workflow import: two workflows share a name', {
			code: 'VALIDATION_FAILED',
			names,
		});
	}
	for (const workflow of request.workflows) {
		validateDefinition(workflow);
		check?.(workflow);
	}
	await inTransaction(pool, async (client) => {
		await client.query(LOCK_MODEL, [ref.model, ref.modelVersion]);
		if (request.importMode === 'REPLACE') {
			await client.query(DELETE_MODEL_WORKFLOWS, [ref.model, ref.modelVersion]);
		}
		if (request.importMode === 'ACTIVATE') {
			await client.query(DEACTIVATE_OTHER_WORKFLOWS, [ref.model, ref.modelVersion, names]);
		}
		const { rows } = await client.query<{ next: number }>(NEXT_POSITION, [ref.model, ref.modelVersion]);
		let position = rows[0].next;
		for (const workflow of request.workflows) {
			const stored = { ...workflow, active: true };
			await client.query(UPSERT_WORKFLOW, [
				ref.model,
				ref.modelVersion,
				workflow.name,
				position++,
				JSON.stringify(stored),
			]);
		}
	});
	return names;
}

/** The stored workflows of `ref`, in import order (`active` as stored). */
export async function loadWorkflows(pool: Pool, ref: ModelRef): Promise<WorkflowDefinition[]> {
	const { rows } = await pool.query<{ definition: WorkflowDefinitionInput; active: boolean }>(LOAD_WORKFLOWS, [
		ref.model,
		ref.modelVersion,
	]);
	return rows.map((r) => WorkflowDefinition.parse({ ...r.definition, active: r.active }));
}

/**
 * The export body of seed 004: `{ entityName, modelVersion, workflows }` with the omission rules.
 * @throws ContractError 404 WORKFLOW_NOT_FOUND when nothing was imported for the model
 */
export async function exportWorkflows(pool: Pool, ref: ModelRef): Promise<Record<string, unknown>> {
	const workflows = await loadWorkflows(pool, ref);
	if (workflows.length === 0) {
		throw ContractError.notFound(`no workflows imported for ${ref.model} v${ref.modelVersion}`, {
			code: 'WORKFLOW_NOT_FOUND',
			...ref,
		});
	}
	return { entityName: ref.model, modelVersion: ref.modelVersion, workflows: workflows.map(exportDefinition) };
}
