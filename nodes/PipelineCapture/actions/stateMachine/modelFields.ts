/** The Model and Model Version fields of State Machine → Import and Export: which entity model's definitions (seed 004). */
import type { FieldInit } from '../../../shared/node/fields';

export const MODEL_FIELDS: FieldInit[] = [
	{
		displayName: 'Model',
		name: 'model',
		default: 'pipeline_runs',
		description: 'Entity model the definitions belong to',
	},
	{
		displayName: 'Model Version',
		name: 'modelVersion',
		type: 'number',
		default: 1,
		description: 'Version of the model',
	},
];
