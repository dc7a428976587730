/**
 * File → Download: WF32 of seed 003. Downloads a Telegram file through the Bot API (getFile, then the
 * file URL) with the Contracts Telegram Bot API credential, and stores it like a fetched page:
 *  - tg.file_instances: tg_file_path and last_seen_at of this file_id;
 *  - content.blob_objects (by SHA-256) and content.documents (doc_type file, one per file and chat, with
 *    the chat's visibility), back to `pending` when the bytes changed;
 *  - ops.jobs `document_extract` (WF33) once per document and body.
 * Files over the Bot API's 20 MB limit are not requested: the document is recorded with status `error`
 * and the reason, and the answer is `status: "error"` (a bot can never download them; not retried).
 * Input `req`: `{ tenant_id, file_id, file_unique_id, ctx: { chat_id, visibility, dm_owner_user_id,
 *   message_version_id } }` (+ file_name, mime_type, file_size as WF20 enqueues them; timeout_ms 30000).
 * Output: `{ blob_object_id, document_id, file_unique_id, status, extract_job_id }`.
 * Errors: 422 `req.<field>`; 502 upstream retryable (Bot API 5xx/429, network, timeout); 400-class Bot API
 *   answers (file_id expired or unknown) 502 not retryable; 502 UNSAFE_FILE_PATH, not retryable (getFile
 *   answered a file_path with a dot segment, query, fragment, backslash or control character: the download
 *   is not requested, issue 25); 500 validation BAD_CREDENTIAL_URL (the
 *   credential's Base URL is not an http(s) URL); 503/500 db. No message carries the bot token.
 */
import { z } from 'zod';
import { parseRequest, TenantId } from '../../../shared/contracts/request';
import { ContractError, fromPgError } from '../../../shared/errors';
import { inTransaction } from '../../../shared/postgres/transaction';
import { TooLargeError } from '../../transport/http';
import { BOT_API_MAX_FILE_BYTES, BotApiError, downloadFile, getFile } from '../../transport/botApi';
import { SourceCtx } from '../../../shared/contracts/sourceCtx';
import { enqueueOnce } from '../../../shared/jobs/enqueue';
import { JOB_TYPES } from '../../../shared/jobs/registry';
import { FIND_FILE_DOCUMENT, RECORD_FILE_TOO_LARGE } from '../../../shared/statements/content';
import { TOUCH_FILE_INSTANCE } from '../../../shared/statements/tg';
import { storeBody, type StoredBody } from '../storeBody';
import type { KnowledgeOperation } from '../types';

export const DownloadFileRequest = z.object({
	tenant_id: TenantId,
	file_id: z.string({ required_error: 'is required' }).min(1, 'must not be empty'),
	file_unique_id: z.string({ required_error: 'is required' }).min(1, 'must not be empty'),
	file_name: z.string().nullish(),
	mime_type: z.string().nullish(),
	file_size: z.number().int().nonnegative().nullish(),
	ctx: SourceCtx,
	timeout_ms: z.number().int().min(100).max(300_000).default(30_000),
	trace_id: z.string().nullish(),
});

const WHERE = { table: 'tg.file_instances' };

/** A failed Bot API call as a ContractError (the transport has already redacted the token). */
function upstream(error: unknown): ContractError {
	if (error instanceof ContractError) return error;
	if (error instanceof TooLargeError) {
		return ContractError.upstream(
			`Telegram file: ${error.message}`,
			413,
			false,
			{ code: 'TOO_LARGE', limit_bytes: error.limit },
			{ operation: 'download', ...WHERE },
		);
	}
	if (error instanceof BotApiError) {
		const retryable = error.status >= 500 || error.status === 429;
		return ContractError.upstream(
			error.message,
			502,
			retryable,
			{ code: 'BOT_API_ERROR', http_status: error.status, description: error.description },
			{ operation: 'download', ...WHERE },
			{ rateLimited: error.status === 429 },
		);
	}
	const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
	return ContractError.upstream(
		`Telegram file: ${message}`,
		502,
		true,
		{ code: 'DOWNLOAD_FAILED' },
		{ operation: 'download', ...WHERE },
	);
}

export const downloadOperation: KnowledgeOperation = {
	value: 'download',
	name: 'Download',
	action: 'Download a Telegram file',
	description:
		'Download a file sent to the bot (getFile, up to 20 MB) into a stored body and a pending document, and enqueue its extraction (WF32)',
	workflow: 'WF32',
	async execute({ pool, state, correlationId, http, telegram }, raw) {
		const req = parseRequest(DownloadFileRequest, raw, WHERE);
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, chat_id: req.ctx.chat_id, trace_id: req.trace_id ?? null });
		const source = {
			tenant_id: req.tenant_id,
			doc_type: 'file' as const,
			source_key: `file:${req.file_unique_id}`,
			file_unique_id: req.file_unique_id,
			ctx: req.ctx,
		};
		if ((req.file_size ?? 0) > BOT_API_MAX_FILE_BYTES) {
			const reason = `file of ${req.file_size} bytes is over the Bot API download limit of ${BOT_API_MAX_FILE_BYTES} bytes`;
			try {
				const c = req.ctx;
				const { rows } = await pool.query(RECORD_FILE_TOO_LARGE, [
					req.tenant_id,
					source.source_key,
					req.file_unique_id,
					c.chat_id,
					c.visibility,
					c.dm_owner_user_id,
					c.message_version_id,
					req.mime_type ?? null,
					reason,
				]);
				const documentId =
					rows[0]?.id ??
					(await pool.query(FIND_FILE_DOCUMENT, [req.tenant_id, source.source_key, c.chat_id])).rows[0].id;
				return {
					blob_object_id: null,
					document_id: Number(documentId),
					file_unique_id: req.file_unique_id,
					status: 'error',
					error: reason,
					extract_job_id: null,
				};
			} catch (error) {
				throw fromPgError(error, { operation: 'insert', table: 'content.documents' });
			}
		}
		const credential = await telegram();
		let filePath: string;
		let body: Buffer;
		let mime: string | null;
		try {
			filePath = (await getFile(http, credential, req.file_id, req.timeout_ms)).file_path;
			const res = await downloadFile(http, credential, filePath, req.timeout_ms, BOT_API_MAX_FILE_BYTES);
			body = res.body;
			const served = res.headers['content-type']?.split(';')[0].trim().toLowerCase();
			mime = req.mime_type ?? (served && served !== 'application/octet-stream' ? served : null);
		} catch (error) {
			throw upstream(error);
		}
		let stored: StoredBody;
		try {
			stored = await inTransaction(pool, async (client) => {
				await client.query(TOUCH_FILE_INSTANCE, [req.tenant_id, req.file_unique_id, req.file_id, filePath]);
				return storeBody(client, source, body, mime);
			});
		} catch (error) {
			throw fromPgError(error, { operation: 'insert', table: 'content.documents' });
		}
		let extractJobId: number | null = null;
		if (stored.status === 'pending') {
			extractJobId = await enqueueOnce(pool, {
				tenant_id: req.tenant_id,
				job_type: JOB_TYPES.document_extract,
				dedup_key: `document_extract:${stored.document_id}:${stored.sha256}`,
				payload: { tenant_id: req.tenant_id, document_id: stored.document_id, trace_id: req.trace_id ?? null },
				correlation_id: correlationId,
			});
		}
		return {
			blob_object_id: stored.blob_object_id,
			document_id: stored.document_id,
			file_unique_id: req.file_unique_id,
			status: stored.status,
			extract_job_id: extractJobId,
		};
	},
};
