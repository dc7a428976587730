/**
 * URL → Fetch: WF31 of seed 003. Downloads a normalised URL (content.urls) for one chat and records it:
 *  - content.url_fetches: one row per attempt (done with HTTP status, type and blob, or error);
 *  - content.blob_objects: the body stored once by SHA-256;
 *  - content.documents (doc_type url, one per URL and chat, with the chat's visibility): pointed at the
 *    new blob and set `pending` when the body changed;
 *  - ops.jobs `document_extract` (WF33) once per document and body.
 * Input `req`: `{ tenant_id, url_id, ctx: { chat_id, visibility, dm_owner_user_id, message_version_id } }`,
 * options: timeout_ms (default 15000), max_bytes (default 10 MiB).
 * Output: `{ url_fetch_id, document_id, status: "pending" | "done" | "error", http_status, extract_job_id }`
 *   (`done`: the body is the one already extracted; `error`: the server answered 4xx — recorded, not retried).
 * Errors: 422 `req.<field>`; 404 URL_NOT_FOUND; 502 upstream retryable for 5xx/429, a network failure
 *   or a timeout (the failed attempt is still recorded); 413 TOO_LARGE (recorded); 503/500 db.
 */
import crypto from 'node:crypto';
import type { Pool } from 'pg';
import { z } from 'zod';
import { DbId, parseRequest } from '../../../shared/contracts/request';
import { ContractError, fromPgError } from '../../../shared/errors';
import { TooLargeError } from '../../transport/http';
import { enqueueOnce, SourceCtx } from '../shared';
import type { KnowledgeOperation } from '../types';

export const FetchUrlRequest = z.object({
	tenant_id: z.string({ required_error: 'is required' }).uuid('must be a UUID'),
	url_id: DbId,
	ctx: SourceCtx,
	timeout_ms: z.number().int().min(100).max(120_000).default(15_000),
	max_bytes: z.number().int().min(1).max(50 * 1024 * 1024).default(10 * 1024 * 1024),
	trace_id: z.string().nullish(),
});

const WHERE = { table: 'content.url_fetches' };

/** $1 url_id, $2 status, $3 http_status, $4 content_type, $5 final_url, $6 error. */
const RECORD_FAILURE = `INSERT INTO content.url_fetches (url_id, status, http_status, content_type, final_url, error) VALUES ($1, 'error', $2, $3, $4, $5) RETURNING id`;

/**
 * One statement: blob (by sha256), fetch row, document (pending when its blob changed).
 * $1 tenant_id, $2 url_id, $3 sha256, $4 bytes, $5 mime, $6 http_status, $7 final_url, $8 chat_id,
 * $9 visibility, $10 dm_owner_user_id, $11 message_version_id.
 */
const RECORD_BODY = `
WITH new_blob AS (
  INSERT INTO content.blob_objects (sha256, size_bytes, mime_type, bytes) VALUES ($3, octet_length($4::bytea), $5, $4)
  ON CONFLICT (sha256) DO NOTHING RETURNING id
), blob AS (
  SELECT id FROM new_blob UNION ALL SELECT id FROM content.blob_objects WHERE sha256 = $3 AND NOT EXISTS (SELECT 1 FROM new_blob)
), attempt AS (
  INSERT INTO content.url_fetches (url_id, status, http_status, content_type, final_url, blob_object_id)
  SELECT $2, 'done', $6, $5, $7, blob.id FROM blob RETURNING id, blob_object_id
), doc AS (
  INSERT INTO content.documents AS d (tenant_id, doc_type, source_key, url_id, chat_id, visibility, dm_owner_user_id, message_version_id, blob_object_id, mime_type)
  SELECT $1, 'url', 'url:' || $2::text, $2, $8, $9, $10, $11, blob.id, $5 FROM blob
  ON CONFLICT (tenant_id, doc_type, source_key, chat_id) DO UPDATE SET
    blob_object_id = EXCLUDED.blob_object_id, mime_type = EXCLUDED.mime_type, status = 'pending', error = NULL, updated_at = now()
    WHERE d.blob_object_id IS DISTINCT FROM EXCLUDED.blob_object_id
  RETURNING id, status
)
SELECT attempt.id AS url_fetch_id, attempt.blob_object_id,
       coalesce((SELECT id FROM doc), (SELECT id FROM content.documents WHERE tenant_id = $1 AND doc_type = 'url' AND source_key = 'url:' || $2::text AND chat_id = $8)) AS document_id,
       coalesce((SELECT status FROM doc), (SELECT status FROM content.documents WHERE tenant_id = $1 AND doc_type = 'url' AND source_key = 'url:' || $2::text AND chat_id = $8)) AS status
FROM attempt`;

