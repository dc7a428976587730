/**
 * Splits a document's text into overlapping chunks (WF40 of seed 003; defaults max_chars 1200,
 * overlap 120). A chunk ends at the last paragraph break, else line break, else sentence end, else
 * space in its second half, so words are not cut unless a single "word" is longer than half a chunk.
 * The next chunk starts `overlap` characters before the previous end, moved forward to a word start
 * when the overlap has one.
 * Deterministic: the same text and settings give the same chunks. Pure: no I/O.
 */

export interface Chunk {
	chunk_no: number;
	text: string;
	/** UTF-16 offsets into the document text: [char_start, char_end) */
	char_start: number;
	char_end: number;
}

const BREAKS = [/\n\s*\n/g, /\n/g, /[.!?…]\s/g, /\s/g];

function breakPoint(text: string, start: number, hardEnd: number): number {
	const window = text.slice(start, hardEnd);
	const min = Math.floor(window.length / 2);
	for (const pattern of BREAKS) {
		let best = -1;
		for (const match of window.matchAll(pattern)) {
			const end = match.index + match[0].length;
			if (end > min) best = end;
		}
		if (best > 0) return start + best;
	}
	return hardEnd;
}

/**
 * @param maxChars most characters in a chunk (≥ 100)
 * @param overlap characters repeated from the end of the previous chunk (0 ≤ overlap < maxChars / 2)
 */
export function chunkText(text: string, maxChars = 1200, overlap = 120): Chunk[] {
	const chunks: Chunk[] = [];
	let start = 0;
	while (start < text.length && /\s/.test(text[start])) start++;
	while (start < text.length) {
		const hardEnd = Math.min(start + maxChars, text.length);
		const end = hardEnd === text.length ? hardEnd : breakPoint(text, start, hardEnd);
		const body = text.slice(start, end).trimEnd();
		if (body.trim())
			chunks.push({ chunk_no: chunks.length, text: body, char_start: start, char_end: start + body.length });
		if (end >= text.length) break;
		const overlapStart = Math.max(end - overlap, start + 1);
		// start the overlap at a word start; text without one in the overlap keeps the raw position
		let next = overlapStart;
		while (next < end && !/\s/.test(text[next - 1])) next++;
		while (next < end && /\s/.test(text[next])) next++;
		start = next < end ? next : overlapStart;
	}
	return chunks;
}
