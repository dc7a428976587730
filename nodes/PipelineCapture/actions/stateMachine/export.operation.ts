/**
 * State Machine → Export (seed 004 export): `{ entityName, modelVersion, workflows }` with the omission
 * rules (no `disabled: false`, empty `processors`, null criteria, empty `desc`; a state without
 * transitions is `{}`). Errors: 404 WORKFLOW_NOT_FOUND when nothing was imported for the model; 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import { exportWorkflows } from '../../../shared/stateMachine';
import { PIPELINE_MODEL } from '../../engine/definition';
import type { PipelineOperation } from '../types';
import { MODEL_FIELDS } from './modelFields';

export const exportOperation: PipelineOperation = {
	value: 'export',
	name: 'Export',
	action: 'Export state machine definitions',
	description: 'Read the stored WorkflowDefinitions of a model (seed 004 export format)',
	fields: fieldsOf({ resource: 'stateMachine', operation: 'export' }, [...MODEL_FIELDS]),
	async execute(deps, input) {
		const ref = {
			model: String(input.model || PIPELINE_MODEL.model),
			modelVersion: Number(input.model_version) || PIPELINE_MODEL.modelVersion,
		};
		return { data: await exportWorkflows(deps.pool, ref), output: 0 };
	},
};
