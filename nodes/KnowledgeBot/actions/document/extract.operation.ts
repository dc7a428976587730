/**
 * Document → Extract: WF33 of seed 003. Reads a pending document's stored body, extracts its text
 * (extractText.ts: HTML, PDF, DOCX, plain text), and sets text, text_sha256, token_count, title and
 * status `done` — or status `error` with the reason for a type without an extractor or a corrupt file
 * (recorded, not retried). Then, when the chat policy allows embedding, enqueues `document_chunk` (WF40)
 * once per text.
 * Input `req`: `{ tenant_id, document_id }`.
 * Output: `{ document_id, status: "done" | "error", token_count, kind, chunk_job_id }`.
 * Errors: 422 `req.<field>`; 404 DOCUMENT_NOT_FOUND; 409 NO_BODY (nothing downloaded yet); 503/500 db.
 */
import crypto from 'node:crypto';
import { z } from 'zod';
import { DbId, parseRequest, TenantId } from '../../../shared/contracts/request';
import { ContractError, fromPgError } from '../../../shared/errors';
import { enqueueOnce } from '../../../shared/jobs/enqueue';
import { JOB_TYPES } from '../../../shared/jobs/registry';
import { LOAD_DOCUMENT_BODY, SAVE_EXTRACTION } from '../../../shared/statements/content';
import type { KnowledgeOperation } from '../types';
import { extractText, tokenCount } from './extractText';

export const ExtractRequest = z.object({
	tenant_id: TenantId,
	document_id: DbId,
	trace_id: z.string().nullish(),
});

const WHERE = { table: 'content.documents' };

export const extractOperation: KnowledgeOperation = {
	value: 'extract',
	name: 'Extract',
	action: 'Extract the text of a document',
	description:
		'Extract the text of a downloaded HTML, PDF, DOCX or text document, count its tokens, and enqueue chunking (WF33)',
	workflow: 'WF33',
	async execute({ pool, state, correlationId }, raw) {
		const req = parseRequest(ExtractRequest, raw, WHERE);
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, trace_id: req.trace_id ?? null });
		let doc: Record<string, unknown> | undefined;
		try {
			doc = (await pool.query(LOAD_DOCUMENT_BODY, [req.tenant_id, req.document_id])).rows[0];
		} catch (error) {
			throw fromPgError(error, { operation: 'select', ...WHERE });
		}
		if (!doc)
			throw ContractError.notFound(
				`document ${req.document_id} not found`,
				{ code: 'DOCUMENT_NOT_FOUND', document_id: req.document_id },
				{ operation: 'select', ...WHERE },
			);
		if (!doc.bytes)
			throw ContractError.conflict(
				`document ${req.document_id} has no downloaded body`,
				{ code: 'NO_BODY', document_id: req.document_id },
				{ operation: 'select', ...WHERE },
			);
		state.ctx!.chat_id = Number(doc.chat_id);
		let result: Awaited<ReturnType<typeof extractText>> | null = null;
		let failure: string | null = null;
		try {
			result = await extractText(
				doc.bytes as Buffer,
				(doc.mime_type as string | null) ?? null,
				(doc.file_name as string | null) ?? null,
			);
		} catch (error) {
			failure = error instanceof Error ? error.message : String(error);
		}
		const text = result?.text ?? null;
		const textSha = text === null ? null : crypto.createHash('sha256').update(text).digest('hex');
		const tokens = text === null ? null : tokenCount(text);
		const status = result ? 'done' : 'error';
		try {
			await pool.query(SAVE_EXTRACTION, [
				req.tenant_id,
				req.document_id,
				text,
				textSha,
				tokens,
				result?.title ?? null,
				status,
				failure,
			]);
		} catch (error) {
			throw fromPgError(error, { operation: 'update', ...WHERE });
		}
		let chunkJobId: number | null = null;
		if (result && text && doc.allow_embedding) {
			chunkJobId = await enqueueOnce(pool, {
				tenant_id: req.tenant_id,
				job_type: JOB_TYPES.document_chunk,
				dedup_key: `document_chunk:${req.document_id}:${textSha}`,
				payload: { tenant_id: req.tenant_id, document_id: req.document_id, trace_id: req.trace_id ?? null },
				correlation_id: correlationId,
			});
		}
		return {
			document_id: req.document_id,
			status,
			token_count: tokens,
			kind: result?.kind ?? null,
			error: failure,
			chunk_job_id: chunkJobId,
		};
	},
};
