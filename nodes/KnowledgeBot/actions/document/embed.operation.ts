/**
 * Document → Embed: WF41 of seed 003. Embeds the chunks of a document that have no vector for the
 * model yet, or one computed from older text (kg.chunk_embeddings_1536.chunk_sha256), through the
 * Contracts Embeddings API credential (task RETRIEVAL_DOCUMENT, batches of 100), and upserts them —
 * re-running it embeds nothing new.
 * Input `req`: `{ tenant_id, document_id, model_id }` (kg.embedding_models: provider, name, dims = 1536).
 * Output: `{ document_id, model_id, embeddings_upserted, chunks_embedded }`.
 * Errors: 422 `req.<field>` or MODEL_DIMS (a model not of 1536 dimensions); 404 MODEL_NOT_FOUND /
 *   DOCUMENT_NOT_FOUND; 502 upstream (retryable: 429, 5xx, network; not: other 4xx, wrong dimensions);
 *   500 PGVECTOR_MISSING (migration 007 not applied); 503/500 db.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { DbId, parseRequest, TenantId } from '../../../shared/contracts/request';
import { ContractError } from '../../../shared/errors';
import { EmbeddingsError, vectorLiteral } from '../../transport/embeddings';
import type { KnowledgeOperation } from '../types';
import { CHUNKS_TO_EMBED, EMBEDDINGS_TABLE, UPSERT_EMBEDDINGS, VECTOR_DIMS, vectorError } from '../vectorSql';

export const EmbedRequest = z.object({
	tenant_id: TenantId,
	document_id: DbId,
	model_id: DbId,
	trace_id: z.string().nullish(),
});

const WHERE = { table: EMBEDDINGS_TABLE };

/** Maps an embeddings failure to a 502 ContractError (kind rate_limit for 429). */
export function embeddingsFailure(error: unknown): ContractError {
	if (!(error instanceof EmbeddingsError)) return error instanceof ContractError ? error : new ContractError(String(error), 500, 'unknown', false);
	return new ContractError(error.message, 502, error.status === 429 ? 'rate_limit' : 'upstream', error.retryable, { code: 'EMBEDDINGS_FAILED', http_status: error.status }, { operation: 'embed', ...WHERE });
}

/**
 * The embedding model row, checked.
 * @throws 404 MODEL_NOT_FOUND; 422 MODEL_DIMS
 */
export async function loadModel(pool: Pool, modelId: number): Promise<{ id: number; name: string; dims: number }> {
	let rows: Record<string, unknown>[];
	try {
		rows = (await pool.query('SELECT id, provider, name, dims FROM kg.embedding_models WHERE id = $1', [modelId])).rows;
	} catch (error) {
		throw vectorError(error, { operation: 'select', table: 'kg.embedding_models' });
	}
	if (rows.length === 0) throw new ContractError(`embedding model ${modelId} not found`, 404, 'not_found', false, { code: 'MODEL_NOT_FOUND', model_id: modelId }, { operation: 'select', table: 'kg.embedding_models' });
	const dims = Number(rows[0].dims);
	if (dims !== VECTOR_DIMS) throw new ContractError(`embedding model ${modelId} has ${dims} dimensions; ${EMBEDDINGS_TABLE} holds ${VECTOR_DIMS}`, 422, 'validation', false, { code: 'MODEL_DIMS', field: 'req.model_id' }, { operation: 'select', table: 'kg.embedding_models' });
	return { id: Number(rows[0].id), name: String(rows[0].name), dims };
}

export const embedOperation: KnowledgeOperation = {
	value: 'embed',
	name: 'Embed',
	action: 'Embed the chunks of a document',
	description: 'Compute and store the vectors of a document\'s new or changed chunks (WF41; needs pgvector)',
	workflow: 'WF41',
	async execute({ pool, state, embed }, raw) {
		const req = parseRequest(EmbedRequest, raw, WHERE);
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, trace_id: req.trace_id ?? null });
		const model = await loadModel(pool, req.model_id);
		let doc: Record<string, unknown>[];
		let chunks: Record<string, unknown>[];
		try {
			doc = (await pool.query('SELECT chat_id FROM content.documents WHERE tenant_id = $1 AND id = $2', [req.tenant_id, req.document_id])).rows;
			if (doc.length === 0) throw new ContractError(`document ${req.document_id} not found`, 404, 'not_found', false, { code: 'DOCUMENT_NOT_FOUND', document_id: req.document_id }, { operation: 'select', table: 'content.documents' });
			chunks = (await pool.query(CHUNKS_TO_EMBED, [req.tenant_id, req.document_id, model.id])).rows;
		} catch (error) {
			throw vectorError(error, { operation: 'select', ...WHERE });
		}
		state.ctx!.chat_id = Number(doc[0].chat_id);
		if (chunks.length === 0) return { document_id: req.document_id, model_id: model.id, embeddings_upserted: 0, chunks_embedded: 0 };
		let vectors: number[][];
		try {
			vectors = await embed(model, chunks.map((c) => String(c.text)), 'RETRIEVAL_DOCUMENT');
		} catch (error) {
			throw embeddingsFailure(error);
		}
		const rows = chunks.map((c, i) => ({ chunk_id: Number(c.id), embedding: vectorLiteral(vectors[i]), chunk_sha256: c.text_sha256 }));
		try {
			const result = await pool.query(UPSERT_EMBEDDINGS, [req.tenant_id, model.id, JSON.stringify(rows)]);
			return { document_id: req.document_id, model_id: model.id, embeddings_upserted: result.rows.length, chunks_embedded: rows.length };
		} catch (error) {
			throw vectorError(error, { operation: 'upsert', ...WHERE });
		}
	},
};
