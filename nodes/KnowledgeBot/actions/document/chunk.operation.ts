/**
 * Document → Chunk: WF40 of seed 003. Splits an extracted document (status `done`) into kg.chunks,
 * idempotently: chunks are keyed by (document_id, chunk_no), rewritten only when their text changed,
 * and chunks past the new end are deleted, in one statement. Then, when the chat policy allows
 * embedding and an active embedding model exists, enqueues `document_embed` (WF41) once per text.
 * Input `req`: `{ tenant_id (uuid), document_id, chunking?: { max_chars (100–8000, default 1200),
 *   overlap (0–max_chars/2, default 120) } }`.
 * Output: `{ document_id, chunks_created (new rows), chunks_total, embed_job_id|null }`.
 * Errors: 422 `req.<field>`; 404 DOCUMENT_NOT_FOUND (not in this tenant); 409 DOCUMENT_NOT_READY
 * (status not `done` or no text); 503/500 db.
 */
import crypto from 'node:crypto';
import { z } from 'zod';
import { DbId, parseRequest, TenantId } from '../../../shared/contracts/request';
import { ContractError, fromPgError } from '../../../shared/errors';
import { enqueueOnce } from '../../../shared/jobs/enqueue';
import { JOB_TYPES } from '../../../shared/jobs/registry';
import type { KnowledgeOperation } from '../types';
import { chunkText } from './chunkText';

export const ChunkRequest = z
	.object({
		tenant_id: TenantId,
		document_id: DbId,
		chunking: z
			.object({
				max_chars: z.number().int().min(100).max(8000).default(1200),
				overlap: z.number().int().min(0).default(120),
			})
			.default({}),
		trace_id: z.string().nullish(),
	})
	.superRefine((req, issue) => {
		if (req.chunking.overlap * 2 > req.chunking.max_chars)
			issue.addIssue({
				code: z.ZodIssueCode.custom,
				path: ['chunking', 'overlap'],
				message: 'must be at most half of max_chars',
			});
	});

const WHERE = { table: 'kg.chunks' };

const LOAD_DOCUMENT = `
SELECT d.id, d.status, d.text, d.text_sha256, d.chat_id,
       coalesce(p.allow_embedding, true) AS allow_embedding,
       (SELECT id FROM kg.embedding_models WHERE is_active ORDER BY id LIMIT 1) AS model_id
FROM content.documents d LEFT JOIN core.chat_policies p ON p.tenant_id = d.tenant_id AND p.chat_id = d.chat_id
WHERE d.tenant_id = $1 AND d.id = $2`;

/** $1 tenant_id, $2 document_id, $3 chunks JSON array. Returns inserted/updated/deleted counts. */
const WRITE_CHUNKS = `
WITH c AS (
  SELECT * FROM jsonb_to_recordset($3::jsonb) AS c(chunk_no int, text text, char_start int, char_end int, text_sha256 text)
), written AS (
  INSERT INTO kg.chunks AS k (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256)
  SELECT $1, $2, chunk_no, text, char_start, char_end, text_sha256 FROM c
  ON CONFLICT (document_id, chunk_no) DO UPDATE SET
    text = EXCLUDED.text, char_start = EXCLUDED.char_start, char_end = EXCLUDED.char_end, text_sha256 = EXCLUDED.text_sha256
  WHERE (k.text_sha256, k.char_start, k.char_end) IS DISTINCT FROM (EXCLUDED.text_sha256, EXCLUDED.char_start, EXCLUDED.char_end)
  RETURNING (xmax = 0) AS inserted
), removed AS (
  DELETE FROM kg.chunks WHERE document_id = $2 AND chunk_no >= (SELECT count(*) FROM c) RETURNING id
)
SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated,
       (SELECT count(*) FROM removed)::int AS removed
FROM written`;

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

export const chunkOperation: KnowledgeOperation = {
	value: 'chunk',
	name: 'Chunk',
	action: 'Chunk a document',
	description: 'Split an extracted document into kg.chunks (idempotent) and enqueue its embedding (WF40)',
	workflow: 'WF40',
	async execute({ pool, state, correlationId }, raw) {
		const req = parseRequest(ChunkRequest, raw, WHERE);
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, trace_id: req.trace_id ?? null });
		let doc: Record<string, unknown> | undefined;
		let written: { inserted: number; updated: number; removed: number };
		try {
			doc = (await pool.query(LOAD_DOCUMENT, [req.tenant_id, req.document_id])).rows[0];
		} catch (error) {
			throw fromPgError(error, { operation: 'select', table: 'content.documents' });
		}
		if (!doc)
			throw ContractError.notFound(
				`document ${req.document_id} not found`,
				{ code: 'DOCUMENT_NOT_FOUND', document_id: req.document_id },
				{ operation: 'select', table: 'content.documents' },
			);
		if (doc.status !== 'done' || typeof doc.text !== 'string') {
			throw ContractError.conflict(
				`document ${req.document_id} has no extracted text (status ${String(doc.status)})`,
				{ code: 'DOCUMENT_NOT_READY', document_id: req.document_id, status: doc.status },
				{ operation: 'select', table: 'content.documents' },
			);
		}
		state.ctx!.chat_id = Number(doc.chat_id);
		const chunks = chunkText(doc.text, req.chunking.max_chars, req.chunking.overlap).map((c) => ({
			...c,
			text_sha256: sha256(c.text),
		}));
		const chunksTotal = chunks.length;
		try {
			written = (await pool.query(WRITE_CHUNKS, [req.tenant_id, req.document_id, JSON.stringify(chunks)])).rows[0];
		} catch (error) {
			throw fromPgError(error, { operation: 'upsert', ...WHERE });
		}
		let embedJobId: number | null = null;
		if (doc.allow_embedding && doc.model_id !== null && chunksTotal > 0) {
			embedJobId = await enqueueOnce(pool, {
				tenant_id: req.tenant_id,
				job_type: JOB_TYPES.document_embed,
				dedup_key: `document_embed:${req.document_id}:${doc.model_id}:${doc.text_sha256 ?? sha256(doc.text)}`,
				payload: {
					tenant_id: req.tenant_id,
					document_id: req.document_id,
					model_id: Number(doc.model_id),
					trace_id: req.trace_id ?? null,
				},
				correlation_id: correlationId,
			});
		}
		return {
			document_id: req.document_id,
			chunks_created: written.inserted,
			chunks_updated: written.updated,
			chunks_removed: written.removed,
			chunks_total: chunksTotal,
			embed_job_id: embedJobId,
		};
	},
};
