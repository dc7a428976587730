/**
 * Analysis → Save Result (seed 000 §3.1 step 5a): one "issue" artifact per issue the model found, each
 * linked to the atom (semantic_links, type "detected_in") and to the prompt that produced it
 * (created_with). No CAS: only new documents are inserted.
 *
 * Input: `target_atom_id`, `prompt_id` (prompts/<key>), `model`, `request_id`, `ai_response` — the
 * model's answer: an object `{ issues: [{ description, severity }] }` or its JSON text (Ollama's
 * `response` field); `user_id` (the Identity fields; in A3.1 "User ID Field" = Load Context's `requested_by`,
 * the verified token's claim — issue 25: stored as every artifact's and edge's `created_by`).
 * Output data (201): `{ success: true, artifacts_created, artifact_ids }`.
 * Errors: 422 INVALID_JSON when `ai_response` is not JSON or lacks `issues` (the message says
 * "invalid JSON", which Save Error classifies as INVALID_JSON); 404 NOT_FOUND (atom or prompt);
 * 422 invalid input. One AQL query: all artifacts and edges are written together or not at all.
 */
import { z } from 'zod';
import { ContractError } from '../../../shared/errors';
import { assertOk, missingFrom } from '../outcome';
import { ANALYSED_ATOM_FIELD, ARTIFACTS_INSERT, insertArtifacts } from './artifacts';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection, keyIn } from '../inputs';
import { fieldsOf } from '../../../shared/node/fields';
import { identityFieldsSinceV2, withUserIdSinceV2 } from '../identitySinceV2';
import { succeeded } from '../result';
import type { Operation } from '../types';

export const SAVE_RESULT_AQL = `LET now = DATE_NOW()
LET atom = DOCUMENT("atoms", @target_key)
LET prompt = DOCUMENT("prompts", @prompt_key)
LET outcome = (atom == null OR prompt == null) ? "NOT_FOUND" : "OK"
LET created = (
  FOR item IN (outcome == "OK" ? @issues : [])
    INSERT {
      type: "issue",
      content: item.description,
      severity: item.severity,
      status: "open",
      source_model: @model,
      request_id: @request_id,
      created_at: now,
      created_by: @user_id
    } INTO artifacts
    LET artifact = NEW
    INSERT { _from: artifact._id, _to: atom._id, type: "detected_in", created_at: now, created_by: @user_id } INTO semantic_links
    INSERT { _from: artifact._id, _to: prompt._id, type: "created_with", created_at: now, created_by: @user_id } INTO created_with
    RETURN artifact._id
)
RETURN { outcome: outcome, atom_exists: atom != null, prompt_exists: prompt != null, artifact_ids: created }`;

/** The model's answer (seed 000 §3.1 5a): `issues` is required, other keys are kept. */
export const AiResponse = z
	.object({
		issues: z.array(
			z
				.object({
					description: z.string({ required_error: 'is required' }).min(1, 'is required'),
					severity: z.string({ required_error: 'is required' }).min(1, 'is required'),
				})
				.passthrough(),
		),
	})
	.passthrough();

/** Parses the model's answer; a string is JSON-parsed. @throws ContractError 422 INVALID_JSON */
export function parseAiResponse(value: unknown): z.infer<typeof AiResponse> {
	let parsed = value;
	if (typeof value === 'string') {
		try {
			parsed = JSON.parse(value);
		} catch (error) {
			throw ContractError.validation(
				`invalid JSON in ai_response: ${(error as Error).message}`,
				{
					code: 'INVALID_JSON',
					field: 'ai_response',
				},
				{ operation: 'validate', collection: 'artifacts' },
			);
		}
	}
	const result = AiResponse.safeParse(parsed);
	if (!result.success) {
		const issue = result.error.issues[0];
		const field = ['ai_response', ...issue.path].join('.');
		throw ContractError.validation(
			`invalid JSON in ai_response: ${field} ${issue.message}`,
			{
				code: 'INVALID_JSON',
				field,
			},
			{ operation: 'validate', collection: 'artifacts' },
		);
	}
	return result.data;
}

export const SaveResultInput = withUserIdSinceV2({
	target_atom_id: keyIn('atoms'),
	prompt_id: keyIn('prompts'),
	model: z
		.string()
		.max(256)
		.nullish()
		.transform((v) => v ?? null),
	request_id: z
		.union([z.string(), z.number()])
		.nullish()
		.transform((v) => (v === null || v === undefined ? null : String(v))),
	ai_response: z.unknown(),
});

const ref = { resource: 'analysis', operation: 'saveResult' };

export const saveResult: Operation = {
	value: 'saveResult',
	name: 'Save Result',
	action: 'Save the analysis result',
	description: 'Store the issues the model found as artifacts linked to the atom and the prompt (§3.1 5a)',
	fields: fieldsOf(ref, [
		ANALYSED_ATOM_FIELD,
		{
			displayName: 'Prompt ID',
			name: 'promptId',
			required: true,
			description: 'The prompts/&lt;key&gt; ID of the prompt used',
		},
		{ displayName: 'Model', name: 'model', description: 'The model that answered (artifacts.source_model)' },
		{
			displayName: 'Request ID',
			name: 'requestId',
			description: 'Tracking id of the analysis run (the execution id of Load Context)',
		},
		{
			displayName: 'AI Response',
			name: 'aiResponse',
			required: true,
			default: '={{ $json.response }}',
			description: 'The model\'s answer: { "issues": [{ "description", "severity" }] } as an object or JSON text',
		},
		...identityFieldsSinceV2('Who asked for the analysis (stored as created_by on the artifacts)'),
	]),
	async execute(db, raw) {
		const input = parseInput(SaveResultInput, raw, inCollection('artifacts'));
		const response = parseAiResponse(input.ai_response);
		const row = await insertArtifacts(db, SAVE_RESULT_AQL, input, {
			model: input.model,
			request_id: input.request_id,
			issues: response.issues.map((i) => ({ description: i.description, severity: i.severity })),
		});
		const missing = missingFrom(row, {
			atom_exists: `atoms/${input.target_atom_id}`,
			prompt_exists: `prompts/${input.prompt_id}`,
		});
		assertOk(row, `analysis result for atoms/${input.target_atom_id}`, { NOT_FOUND: { missing } }, ARTIFACTS_INSERT);
		const ids = Array.isArray(row.artifact_ids) ? row.artifact_ids : [];
		return succeeded({ artifacts_created: ids.length, artifact_ids: ids }, 201);
	},
};