async function recordFailure(pool: Pool, urlId: number, values: { http_status?: number; content_type?: string; final_url?: string; error: string }): Promise<number> {
	try {
		const { rows } = await pool.query(RECORD_FAILURE, [urlId, values.http_status ?? null, values.content_type ?? null, values.final_url ?? null, values.error]);
		return Number(rows[0].id);
	} catch (error) {
		throw fromPgError(error, { operation: 'insert', ...WHERE });
	}
}

export const fetchOperation: KnowledgeOperation = {
	value: 'fetch',
	name: 'Fetch',
	action: 'Fetch a URL',
	description: 'Download a normalized URL into a stored body and a pending document, and enqueue its extraction (WF31)',
	workflow: 'WF31',
	async execute({ pool, state, correlationId, http }, raw) {
		const req = parseRequest(FetchUrlRequest, raw, { table: 'content.urls' });
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, chat_id: req.ctx.chat_id, trace_id: req.trace_id ?? null });
		let url: string;
		try {
			const { rows } = await pool.query('SELECT normalized_url FROM content.urls WHERE tenant_id = $1 AND id = $2', [req.tenant_id, req.url_id]);
			if (rows.length === 0) throw new ContractError(`url ${req.url_id} not found`, 404, 'not_found', false, { code: 'URL_NOT_FOUND', url_id: req.url_id }, { operation: 'select', table: 'content.urls' });
			url = rows[0].normalized_url;
		} catch (error) {
			throw fromPgError(error, { operation: 'select', table: 'content.urls' });
		}
		let res;
		try {
			res = await http(url, { timeoutMs: req.timeout_ms, maxBytes: req.max_bytes });
		} catch (error) {
			if (error instanceof TooLargeError) {
				await recordFailure(pool, req.url_id, { error: error.message });
				throw new ContractError(`${url}: ${error.message}`, 413, 'upstream', false, { code: 'TOO_LARGE', limit_bytes: error.limit }, { operation: 'fetch', table: 'content.urls' });
			}
			const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
			await recordFailure(pool, req.url_id, { error: message });
			throw new ContractError(`${url}: ${message}`, 502, 'upstream', true, { code: 'FETCH_FAILED', url }, { operation: 'fetch', table: 'content.urls' });
		}
		const contentType = res.headers['content-type'] ?? null;
		if (res.status >= 400) {
			const urlFetchId = await recordFailure(pool, req.url_id, { http_status: res.status, content_type: contentType ?? undefined, final_url: res.url, error: `HTTP ${res.status}` });
			if (res.status >= 500 || res.status === 429) {
				throw new ContractError(`${url}: HTTP ${res.status}`, 502, res.status === 429 ? 'rate_limit' : 'upstream', true, { code: 'FETCH_FAILED', http_status: res.status, url_fetch_id: urlFetchId }, { operation: 'fetch', table: 'content.urls' });
			}
			return { url_fetch_id: urlFetchId, document_id: null, status: 'error', http_status: res.status, extract_job_id: null };
		}
		const sha256 = crypto.createHash('sha256').update(res.body).digest('hex');
		const mime = contentType ? contentType.split(';')[0].trim().toLowerCase() : null;
		let row: Record<string, unknown>;
		try {
			const c = req.ctx;
			row = (await pool.query(RECORD_BODY, [req.tenant_id, req.url_id, sha256, res.body, mime, res.status, res.url, c.chat_id, c.visibility, c.dm_owner_user_id, c.message_version_id])).rows[0];
		} catch (error) {
			throw fromPgError(error, { operation: 'insert', ...WHERE });
		}
		const documentId = Number(row.document_id);
		let extractJobId: number | null = null;
		if (row.status === 'pending') {
			extractJobId = await enqueueOnce(pool, {
				tenant_id: req.tenant_id,
				job_type: 'document_extract',
				dedup_key: `document_extract:${documentId}:${sha256}`,
				payload: { tenant_id: req.tenant_id, document_id: documentId, trace_id: req.trace_id ?? null },
				correlation_id: correlationId,
			});
		}
		return { url_fetch_id: Number(row.url_fetch_id), document_id: documentId, status: row.status, http_status: res.status, extract_job_id: extractJobId };
	},
};
