/**
 * The arithmetic of the exact vector route (shared/statements/content.ts, VISIBLE_EMBEDDINGS): vectors as float32 little-endian bytes, cosine
 * similarity computed in the node, and the k best kept while rows stream in. Ordering matches the pgvector
 * route (content.SEARCH_CHUNKS): highest similarity first, ties by the smaller chunk id, a zero vector
 * (similarity undefined, NaN as in pgvector) last.
 */
import { endianness } from 'node:os';

const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * A vector as IEEE-754 float32 little-endian bytes (4 per component).
 * @throws RangeError when a component is not finite as a float32 (beyond ±3.4e38; pgvector refuses it too)
 */
export function float32Bytes(values: number[]): Buffer {
	const out = Buffer.alloc(values.length * 4);
	for (let i = 0; i < values.length; i++) {
		const v = Math.fround(values[i]);
		if (!Number.isFinite(v)) throw new RangeError(`vector component ${i} is not a finite float32`);
		out.writeFloatLE(v, i * 4);
	}
	return out;
}

/**
 * A scorer of stored vectors against `query`: cosine similarity in [-1, 1] (pgvector's `1 - (a <=> b)`),
 * NaN when either vector is zero or `bytes` is not `query.length` float32s.
 */
export function cosineScorer(query: number[]): (bytes: Uint8Array) => number {
	const dims = query.length;
	const q = Float64Array.from(query, (v) => Math.fround(v));
	let qq = 0;
	for (let i = 0; i < dims; i++) qq += q[i] * q[i];
	const scratch = new Uint8Array(dims * 4);
	const aligned = new Float32Array(scratch.buffer);
	return (bytes) => {
		if (bytes.byteLength !== dims * 4) return Number.NaN;
		let v: Float32Array;
		if (LITTLE_ENDIAN && bytes.byteOffset % 4 === 0) {
			v = new Float32Array(bytes.buffer, bytes.byteOffset, dims);
		} else if (LITTLE_ENDIAN) {
			scratch.set(bytes);
			v = aligned;
		} else {
			const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
			for (let i = 0; i < dims; i++) aligned[i] = view.getFloat32(i * 4, true);
			v = aligned;
		}
		let dot = 0;
		let vv = 0;
		for (let i = 0; i < dims; i++) {
			const x = v[i];
			dot += x * q[i];
			vv += x * x;
		}
		const similarity = dot / Math.sqrt(vv * qq);
		return similarity > 1 ? 1 : similarity < -1 ? -1 : similarity;
	};
}

export interface Scored {
	/** the chunk id, exact (decimal string) */
	id: string;
	score: number;
}

/** true when `a` ranks before `b`: higher score, then smaller id (positive decimal strings); NaN last. */
export function ranksBefore(a: Scored, b: Scored): boolean {
	const an = Number.isNaN(a.score);
	const bn = Number.isNaN(b.score);
	if (an !== bn) return bn;
	if (!an && a.score !== b.score) return a.score > b.score;
	return a.id.length !== b.id.length ? a.id.length < b.id.length : a.id < b.id;
}

/** The best `k` of what is offered, in rank order (ranksBefore). O(n·k) worst case, k ≤ 100. */
export class TopK {
	private readonly items: Scored[] = [];

	constructor(private readonly k: number) {}

	offer(item: Scored): void {
		const items = this.items;
		if (items.length === this.k && !ranksBefore(item, items[items.length - 1])) return;
		let i = items.length;
		while (i > 0 && ranksBefore(item, items[i - 1])) i--;
		items.splice(i, 0, item);
		if (items.length > this.k) items.pop();
	}

	result(): Scored[] {
		return [...this.items];
	}
}
