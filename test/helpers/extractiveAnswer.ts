/**
 * A deterministic stand-in for the model's answer (the demo's ModelStandIn `respond`): it reads the
 * numbered sources WF51 puts in the prompt (`Sources:\n[1] <label> <url>\n<passages>\n\n[2] …\n\nQuestion: …`)
 * and answers as a model prompted to cite with `[n]` markers would: it quotes, from each source, the sentence
 * sharing the most words with the question, and cites it `[n]` — only the sources that hold at least half
 * as many of the question's words as the best one (at most three). The question's words are those of three
 * or more letters that are not common function words. No network, no randomness.
 * Works on an OpenAI-compatible body (`messages[].content`) and an Ollama-compatible one (`prompt`).
 * With no source, or none sharing a word with the question, it answers that it does not know, citing nothing.
 */

/** The user part of a chat/completions or /api/generate request body. */
function promptOf(body: Record<string, unknown>): string {
	if (typeof body.prompt === 'string') return body.prompt;
	const messages = Array.isArray(body.messages) ? (body.messages as { role?: string; content?: unknown }[]) : [];
	const user = [...messages].reverse().find((m) => m.role === 'user');
	return typeof user?.content === 'string' ? user.content : '';
}

/** The numbered sources of a WF51 prompt: `[{ n, text }]` (the lines after each `[n]` header), in order. */
export function sourcesOfPrompt(prompt: string): { n: number; text: string }[] {
	const out: { n: number; text: string }[] = [];
	// `(?![\s\S])` is the prompt's end: with the `m` flag `$` would also match at each line end and cut a
	// multi-line source to its first line.
	const header = /^\[(\d+)\][^\n]*\n([\s\S]*?)(?=\n\n\[\d+\] |\n\nQuestion: |(?![\s\S]))/gm;
	for (let m = header.exec(prompt); m; m = header.exec(prompt)) out.push({ n: Number(m[1]), text: m[2].trim() });
	return out;
}

/** The text of source `[1]`, or null when the prompt has none (demoModel.ts routes on it). */
export function firstSource(prompt: string): string | null {
	return sourcesOfPrompt(prompt).find((s) => s.n === 1)?.text ?? null;
}

/** Function words a question shares with any text (not evidence that a source answers it). */
const STOP = new Set(
	'the and for are was were what which who whom whose when where why how does did done doing have has had with about from into over under this that these those there their they them you your yours our ours his her its not but can could would should will shall may might must say says said tell know any all some much many more most other than then also just only very one two out off per via'.split(
		' ',
	),
);

/** The question's content words (lower case, three or more letters or digits, not a function word). */
export function contentWords(text: string): Set<string> {
	return new Set((text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length >= 3 && !STOP.has(w)));
}

export function extractiveAnswer(body: Record<string, unknown>): { text: string } {
	const prompt = promptOf(body);
	const question = /\n\nQuestion: ([\s\S]*)$/.exec(prompt)?.[1] ?? '';
	const words = contentWords(question);
	const best = sourcesOfPrompt(prompt).map((source) => {
		const sentences = source.text.replace(/\s+/g, ' ').match(/[^.!?…]+(?:[.!?…]+|$)/g) ?? [];
		let top = { sentence: '', hits: 0 };
		for (const sentence of sentences) {
			const hits = [...contentWords(sentence)].filter((w) => words.has(w)).length;
			if (hits > top.hits) top = { sentence: sentence.trim(), hits };
		}
		return { n: source.n, ...top };
	});
	const most = Math.max(0, ...best.map((b) => b.hits));
	if (most === 0) return { text: 'I do not know: the sources do not say.' };
	const quoted = best
		.filter((b) => b.hits > 0 && b.hits * 2 >= most)
		.slice(0, 3)
		.map((b) => `"${b.sentence.length > 200 ? `${b.sentence.slice(0, 199)}…` : b.sentence}" [${b.n}]`);
	return { text: `The shared documents say: ${quoted.join(' and ')}` };
}
