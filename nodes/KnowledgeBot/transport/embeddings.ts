/**
 * Embeddings for the knowledge bot (WF41 chunks, WF51 questions) from a Gemini-compatible or
 * OpenAI-compatible endpoint (Contracts Embeddings API credential). Texts go in batches of up to 100
 * (Gemini's batch limit); every vector must have the model's `dims` (kg.embedding_models.dims).
 * Secrets: the base URL is checked first (http(s), no whitespace, no user info: ContractError 500
 * BAD_CREDENTIAL_URL), the key travels in a header only, and every EmbeddingsError has the key redacted
 * (as is, URL-encoded, Base64), a network failure's cause included (../../shared/redact.ts).
 */
import { checkedBaseUrl, type UrlField } from '../../shared/credentialUrl';
import { REDIRECT_HINT, redactorFor } from '../../shared/redact';
import type { HttpPostJson } from './http';

/** The Base URL field of the credential, for validation messages. */
export const EMBEDDINGS_BASE_URL: UrlField = {
	credential: 'Contracts Embeddings API',
	field: 'Base URL',
	name: 'baseUrl',
	example: 'https://generativelanguage.googleapis.com',
};

export interface EmbeddingsCredential {
	api: 'gemini' | 'openai';
	baseUrl: string;
	apiKey?: string;
}

export interface EmbeddingModel {
	/** Model name as the endpoint knows it (e.g. gemini-embedding-001, text-embedding-3-small) */
	name: string;
	dims: number;
}

export class EmbeddingsError extends Error {
	constructor(
		message: string,
		readonly status: number | null,
		readonly retryable: boolean,
		options?: { cause?: unknown },
	) {
		super(message, options);
		this.name = 'EmbeddingsError';
	}
}

export const EMBED_BATCH = 100;

function vectorsOf(api: 'gemini' | 'openai', body: unknown): unknown[] | null {
	const b = (body ?? {}) as { embeddings?: { values?: unknown }[]; data?: { embedding?: unknown; index?: number }[] };
	if (api === 'gemini') return Array.isArray(b.embeddings) ? b.embeddings.map((e) => e?.values) : null;
	if (!Array.isArray(b.data)) return null;
	return [...b.data].sort((x, y) => (x.index ?? 0) - (y.index ?? 0)).map((d) => d.embedding);
}

/**
 * @param task Gemini task type: RETRIEVAL_DOCUMENT for chunks, RETRIEVAL_QUERY for questions
 * @returns one vector per text, in order
 * @throws EmbeddingsError: 429/5xx/network/timeout retryable; 4xx, a malformed answer or a wrong
 *         dimension count not retryable; ContractError 500 BAD_CREDENTIAL_URL
 */
export async function embedTexts(
	post: HttpPostJson,
	credential: EmbeddingsCredential,
	model: EmbeddingModel,
	texts: string[],
	task: 'RETRIEVAL_DOCUMENT' | 'RETRIEVAL_QUERY',
	timeoutMs = 30_000,
): Promise<number[][]> {
	const redact = redactorFor([credential.apiKey]);
	const base = checkedBaseUrl(credential.baseUrl, EMBEDDINGS_BASE_URL);
	const vectors: number[][] = [];
	for (let i = 0; i < texts.length; i += EMBED_BATCH) {
		const batch = texts.slice(i, i + EMBED_BATCH);
		const request: { url: string; body: unknown; headers: Record<string, string> } =
			credential.api === 'gemini'
				? {
						url: `${base}/v1beta/models/${encodeURIComponent(model.name)}:batchEmbedContents`,
						body: {
							requests: batch.map((text) => ({
								model: `models/${model.name}`,
								content: { parts: [{ text }] },
								taskType: task,
								outputDimensionality: model.dims,
							})),
						},
						headers: credential.apiKey ? { 'x-goog-api-key': credential.apiKey } : {},
					}
				: {
						url: `${base}/v1/embeddings`,
						body: { model: model.name, input: batch, dimensions: model.dims },
						headers: credential.apiKey ? { authorization: `Bearer ${credential.apiKey}` } : {},
					};
		let res: { status: number; body: unknown };
		try {
			res = await post(request.url, request.body, { headers: request.headers, timeoutMs });
		} catch (error) {
			throw new EmbeddingsError(`embeddings endpoint unreachable: ${redact.describe(error)}`, null, true, {
				cause: redact.error(error),
			});
		}
		if (res.status !== 200)
			throw new EmbeddingsError(
				`embeddings endpoint answered HTTP ${res.status}${res.status >= 300 && res.status < 400 ? REDIRECT_HINT : ''}`,
				res.status,
				res.status === 429 || res.status >= 500,
			);
		const got = vectorsOf(credential.api, res.body);
		if (!got || got.length !== batch.length)
			throw new EmbeddingsError(
				`embeddings endpoint returned ${got ? got.length : 'no'} vectors for ${batch.length} texts`,
				200,
				false,
			);
		for (const v of got) {
			if (
				!Array.isArray(v) ||
				v.length !== model.dims ||
				!v.every((x) => typeof x === 'number' && Number.isFinite(x))
			) {
				throw new EmbeddingsError(
					`embedding has ${Array.isArray(v) ? v.length : 'no'} dimensions, the model is declared with ${model.dims}`,
					200,
					false,
				);
			}
			vectors.push(v as number[]);
		}
	}
	return vectors;
}

/** pgvector's text form of a vector: `[0.1,0.2,…]`. */
export function vectorLiteral(values: number[]): string {
	return `[${values.join(',')}]`;
}
