/**
 * Run → Load Step Context: what a step's model call needs (seed 001): analysis → `{ user_query, prompt
 * (Analyzer), lsm: last 20 rows, possibly [] }`; assembly → the four-element draft `{ draft_context,
 * tokens, truncated, assembler_prompt }` cut to 8000 tokens; response → `{ final_context_payload, prompt
 * (Mentor) }`; archive → `{ user_query, final_answer, prompt (Archivist) }`.
 * Errors: 404 unknown run; 422; 503.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { parseInput } from '../../../shared/contracts/input';
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { ContractError } from '../../../shared/errors';
import {
	CONTEXT_ANALYSIS,
	CONTEXT_ARCHIVE,
	CONTEXT_ASSEMBLY,
	CONTEXT_RESPONSE,
} from '../../../shared/statements/pipelineRuns';
import { PIPELINE_INPUT, query, RUNS, RunId } from './runRow';

/** Seed 001 step 2.2: the assembled context must fit 8000 tokens (estimated as characters / 4). */
export const TOKEN_LIMIT = 8000;
const CHARS_PER_TOKEN = 4;

/**
 * The draft of seed 001 step 2.1: element 1 the query, element 2 the history (last 10 raw_logs, the
 * analysis, the LSM summaries), element 3 the Mentor prompt, element 4 the Assembler prompt, concatenated.
 * Over `tokenLimit`, element 2 is cut from its oldest end first, then the whole draft.
 */
export function buildDraft(
	parts: { query: string; history: string; mentor: string; assembler: string },
	tokenLimit = TOKEN_LIMIT,
) {
	const frame = (history: string) =>
		`## Element 1: query\n${parts.query}\n\n## Element 2: history\n${history}\n\n## Element 3: role\n${parts.mentor}\n\n## Element 4: assembler\n${parts.assembler}`;
	const maxChars = tokenLimit * CHARS_PER_TOKEN;
	let draft = frame(parts.history);
	let truncated = false;
	if (draft.length > maxChars) {
		truncated = true;
		const room = Math.max(0, maxChars - frame('').length);
		draft = frame(room > 0 ? parts.history.slice(parts.history.length - room) : '');
		if (draft.length > maxChars) draft = draft.slice(0, maxChars);
	}
	return { draft_context: draft, tokens: Math.ceil(draft.length / CHARS_PER_TOKEN), truncated };
}

export type Step = 'analysis' | 'assembly' | 'response' | 'archive';

/** What Load Step Context validates: the run (a UUID) and the step (a Step). */
const StepContextInput = z.object({
	run_id: RunId,
	step: z.enum(['analysis', 'assembly', 'response', 'archive'], {
		errorMap: () => ({ message: 'must be analysis, assembly, response or archive' }),
	}),
});

/**
 * Load Step Context: what the step's model call needs (seed 001 steps 1–3 and the Archivist).
 * analysis → `{ user_query, prompt, lsm }` (lsm may be empty: the Analyzer continues without context);
 * assembly → `{ draft_context, tokens, truncated, assembler_prompt }`; response → `{ final_context_payload,
 * prompt }`; archive → `{ user_query, final_answer, prompt }`. Missing prompts are null.
 * @throws 404 unknown run; 422 run_id not a UUID, step not one of the four
 */
export async function loadStepContext(
	pool: Pool,
	input: { run_id: unknown; step: Step },
): Promise<Record<string, unknown>> {
	const { run_id: id, step } = parseInput(StepContextInput, input, PIPELINE_INPUT);
	const sql = {
		analysis: CONTEXT_ANALYSIS,
		assembly: CONTEXT_ASSEMBLY,
		response: CONTEXT_RESPONSE,
		archive: CONTEXT_ARCHIVE,
	}[step];
	const [row] = await query<Record<string, unknown>>(pool, sql, [id], 'select');
	if (!row)
		throw ContractError.notFound(
			`pipeline run ${id} does not exist`,
			{ code: 'NOT_FOUND', run_id: id },
			{ operation: 'select', ...RUNS },
		);
	if (step !== 'assembly') return { run_id: id, step, ...row };
	const history = [
		...(row.history as { message_type: string; content: string }[])
			.reverse()
			.map((h) => `[${h.message_type}] ${h.content}`),
		...(row.analysis_result ? [`[analysis] ${JSON.stringify(row.analysis_result)}`] : []),
		...(row.lsm as { summary: string; tags: string[] }[]).map((l) => `[memory ${l.tags.join(',')}] ${l.summary}`),
	].join('\n');
	const draft = buildDraft({
		query: String(row.user_query),
		history,
		mentor: String(row.mentor_prompt ?? ''),
		assembler: String(row.assembler_prompt ?? ''),
	});
	return {
		run_id: id,
		step,
		user_id: row.user_id,
		user_query: row.user_query,
		assembler_prompt: row.assembler_prompt ?? null,
		...draft,
	};
}

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
