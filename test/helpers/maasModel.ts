/**
 * The stand-in model's answers for the MaaS pipeline (M11 Analyzer, M12 Assembler, M13 Final Responder,
 * M14 Archivist), for a ModelStandIn (test/helpers/modelStandIn.ts) serving the "Contracts LLM" credential.
 * Which step a request is for is told from the request alone: `response_format` → Analyzer; the system
 * prompt "Summarise this exchange" → Archivist, "Optimise the draft" → Assembler; anything else → Responder.
 */
import type { ModelReply } from './modelStandIn';

/** A MaaS pipeline step, as told from a model request by stepOf. */
export type MaasStep = 'analyzer' | 'archivist' | 'assembler' | 'responder';

/** The message texts of an OpenAI-style chat request body: `messages[0]` is the system prompt, `messages[1]` the user's. */
function messagesOf(body: Record<string, unknown>): { role: string; content: string }[] {
	return body.messages as { role: string; content: string }[];
}

/** Which pipeline step a model request (its JSON body) is for. */
export function stepOf(body: Record<string, unknown>): MaasStep {
	const system = messagesOf(body)[0].content;
	if (body.response_format) return 'analyzer';
	if (/Summarise this exchange/.test(system)) return 'archivist';
	if (/Optimise the draft/.test(system)) return 'assembler';
	return 'responder';
}

/**
 * The normal answers, by step: the Analyzer gets JSON needing no context; the Archivist
 * `Summary: <first 60 chars of the user message>`; the Assembler `<context><first 200 chars></context>`;
 * the Responder `Answer to: <first 120 chars>`. Set as `model.respond = normalModel`.
 */
export function normalModel(body: Record<string, unknown>): ModelReply {
	const user = messagesOf(body)[1].content;
	switch (stepOf(body)) {
		case 'analyzer':
			return {
				text: JSON.stringify({
					needs_context: false,
					context_type: 'none',
					time_scope: 'now',
					search_keywords: [],
					context_found: {},
				}),
			};
		case 'archivist':
			return { text: `Summary: ${user.slice(0, 60)}` };
		case 'assembler':
			return { text: `<context>${user.slice(0, 200)}</context>` };
		default:
			return { text: `Answer to: ${user.slice(0, 120)}` };
	}
}

/** A model that always fails: HTTP 503 (retryable) to every request. Set as `model.respond = failingModel`. */
export function failingModel(): ModelReply {
	return { status: 503 };
}

/**
 * The "Contracts LLM" credential (id llmContracts01, type contractsLlmApi) the shipped MaaS workflows use,
 * pointing at the stand-in model at `baseUrl` (OpenAI-compatible, a dummy key, model "stand-in"): one of
 * the extra credentials of startN8n / startQueueN8n.
 */
export function llmCredential(baseUrl: string) {
	return {
		id: 'llmContracts01',
		name: 'Contracts LLM',
		type: 'contractsLlmApi',
		data: { api: 'openai', baseUrl, apiKey: 'sk-stand-in', model: 'stand-in' },
	};
}
