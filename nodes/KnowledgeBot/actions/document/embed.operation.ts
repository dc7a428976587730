/**
 * Document → Embed: WF41 of seed 003. Embeds the chunks of a document that have no vector for the
 * model yet, or one computed from older text (`chunk_sha256` of the vector row), through the
 * Contracts Embeddings API credential (task RETRIEVAL_DOCUMENT, batches of 100), and upserts them —
 * re-running it embeds nothing new. The vectors go to the database's vector store (vectorRoute.ts):
 * kg.chunk_embeddings_1536 (pgvector, migration 007) where it exists, else kg.chunk_embeddings_1536_exact
 * (migration 011, no extension).
 * Input `req`: `{ tenant_id, document_id, model_id }` (kg.embedding_models: provider, name, dims = 1536).
 * Output: `{ document_id, model_id, embeddings_upserted, chunks_embedded, vector_route }` (vector_route:
 *   `pgvector_hnsw` | `exact`).
 * Errors: 422 `req.<field>` or MODEL_DIMS (a model not of 1536 dimensions); 404 MODEL_NOT_FOUND /
 *   DOCUMENT_NOT_FOUND; 502 upstream (retryable: 429, 5xx, network; not: other 4xx, wrong dimensions, a
 *   component beyond float32); 500 VECTOR_STORE_MISSING (migrations not applied); 503/500 db.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { DbId, parseRequest, TenantId } from '../../../shared/contracts/request';
import { ContractError } from '../../../shared/errors';
import { EmbeddingsError } from '../../transport/embeddings';
import type { KnowledgeOperation } from '../types';
import { chunksToEmbed, upsertEmbeddings, vectorError } from '../vectorStore';
import {
	DOCUMENT_CHAT,
	EMBEDDING_MODEL,
	EMBEDDINGS_TABLE,
	EXACT_TABLE,
	VECTOR_DIMS,
} from '../../../shared/statements/content';

export const EmbedRequest = z.object({
	tenant_id: TenantId,
	document_id: DbId,
	model_id: DbId,
	trace_id: z.string().nullish(),
});

const WHERE = { table: 'kg.chunks' };

/** Maps an embeddings failure to a 502 ContractError (kind rate_limit for 429). */
export function embeddingsFailure(error: unknown): ContractError {
	if (!(error instanceof EmbeddingsError))
		return error instanceof ContractError ? error : ContractError.internal(String(error));
	return ContractError.upstream(
		error.message,
		502,
		error.retryable,
		{ code: 'EMBEDDINGS_FAILED', http_status: error.status },
		{ operation: 'embed', ...WHERE },
		{ rateLimited: error.status === 429 },
	);
}

/**
 * The embedding model row, checked.
 * @throws 404 MODEL_NOT_FOUND; 422 MODEL_DIMS
 */
export async function loadModel(pool: Pool, modelId: number): Promise<{ id: number; name: string; dims: number }> {
	let rows: Record<string, unknown>[];
	try {
		rows = (await pool.query(EMBEDDING_MODEL, [modelId])).rows;
	} catch (error) {
		throw vectorError(pool, error, { operation: 'select', table: 'kg.embedding_models' });
	}
	if (rows.length === 0)
		throw ContractError.notFound(
			`embedding model ${modelId} not found`,
			{ code: 'MODEL_NOT_FOUND', model_id: modelId },
			{ operation: 'select', table: 'kg.embedding_models' },
		);
	const dims = Number(rows[0].dims);
	if (dims !== VECTOR_DIMS)
		throw ContractError.validation(
			`embedding model ${modelId} has ${dims} dimensions; ${EMBEDDINGS_TABLE} and ${EXACT_TABLE} hold ${VECTOR_DIMS}`,
			{ code: 'MODEL_DIMS', field: 'req.model_id' },
			{ operation: 'select', table: 'kg.embedding_models' },
		);
	return { id: Number(rows[0].id), name: String(rows[0].name), dims };
}

export const embedOperation: KnowledgeOperation = {
	value: 'embed',
	name: 'Embed',
	action: 'Embed the chunks of a document',
	description:
		"Compute and store the vectors of a document's new or changed chunks (WF41; pgvector HNSW where installed, else an exact store)",
	workflow: 'WF41',
	async execute({ pool, state, embed }, raw) {
		const req = parseRequest(EmbedRequest, raw, WHERE);
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, trace_id: req.trace_id ?? null });
		const model = await loadModel(pool, req.model_id);
		let doc: Record<string, unknown>[];
		let chunks: Record<string, unknown>[];
		let route: Awaited<ReturnType<typeof chunksToEmbed>>['route'];
		try {
			doc = (await pool.query(DOCUMENT_CHAT, [req.tenant_id, req.document_id])).rows;
			if (doc.length === 0)
				throw ContractError.notFound(
					`document ${req.document_id} not found`,
					{ code: 'DOCUMENT_NOT_FOUND', document_id: req.document_id },
					{ operation: 'select', table: 'content.documents' },
				);
			({ route, rows: chunks } = await chunksToEmbed(pool, req.tenant_id, req.document_id, model.id));
		} catch (error) {
			throw vectorError(pool, error, { operation: 'select', ...WHERE });
		}
		state.ctx!.chat_id = Number(doc[0].chat_id);
		const done = (upserted: number, embedded: number) => ({
			document_id: req.document_id,
			model_id: model.id,
			embeddings_upserted: upserted,
			chunks_embedded: embedded,
			vector_route: route.route,
		});
		if (chunks.length === 0) return done(0, 0);
		let vectors: number[][];
		try {
			vectors = await embed(
				model,
				chunks.map((c) => String(c.text)),
				'RETRIEVAL_DOCUMENT',
			);
		} catch (error) {
			throw embeddingsFailure(error);
		}
		const rows = chunks.map((c, i) => ({
			chunk_id: Number(c.id),
			vector: vectors[i],
			chunk_sha256: String(c.text_sha256),
		}));
		let upserted: number;
		try {
			upserted = await upsertEmbeddings(pool, req.tenant_id, model.id, rows);
		} catch (error) {
			if (error instanceof RangeError)
				throw ContractError.upstream(
					`embeddings endpoint returned a vector the store cannot hold: ${error.message}`,
					502,
					false,
					{ code: 'EMBEDDINGS_FAILED', http_status: 200 },
					{ operation: 'embed', table: route.table },
				);
			throw vectorError(pool, error, { operation: 'upsert', table: route.table });
		}
		return done(upserted, rows.length);
	},
};
