/**
 * Model → Generate: one call to the model of the Contracts LLM API credential (OpenAI- or
 * Ollama-compatible) with the retry policy of seed 001 and issue 26 (docs/retry-safety.md "LLM calls: retry
 * policy"): timeouts and 500/502/503/504 retried with exponential backoff (±20 % jitter, at most 30 s),
 * 429 after the rate-limit wait (60 s by default), a server's Retry-After honoured up to 60 s, at most
 * `max_retries` times (≤ 10), the whole call within its deadline (`deadline_ms`; 0: timeout × (1 + max
 * retries), at most 300 000 ms): a wait that would pass it fails the call at once (504 retryable). n8n's
 * execution cancel signal, when the running n8n offers one, ends a wait at once.
 * Every HTTP attempt is recorded as a `maas.llm_calls` row (seed 001 §9; nodes/shared/llm/calls.ts) with
 * the Run ID and Step fields (by default Load Step Context's `run_id` and `step`; Step empty: the Workflow
 * Label), right after the attempt in its own statement — Generate runs outside any step transaction.
 * Output: `{ text, json (when JSON was asked for), model, attempts, call_id, records_lost }` — call_id
 * joins the call's llm_calls rows; records_lost counts attempts whose row could not be written (the
 * answer is returned all the same).
 * Errors: 504 upstream retryable (retries spent), 429 rate_limit retryable, 502 fatal model answer,
 * 422 INVALID_JSON (JSON asked, prose answered).
 */
import { fieldsOf, type DirectDefault } from '../../../shared/node/fields';
import { callRecorder } from '../../../shared/llm/calls';
import { DEFAULT_RETRY, generate } from '../../../shared/llm/generate';
import type { PipelineOperation } from '../types';

/** Default of the Run ID field: Load Step Context's `run_id`. */
export const RUN_ID_DEFAULT = '={{ ($json.data || {}).run_id || "" }}';
/** Default of the Step field: Load Step Context's `step`. */
export const STEP_DEFAULT = '={{ ($json.data || {}).step || "" }}';

/** `={{ ($json.data || {}).<key> || "" }}` (RUN_ID_DEFAULT, STEP_DEFAULT) as JavaScript. */
export function fromData(key: string): DirectDefault {
	return (json) => ((json.data || {}) as Record<string, unknown>)[key] || '';
}

export const generateOperation: PipelineOperation = {
	value: 'generate',
	name: 'Generate',
	action: 'Generate a model answer',
	description: 'Call the model with retries (timeouts, rate limits) and optional JSON parsing',
	fields: fieldsOf({ resource: 'model', operation: 'generate' }, [
		{
			displayName: 'System Prompt',
			name: 'system',
			typeOptions: { rows: 3 },
			default: '={{ $json.data.prompt || "" }}',
			description: "The role's instructions (system message)",
		},
		{
			displayName: 'Input',
			name: 'input',
			required: true,
			typeOptions: { rows: 3 },
			default: '={{ $json.data.user_query }}',
			description: 'The content to answer (user message)',
		},
		{ displayName: 'Model', name: 'model', default: '', description: "Model name; empty: the credential's default" },
		{
			displayName: 'Expect JSON',
			name: 'expectJson',
			type: 'boolean',
			default: false,
			description: 'Whether to ask for a JSON answer and parse it (prose answers fail with INVALID_JSON)',
		},
		{
			displayName: 'Temperature',
			name: 'temperature',
			type: 'number',
			default: 0.7,
			description: 'Sampling temperature',
		},
		{
			displayName: 'Max Tokens',
			name: 'maxTokens',
			type: 'number',
			default: 2000,
			description: 'Most tokens the model may answer',
		},
		{
			displayName: 'Timeout (Ms)',
			name: 'timeoutMs',
			type: 'number',
			default: 30000,
			description: "Per-attempt timeout in milliseconds (cut to what is left of the call's deadline)",
		},
		{
			displayName: 'Max Retries',
			name: 'maxRetries',
			type: 'number',
			default: 3,
			description: "Retries after a timeout, a 500/502/503/504 or a 429 (at most 10), while the call's deadline allows",
		},
		{
			displayName: 'Deadline (Ms)',
			name: 'deadlineMs',
			type: 'number',
			default: 0,
			description:
				'Longest the whole call may last in milliseconds, attempts and waits together; 0: Timeout × (1 + Max Retries). At most 300000. A wait that would end past it fails the call at once (504, retryable).',
		},
		{
			displayName: 'Backoff Base (Ms)',
			name: 'backoffBaseMs',
			type: 'number',
			default: 1000,
			description: 'First retry delay in milliseconds; doubles each retry (±20 % jitter, never more than 30 s)',
		},
		{
			displayName: 'Rate Limit Wait (Ms)',
			name: 'rateLimitWaitMs',
			type: 'number',
			default: 60000,
			description:
				"Wait in milliseconds after a 429 without Retry-After (a server's Retry-After is waited up to 60 s instead)",
		},
		{
			displayName: 'Run ID',
			name: 'runId',
			default: RUN_ID_DEFAULT,
			description: 'The pipeline run this call is for, recorded with each attempt (empty: none)',
		},
		{
			displayName: 'Step',
			name: 'step',
			default: STEP_DEFAULT,
			description:
				'Module label recorded with each attempt (analysis, assembly, response, archive); empty: the Workflow Label',
		},
	]),
	// the defaults of Run ID and Step, as n8n would evaluate them (issue 29 P7: two expressions fewer per call)
	directDefaults: { runId: fromData('run_id'), step: fromData('step') },
	async execute(deps, input) {
		const { credential, send, signal } = await deps.llm();
		const recorder = callRecorder(deps.pool, {
			runId: input.run_id,
			module: (typeof input.step === 'string' && input.step) || deps.origin?.workflow || 'unknown',
		});
		const num = (value: unknown, fallback: number) =>
			typeof value === 'number' && Number.isFinite(value) ? value : fallback;
		const result = await generate(
			credential,
			{
				system: String(input.system ?? ''),
				input: typeof input.input === 'string' ? input.input : JSON.stringify(input.input ?? ''),
				model: typeof input.model === 'string' ? input.model : undefined,
				temperature: num(input.temperature, 0.7),
				maxTokens: num(input.max_tokens, 2000),
				expectJson: input.expect_json === true,
			},
			{
				timeoutMs: num(input.timeout_ms, DEFAULT_RETRY.timeoutMs),
				maxRetries: num(input.max_retries, DEFAULT_RETRY.maxRetries),
				backoffBaseMs: num(input.backoff_base_ms, DEFAULT_RETRY.backoffBaseMs),
				rateLimitWaitMs: num(input.rate_limit_wait_ms, DEFAULT_RETRY.rateLimitWaitMs),
				...(typeof input.deadline_ms === 'number' && input.deadline_ms > 0 ? { deadlineMs: input.deadline_ms } : {}),
				signal,
			},
			send,
			recorder.observe,
		);
		return {
			data: {
				text: result.text,
				json: result.json as Record<string, unknown> | null,
				model: result.model,
				attempts: result.attempts,
				call_id: recorder.callId,
				records_lost: recorder.failures(),
			},
			output: 0,
		};
	},
};
