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
import { LOAD_DOCUMENT_TEXT, WRITE_CHUNKS } from '../../../shared/statements/content';
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
			doc = (await pool.query(LOAD_DOCUMENT_TEXT, [req.tenant_id, req.document_id])).rows[0];
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
