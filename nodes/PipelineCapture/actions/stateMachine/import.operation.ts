/**
 * State Machine → Import (seed 004 import): WorkflowDefinitions into ops.workflow_definitions for a model
 * (default `pipeline_runs` v1, the one Pipeline Capture runs on), with MERGE / REPLACE / ACTIVATE.
 * `importMode` in any case; absent or "" is MERGE. Validated first (states exist, no unguarded automated
 * cycle — named; processor type EXTERNAL only; for pipeline_runs v1 an ARCHIVE transition only as a manual
 * COMPLETED → COMPLETED — processors are allowed on every transition, FAIL / RELEASE / ARCHIVE included);
 * a refused import writes nothing.
 * Input: `body` `{ importMode, workflows }`. Output: `{ success: true, model, model_version, workflows }`.
 * Errors: 400 VALIDATION_FAILED (the field or the problems named); 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import { importWorkflows } from '../../../shared/stateMachine';
import { assertPipelineTransitions, forgetDefinition, PIPELINE_MODEL } from '../../engine/definition';
import type { PipelineOperation } from '../types';
import { MODEL_FIELDS } from './modelFields';

export const importOperation: PipelineOperation = {
	value: 'import',
	name: 'Import',
	action: 'Import state machine definitions',
	description: 'Store WorkflowDefinitions (seed 004 format) with MERGE, REPLACE or ACTIVATE',
	fields: fieldsOf({ resource: 'stateMachine', operation: 'import' }, [
		{
			displayName: 'Import Body',
			name: 'body',
			type: 'json',
			required: true,
			default: '={{ $json.body || $json }}',
			description: 'The import request: { "importMode": "MERGE", "workflows": [ … ] }',
		},
		...MODEL_FIELDS,
	]),
	async execute(deps, input) {
		const body = typeof input.body === 'string' ? JSON.parse(input.body) : input.body;
		const ref = {
			model: String(input.model || PIPELINE_MODEL.model),
			modelVersion: Number(input.model_version) || PIPELINE_MODEL.modelVersion,
		};
		const names = await importWorkflows(
			deps.pool,
			ref,
			body,
			ref.model === PIPELINE_MODEL.model && ref.modelVersion === PIPELINE_MODEL.modelVersion
				? assertPipelineTransitions
				: undefined,
		);
		forgetDefinition(deps.pool);
		return { data: { success: true, model: ref.model, model_version: ref.modelVersion, workflows: names }, output: 0 };
	},
};
