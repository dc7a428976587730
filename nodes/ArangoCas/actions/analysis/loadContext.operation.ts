/**
 * Analysis → Load Context (seed 000 §3.1 steps 1–2): the atom's text, the newest active prompt of the
 * agent role and, for the `fixer` role, the open issues detected in the atom; then the LLM payload.
 *
 * Input: `target_atom_id`, `agent_role_key`, `user_id` (the Identity fields: the verified token's claim by
 * default; 401/403 kind auth, see shared/node/identity.ts — issue 25: checked here, before the model is called).
 * Output data: `{ model, temperature, prompt, response_format, prompt_id, target_atom_id, request_id,
 * issues_context: [{ severity, description }], requested_by }` — `requested_by` is the user, for Save Result
 * and Save Error to store as their artifacts' `created_by`; — `prompt` is the template with `{{content}}` (the atom
 * text) and `{{issues_context}}` ("- [SEVERITY] description" lines) filled in; `request_id` is the n8n
 * execution id. Ready for an Ollama-compatible `/api/generate` call.
 * Errors: 404 NOT_FOUND (`missing`: the atom, or `prompts?role_key=<role>` when no active prompt);
 * 422 invalid input. One read-only AQL query; it declares the traversal's vertex collections
 * (`WITH atoms, artifacts`: a cluster refuses an undeclared one, error 1521).
 */
import { assertOk, missingFrom, type OutcomeRow } from '../outcome';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection, keyIn, requiredText } from '../inputs';
import { fieldsOf } from '../../../shared/node/fields';
import { identityFieldsSinceV2, withUserIdSinceV2 } from '../identitySinceV2';
import { runQuery } from '../../transport/query';
import type { Operation } from '../types';
import { isRecord } from '../../../shared/json';

export const LOAD_CONTEXT_AQL = `WITH atoms, artifacts
LET atom = DOCUMENT("atoms", @target_key)
LET prompt = FIRST(
  FOR p IN prompts
    FILTER p.role_key == @agent_role_key AND p.active == true
    SORT p.version DESC
    LIMIT 1
    RETURN p
)
LET issues_context = @agent_role_key == "fixer" ? (
  FOR artifact IN 1..1 INBOUND CONCAT("atoms/", @target_key) semantic_links
    FILTER artifact.type == "issue" AND artifact.status == "open"
    RETURN { severity: artifact.severity, description: artifact.content }
) : []
RETURN {
  outcome: atom == null OR prompt == null ? "NOT_FOUND" : "OK",
  atom_exists: atom != null,
  prompt_exists: prompt != null,
  atom_text: atom.content,
  prompt: prompt,
  issues_context: issues_context
}`;

export const LoadContextInput = withUserIdSinceV2({
	target_atom_id: keyIn('atoms'),
	agent_role_key: requiredText(128),
});

export interface Issue {
	severity: unknown;
	description: unknown;
}

/**
 * Fills a prompt template (seed 000 §3.1 step 2): every `{{content}}` becomes the atom text and, when
 * there are issues, every `{{issues_context}}` becomes one "- [SEVERITY] description" line per issue.
 */
export function renderPrompt(template: string, atomText: string, issues: Issue[]): string {
	let text = template.split('{{content}}').join(atomText);
	if (issues.length > 0) {
		const lines = issues.map((i) => `- [${String(i.severity).toUpperCase()}] ${String(i.description)}`).join('\n');
		text = text.split('{{issues_context}}').join(lines);
	}
	return text;
}

const ref = { resource: 'analysis', operation: 'loadContext' };

export const loadContext: Operation = {
	value: 'loadContext',
	name: 'Load Context',
	action: 'Load the analysis context',
	description:
		'Fetch the atom, the active prompt of the role and (fixer) the open issues, and build the LLM payload (§3.1)',
	fields: fieldsOf(ref, [
		{ displayName: 'Target Atom ID', name: 'targetAtomId', required: true, description: 'Key of the atom to analyse' },
		{
			displayName: 'Agent Role Key',
			name: 'agentRoleKey',
			required: true,
			description: 'The prompts.role_key of the agent, e.g. tech_lead or fixer',
		},
		...identityFieldsSinceV2('Who asks for the analysis (output as requested_by)'),
	]),
	async execute(db, raw, run) {
		const input = parseInput(LoadContextInput, raw, inCollection('prompts'));
		const where = { operation: 'select', collection: 'prompts' };
		const { rows } = await runQuery<OutcomeRow>(db, {
			query: LOAD_CONTEXT_AQL,
			bindVars: { target_key: input.target_atom_id, agent_role_key: input.agent_role_key },
			...where,
		});
		const row = rows[0];
		const missing = missingFrom(row, {
			atom_exists: `atoms/${input.target_atom_id}`,
			prompt_exists: `prompts?role_key=${input.agent_role_key}`,
		});
		assertOk(
			row,
			`analysis context of atoms/${input.target_atom_id}`,
			{ NOT_FOUND: { missing } },
			{ ...where, collection: row?.atom_exists === false ? 'atoms' : 'prompts' },
		);
		const prompt = isRecord(row.prompt) ? row.prompt : {};
		const config = isRecord(prompt.model_config) ? prompt.model_config : {};
		const issues = (Array.isArray(row.issues_context) ? row.issues_context : []) as Issue[];
		return {
			statusCode: 200,
			data: {
				model: config.model ?? null,
				temperature: config.temperature ?? null,
				prompt: renderPrompt(String(prompt.template ?? ''), String(row.atom_text ?? ''), issues),
				response_format: config.response_format ?? null,
				prompt_id: prompt._id ?? null,
				target_atom_id: input.target_atom_id,
				request_id: run.executionId,
				issues_context: issues,
				requested_by: input.user_id,
			},
		};
	},
};
