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
 * The GET goes through the outbound-request guard (../../transport/outbound.ts, issue 25): public unicast
 * addresses on ports 80/443 only, checked on the address connected to and on every redirect hop, unless the
 * node's Options → Allowed Private Addresses / Allowed Ports say more.
 * Errors: 422 `req.<field>`; 404 URL_NOT_FOUND; 502 upstream retryable for 5xx/429, a network failure
 *   or a timeout (the failed attempt is still recorded); 413 TOO_LARGE (recorded); 403 `auth` BLOCKED_ADDRESS,
 *   not retryable (the guard refused the URL or a redirect hop: recorded as an `error` attempt, nothing was
 *   sent to it, no document); 502 TOO_MANY_REDIRECTS / BAD_REDIRECT, not retryable (recorded); 500
 *   `validation` BAD_OUTBOUND_OPTION (an allowlist option names no host, address, CIDR or port); 503/500 db.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { DbId, parseRequest, TenantId } from '../../../shared/contracts/request';
import { ContractError, fromPgError } from '../../../shared/errors';
import { inTransaction } from '../../../shared/postgres/transaction';
import { TooLargeError } from '../../transport/http';
import { BlockedAddressError, OutboundPolicyError, parseOutboundPolicy, RedirectError } from '../../transport/outbound';
import { SourceCtx } from '../../../shared/contracts/sourceCtx';
import { enqueueOnce } from '../../../shared/jobs/enqueue';
import { JOB_TYPES } from '../../../shared/jobs/registry';
import { RECORD_FETCH_DONE, RECORD_FETCH_FAILURE, URL_TO_FETCH } from '../../../shared/statements/content';
import { storeBody, type StoredBody } from '../storeBody';
import type { KnowledgeOperation } from '../types';

export const FetchUrlRequest = z.object({
	tenant_id: TenantId,
	url_id: DbId,
	ctx: SourceCtx,
	timeout_ms: z.number().int().min(100).max(120_000).default(15_000),
	max_bytes: z
		.number()
		.int()
		.min(1)
		.max(50 * 1024 * 1024)
		.default(10 * 1024 * 1024),
	trace_id: z.string().nullish(),
});

const WHERE = { table: 'content.url_fetches' };

