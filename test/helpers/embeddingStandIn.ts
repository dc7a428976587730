/**
 * A stand-in embeddings server on 127.0.0.1 answering both Gemini's `:batchEmbedContents` and
 * OpenAI's `/v1/embeddings`. A text's vector is its words hashed into the requested number of
 * dimensions and normalised, so texts sharing words are near in cosine distance (enough to test
 * retrieval order). `failNext(status)` fails the next request; `wrongDims` answers 8 dimensions.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** The stand-in's vector of `text` in `dims` dimensions (also used by tests to build query vectors). */
export function hashedVector(text: string, dims: number): number[] {
	const v = new Array<number>(dims).fill(0);
	for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
		const h = crypto.createHash('sha1').update(word).digest();
		v[h.readUInt32BE(0) % dims] += 1;
		v[h.readUInt32BE(4) % dims] += 0.5;
	}
	const norm = Math.hypot(...v) || 1;
	return v.map((x) => (x === 0 && norm === 1 ? 1 / Math.sqrt(dims) : x / norm));
}

export interface EmbeddingStandIn {
	baseUrl: string;
	requests: { path: string; texts: string[] }[];
	failNext(status: number): void;
	wrongDims: boolean;
	close(): Promise<void>;
}

export async function startEmbeddings(): Promise<EmbeddingStandIn> {
	const state: EmbeddingStandIn = {
		baseUrl: '',
		requests: [],
		failNext: () => undefined,
		wrongDims: false,
		close: async () => undefined,
	};
	let failure: number | null = null;
	const server = http.createServer((req, res) => {
		let raw = '';
		req.on('data', (c) => (raw += c));
		req.on('end', () => {
			const body = JSON.parse(raw || '{}');
			const send = (status: number, json: unknown) =>
				res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
			if (failure !== null) {
				const status = failure;
				failure = null;
				return send(status, { error: { code: status, message: 'stand-in failure' } });
			}
			if (req.url?.endsWith(':batchEmbedContents')) {
				const texts: string[] = body.requests.map((r: { content: { parts: { text: string }[] } }) =>
					r.content.parts.map((p) => p.text).join(' '),
				);
				state.requests.push({ path: req.url, texts });
				const dims = state.wrongDims ? 8 : body.requests[0].outputDimensionality;
				return send(200, { embeddings: texts.map((t) => ({ values: hashedVector(t, dims) })) });
			}
			if (req.url === '/v1/embeddings') {
				const texts: string[] = Array.isArray(body.input) ? body.input : [body.input];
				state.requests.push({ path: req.url, texts });
				const dims = state.wrongDims ? 8 : body.dimensions;
				return send(200, { data: texts.map((t, index) => ({ index, embedding: hashedVector(t, dims) })).reverse() });
			}
			return send(404, { error: 'not found' });
		});
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	state.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	state.failNext = (status) => {
		failure = status;
	};
	state.close = async () => {
		server.closeAllConnections();
		await new Promise((r) => server.close(r));
	};
	return state;
}
