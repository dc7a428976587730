/**
 * A deterministic stand-in for the model's answer (the demo's ModelStandIn `respond`): it reads the
 * numbered sources WF51 puts in the prompt (`Sources:\n[1] <title> <url>\n<chunk text>\n\n[2] …\n\nQuestion: …`)
 * and answers with the first sentence of source [1] (at most 200 characters), cited `[1]` — what a
 * careful model would say when the nearest source holds the answer. No network, no randomness.
 * Works on an OpenAI-compatible body (`messages[].content`) and an Ollama-compatible one (`prompt`).
 * With no `[1]` source in the prompt it answers that it does not know (WF51 never asks then).
 */

/** The user part of a chat/completions or /api/generate request body. */
function promptOf(body: Record<string, unknown>): string {
	if (typeof body.prompt === 'string') return body.prompt;
	const messages = Array.isArray(body.messages) ? (body.messages as { role?: string; content?: unknown }[]) : [];
	const user = [...messages].reverse().find((m) => m.role === 'user');
	return typeof user?.content === 'string' ? user.content : '';
}

/** The text of source `[1]` (the lines after its header, up to the next source or the question). */
export function firstSource(prompt: string): string | null {
	const match = /^\[1\][^\n]*\n([\s\S]*?)(?=\n\n\[\d+\] |\n\nQuestion: |$)/m.exec(prompt);
	return match ? match[1].trim() : null;
}

export function extractiveAnswer(body: Record<string, unknown>): { text: string } {
	const source = firstSource(promptOf(body));
	if (!source) return { text: 'I do not know: the sources do not say.' };
	const flat = source.replace(/\s+/g, ' ');
	const sentence = (/^.*?[.!?](?=\s|$)/.exec(flat)?.[0] ?? flat).trim();
	const quoted = sentence.length > 200 ? `${sentence.slice(0, 199)}…` : sentence;
	return { text: `The shared documents say: "${quoted}" [1]` };
}
