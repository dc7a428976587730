/**
 * Analysis → Save Error (seed 000 §3.1 step 5b): an "ai_error" artifact linked to the atom
 * (semantic_links, type "failed_for") and to the prompt (created_with), so a failed model call is
 * recorded in the graph, never lost.
 *
 * Input: `target_atom_id`, `prompt_id` (optional), `model`, `temperature`, `request_id`, `status_code`
 * (the model's HTTP status, empty when there was no answer), `response_text`, `error_message`, `user_id` (the
 * Identity fields; in A3.1 "User ID Field" = Load Context's `requested_by`, the verified token's claim —
 * issue 25: stored as the artifact's and its edges' `created_by`).
 * Output data (201): `{ success: false, error_code, error_artifact_id, target_missing }` — `success:
 * false` is the analysis outcome; recording it succeeded.
 * A target atom that does not exist (deleted, mistyped id) still gets its artifact, so no AI failure is
 * lost (issue 13; the seed's 5b assumes the atom exists): `error_details.target_atom_id` names it,
 * `target_missing: true` is set on the artifact and in the output, and no `failed_for` edge is written
 * (no edge to a document that is not there). The answer stays 201: the recording succeeded.
 * Classification (`classifyAiError`, seed 000 5b): no status → TIMEOUT; status ≥ 500 → MODEL_ERROR;
 * response text or error message containing "invalid json" (any case) → INVALID_JSON; else NETWORK_ERROR.
 * Errors: 422 invalid input. One AQL query.
 */
import { z } from 'zod';
import { ContractError } from '../../../shared/errors';
import { assertOk } from '../outcome';
import { ANALYSED_ATOM_FIELD, ARTIFACTS_INSERT, insertArtifacts } from './artifacts';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection, keyIn } from '../inputs';
import { fieldsOf } from '../../../shared/node/fields';
import { identityFieldsSinceV2, withUserIdSinceV2 } from '../identitySinceV2';
import type { Operation } from '../types';

export type AiErrorCode = 'TIMEOUT' | 'MODEL_ERROR' | 'INVALID_JSON' | 'NETWORK_ERROR';

/** The §3.1 5b error classification. */
export function classifyAiError(
	statusCode: number | null,
	responseText: string | null,
	errorMessage: string | null,
): AiErrorCode {
	if (statusCode === null) return 'TIMEOUT';
	if (statusCode >= 500) return 'MODEL_ERROR';
	if (/invalid json/i.test(`${responseText ?? ''}\n${errorMessage ?? ''}`)) return 'INVALID_JSON';
	return 'NETWORK_ERROR';
}

/** Seconds the model call may take (the HTTP Request node's timeout of the 3.1 workflow). */
export const AI_TIMEOUT_SECONDS = 60;

export const SAVE_ERROR_AQL = `LET now = DATE_NOW()
LET atom = DOCUMENT("atoms", @target_key)
LET prompt = @prompt_key == null ? null : DOCUMENT("prompts", @prompt_key)
LET error_artifact = FIRST(
  FOR x IN [1]
    INSERT {
      type: "ai_error",
      error_code: @error_code,
      error_message: @error_message,
      status: "open",
      created_at: now,
      created_by: @user_id,
      target_missing: atom == null,
      error_details: {
        target_atom_id: CONCAT("atoms/", @target_key),
        prompt_id: prompt._id,
        model: @model,
        temperature: @temperature,
        timeout_seconds: @timeout_seconds,
        request_id: @request_id,
        status_code: @status_code,
        raw_response: @response_text
      }
    } INTO artifacts
    RETURN NEW
)
LET failed_for = FIRST(
  FOR a IN ((error_artifact == null OR atom == null) ? [] : [error_artifact])
    INSERT { _from: a._id, _to: atom._id, type: "failed_for", created_at: now, created_by: @user_id } INTO semantic_links
    RETURN NEW._id
)
LET created_with_edge = FIRST(
  FOR a IN ((error_artifact == null OR prompt == null) ? [] : [error_artifact])
    INSERT { _from: a._id, _to: prompt._id, type: "created_with", created_at: now, created_by: @user_id } INTO created_with
    RETURN NEW._id
)
RETURN { outcome: error_artifact == null ? "NOT_FOUND" : "OK", target_missing: atom == null, error_artifact_id: error_artifact._id }`;