async function recordFailure(
	pool: Pool,
	urlId: number,
	values: { http_status?: number; content_type?: string; final_url?: string; error: string },
): Promise<number> {
	try {
		const { rows } = await pool.query(RECORD_FETCH_FAILURE, [
			urlId,
			values.http_status ?? null,
			values.content_type ?? null,
			values.final_url ?? null,
			values.error,
		]);
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
	async execute({ pool, state, correlationId, fetchUrl, outbound }, raw) {
		const req = parseRequest(FetchUrlRequest, raw, { table: 'content.urls' });
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, chat_id: req.ctx.chat_id, trace_id: req.trace_id ?? null });
		let policy;
		try {
			policy = parseOutboundPolicy(outbound.allowedAddresses, outbound.allowedPorts);
		} catch (error) {
			if (!(error instanceof OutboundPolicyError)) throw error;
			throw ContractError.configuration(
				`Options → ${error.option}: ${error.message}`,
				{ code: 'BAD_OUTBOUND_OPTION', option: error.option, entry: error.entry },
				{ operation: 'validate', table: 'content.urls' },
			);
		}
		let rows: { normalized_url: string }[];
		try {
			rows = (await pool.query(URL_TO_FETCH, [req.tenant_id, req.url_id])).rows;
		} catch (error) {
			throw fromPgError(error, { operation: 'select', table: 'content.urls' });
		}
		if (rows.length === 0)
			throw ContractError.notFound(
				`url ${req.url_id} not found`,
				{ code: 'URL_NOT_FOUND', url_id: req.url_id },
				{ operation: 'select', table: 'content.urls' },
			);
		const url = rows[0].normalized_url;
		let res;
		try {
			res = await fetchUrl(url, { timeoutMs: req.timeout_ms, maxBytes: req.max_bytes, policy });
		} catch (error) {
			if (error instanceof BlockedAddressError) {
				const urlFetchId = await recordFailure(pool, req.url_id, {
					final_url: error.url,
					error: `${error.code}: ${error.message}`,
				});
				throw ContractError.forbidden(
					`${url}: refused by the outbound-request guard: ${error.message}`,
					{
						code: error.code,
						reason: error.reason,
						range: error.range ?? null,
						url: error.url,
						url_fetch_id: urlFetchId,
					},
					{ operation: 'fetch', table: 'content.urls' },
				);
			}
			if (error instanceof RedirectError) {
				const urlFetchId = await recordFailure(pool, req.url_id, { final_url: error.url, error: error.message });
				throw ContractError.upstream(
					`${url}: ${error.message}`,
					502,
					false,
					{
						code: error.code,
						url: error.url,
						url_fetch_id: urlFetchId,
					},
					{ operation: 'fetch', table: 'content.urls' },
				);
			}
			if (error instanceof TooLargeError) {
				await recordFailure(pool, req.url_id, { error: error.message });
				throw ContractError.upstream(
					`${url}: ${error.message}`,
					413,
					false,
					{ code: 'TOO_LARGE', limit_bytes: error.limit },
					{ operation: 'fetch', table: 'content.urls' },
				);
			}
			const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
			await recordFailure(pool, req.url_id, { error: message });
			throw ContractError.upstream(
				`${url}: ${message}`,
				502,
				true,
				{ code: 'FETCH_FAILED', url },
				{ operation: 'fetch', table: 'content.urls' },
			);
		}
		const contentType = res.headers['content-type'] ?? null;
		if (res.status >= 400) {
			const urlFetchId = await recordFailure(pool, req.url_id, {
				http_status: res.status,
				content_type: contentType ?? undefined,
				final_url: res.url,
				error: `HTTP ${res.status}`,
			});
			if (res.status >= 500 || res.status === 429) {
				throw ContractError.upstream(
					`${url}: HTTP ${res.status}`,
					502,
					true,
					{ code: 'FETCH_FAILED', http_status: res.status, url_fetch_id: urlFetchId },
					{ operation: 'fetch', table: 'content.urls' },
					{ rateLimited: res.status === 429 },
				);
			}
			return {
				url_fetch_id: urlFetchId,
				document_id: null,
				status: 'error',
				http_status: res.status,
				extract_job_id: null,
			};
		}
		const mime = contentType ? contentType.split(';')[0].trim().toLowerCase() : null;
		let stored: StoredBody;
		let urlFetchId: number;
		try {
			[stored, urlFetchId] = await inTransaction(pool, async (client) => {
				const body = await storeBody(
					client,
					{
						tenant_id: req.tenant_id,
						doc_type: 'url',
						source_key: `url:${req.url_id}`,
						url_id: req.url_id,
						ctx: req.ctx,
					},
					res.body,
					mime,
				);
				const attempt = await client.query(RECORD_FETCH_DONE, [
					req.url_id,
					res.status,
					mime,
					res.url,
					body.blob_object_id,
				]);
				return [body, Number(attempt.rows[0].id)] as const;
			});
		} catch (error) {
			throw fromPgError(error, { operation: 'insert', ...WHERE });
		}
		const documentId = stored.document_id;
		let extractJobId: number | null = null;
		if (stored.status === 'pending') {
			extractJobId = await enqueueOnce(pool, {
				tenant_id: req.tenant_id,
				job_type: JOB_TYPES.document_extract,
				dedup_key: `document_extract:${documentId}:${stored.sha256}`,
				payload: { tenant_id: req.tenant_id, document_id: documentId, trace_id: req.trace_id ?? null },
				correlation_id: correlationId,
			});
		}
		return {
			url_fetch_id: urlFetchId,
			document_id: documentId,
			status: stored.status,
			http_status: res.status,
			extract_job_id: extractJobId,
		};
	},
};
