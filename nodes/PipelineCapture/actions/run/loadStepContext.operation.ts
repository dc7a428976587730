/**
 * Run → Load Step Context: what a step's model call needs (seed 001): analysis → `{ user_query, prompt
 * (Analyzer), lsm: last 20 rows, possibly [] }`; assembly → the four-element draft `{ draft_context,
 * tokens, truncated, assembler_prompt }` cut to 8000 tokens; response → `{ final_context_payload, prompt
 * (Mentor) }`; archive → `{ user_query, final_answer, prompt (Archivist) }`.
 * Errors: 404 unknown run; 422; 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { loadStepContext, type Step } from './runs';

export const loadStepContextOperation: PipelineOperation = {
	value: 'loadStepContext',
	name: 'Load Step Context',
	action: 'Load the context of a pipeline step',
	description: "Read the prompt, history and memory a step's model call needs",
	fields: fieldsOf({ resource: 'run', operation: 'loadStepContext' }, [
		{
			displayName: 'Run ID',
			name: 'runId',
			required: true,
			default: '={{ $json.data ? $json.data.run_id : $json.id }}',
			description: 'The pipeline run',
		},
		{
			displayName: 'Step',
			name: 'step',
			type: 'options',
			options: [
				{ name: 'Analysis', value: 'analysis' },
				{ name: 'Archive', value: 'archive' },
				{ name: 'Assembly', value: 'assembly' },
				{ name: 'Response', value: 'response' },
			],
			default: 'analysis',
			description: 'Which step the context is for',
		},
	]),
	async execute(deps, input) {
		return { data: await loadStepContext(deps.pool, { run_id: input.run_id, step: input.step as Step }), output: 0 };
	},
};