const nullableText = (max: number) =>
	z
		.union([z.string(), z.number(), z.boolean()])
		.nullish()
		.transform((v) => (v === null || v === undefined || v === '' ? null : String(v).slice(0, max)));

export const SaveErrorInput = withUserIdSinceV2({
	target_atom_id: keyIn('atoms'),
	prompt_id: keyIn('prompts')
		.nullish()
		.transform((v) => v ?? null),
	model: nullableText(256),
	temperature: z.coerce
		.number()
		.nullish()
		.transform((v) => (v === undefined || Number.isNaN(v) ? null : v)),
	request_id: nullableText(256),
	status_code: z
		.union([z.number(), z.string()])
		.nullish()
		.transform((v, refinement) => {
			if (v === null || v === undefined || v === '') return null;
			const n = Number(v);
			if (!Number.isInteger(n) || n < 100 || n > 599) {
				refinement.addIssue({ code: z.ZodIssueCode.custom, message: 'must be an HTTP status (100–599) or empty' });
				return z.NEVER;
			}
			return n;
		}),
	response_text: nullableText(100_000),
	error_message: nullableText(10_000),
});

const ref = { resource: 'analysis', operation: 'saveError' };

export const saveError: Operation = {
	value: 'saveError',
	name: 'Save Error',
	action: 'Save an analysis error',
	description:
		'Record a failed model call as an ai_error artifact (§3.1 5b: TIMEOUT, MODEL_ERROR, INVALID_JSON, NETWORK_ERROR)',
	fields: fieldsOf(ref, [
		ANALYSED_ATOM_FIELD,
		{
			displayName: 'Prompt ID',
			name: 'promptId',
			description: 'The prompts/&lt;key&gt; ID of the prompt used (empty: no created_with edge)',
		},
		{ displayName: 'Model', name: 'model', description: 'The model that was called' },
		{ displayName: 'Temperature', name: 'temperature', description: 'The temperature of the call' },
		{ displayName: 'Request ID', name: 'requestId', description: 'Tracking id of the analysis run' },
		{
			displayName: 'Status Code',
			name: 'statusCode',
			default: '={{ $json.error ? ($json.error.httpCode || $json.error.status || "") : ($json.statusCode || "") }}',
			description: "HTTP status of the model's answer; empty when it never answered (→ TIMEOUT)",
		},
		{
			displayName: 'Response Text',
			name: 'responseText',
			default:
				'={{ typeof $json.response === "string" ? $json.response : JSON.stringify($json.response || $json.body || "") }}',
			description: 'Raw answer of the model (stored in error_details.raw_response)',
		},
		{
			displayName: 'Error Message',
			name: 'errorMessage',
			default: '={{ $json.error ? ($json.error.message || String($json.error)) : "" }}',
			description: 'What went wrong, as the HTTP Request node reported it',
		},
		...identityFieldsSinceV2('Who asked for the analysis (stored as created_by on the ai_error artifact)'),
	]),
	async execute(db, raw) {
		const input = parseInput(SaveErrorInput, raw, inCollection('artifacts'));
		const errorCode = classifyAiError(input.status_code, input.response_text, input.error_message);
		const row = await insertArtifacts(db, SAVE_ERROR_AQL, input, {
			error_code: errorCode,
			error_message: input.error_message,
			model: input.model,
			temperature: input.temperature,
			timeout_seconds: AI_TIMEOUT_SECONDS,
			request_id: input.request_id,
			status_code: input.status_code,
			response_text: input.response_text,
		});
		// NOT_FOUND here means the artifact itself was not written (never expected): a 500 names it.
		if (row?.outcome === 'NOT_FOUND')
			throw ContractError.db(
				`ArangoDB wrote no ai_error artifact for atoms/${input.target_atom_id}`,
				{ code: 'NO_RESULT' },
				ARTIFACTS_INSERT,
			);
		assertOk(row, `analysis error for atoms/${input.target_atom_id}`, {}, ARTIFACTS_INSERT);
		return {
			statusCode: 201,
			data: {
				success: false,
				error_code: errorCode,
				error_artifact_id: row.error_artifact_id,
				target_missing: row.target_missing === true,
			},
		};
	},
};
