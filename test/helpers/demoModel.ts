/**
 * The demo's model stand-in answers (scripts/demo/standIns.ts, one ModelStandIn behind the "Contracts LLM" credential
 * llmContracts01): a WF51 question (its prompt numbers the sources, `[1] …`) gets the extractive answer
 * (extractiveAnswer.ts: quotes and cites `[n]` the sources holding the question's words); every other request is a MaaS pipeline step (M11 Analyzer, M12 Assembler,
 * M13 Final Responder, M14 Archivist) and gets maasModel.ts's `normalModel` answer. No network, no randomness.
 */
import { extractiveAnswer, firstSource } from './extractiveAnswer';
import { normalModel } from './maasModel';
import type { ModelReply } from './modelStandIn';

/** The last user message of an OpenAI-compatible body, or an Ollama-compatible `prompt` ('' when neither). */
function userText(body: Record<string, unknown>): string {
	if (typeof body.prompt === 'string') return body.prompt;
	const messages = Array.isArray(body.messages) ? (body.messages as { role?: string; content?: unknown }[]) : [];
	const user = [...messages].reverse().find((m) => m.role === 'user');
	return typeof user?.content === 'string' ? user.content : '';
}

/** Set as `model.respond = demoModel`: WF51's questions → extractiveAnswer, MaaS steps → normalModel. */
export function demoModel(body: Record<string, unknown>): ModelReply {
	if (firstSource(userText(body)) !== null || !Array.isArray(body.messages) || body.messages.length < 2)
		return extractiveAnswer(body);
	return normalModel(body);
}
