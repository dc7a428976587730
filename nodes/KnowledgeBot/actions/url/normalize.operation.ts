/**
 * URL → Normalize: WF30 of seed 003. Puts a URL in canonical form (normalizeUrl.ts), upserts it in
 * content.urls (unique per tenant and canonical form) and enqueues its `url_fetch` job (WF31) once per
 * URL and chat.
 * Input `req`: `{ tenant_id (uuid), url (string), ctx: { chat_id, visibility "group"|"dm",
 *   dm_owner_user_id (dm only), message_version_id|null } }`.
 * Output: `{ url_id, normalized_url, fetch_job_id }`.
 * Errors: 422 `req.<field>`, 422 INVALID_URL / UNSUPPORTED_SCHEME (field req.url); 503/500 db.
 */
import { z } from 'zod';
import { parseRequest, TenantId } from '../../../shared/contracts/request';
import { ContractError, fromPgError } from '../../../shared/errors';
import { SourceCtx } from '../../../shared/contracts/sourceCtx';
import { enqueueOnce } from '../../../shared/jobs/enqueue';
import { JOB_TYPES } from '../../../shared/jobs/registry';
import { FIND_URL, UPSERT_URL } from '../../../shared/statements/content';
import type { KnowledgeOperation } from '../types';
import { InvalidUrlError, normalizeUrl } from './normalizeUrl';

export const NormalizeUrlRequest = z.object({
	tenant_id: TenantId,
	url: z
		.string({ required_error: 'is required' })
		.min(1, 'must not be empty')
		.max(8192, 'is longer than 8192 characters'),
	ctx: SourceCtx,
	trace_id: z.string().nullish(),
});

const WHERE = { table: 'content.urls' };

export const normalizeOperation: KnowledgeOperation = {
	value: 'normalize',
	name: 'Normalize',
	action: 'Normalize a URL',
	description: 'Store the canonical form of a URL once per tenant and enqueue its fetch (WF30)',
	workflow: 'WF30',
	async execute({ pool, state, correlationId }, raw) {
		const req = parseRequest(NormalizeUrlRequest, raw, WHERE);
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, chat_id: req.ctx.chat_id, trace_id: req.trace_id ?? null });
		let canonical: { normalized_url: string; host: string };
		try {
			canonical = normalizeUrl(req.url);
		} catch (error) {
			if (!(error instanceof InvalidUrlError)) throw error;
			throw ContractError.validation(
				error.message,
				{ code: error.code, field: 'req.url', url: req.url },
				{ operation: 'validate', ...WHERE },
			);
		}
		let urlId: number;
		try {
			const { rows } = await pool.query(UPSERT_URL, [req.tenant_id, canonical.normalized_url, req.url, canonical.host]);
			urlId = Number((rows[0] ?? (await pool.query(FIND_URL, [req.tenant_id, canonical.normalized_url])).rows[0]).id);
		} catch (error) {
			throw fromPgError(error, { operation: 'upsert', ...WHERE });
		}
		const fetchJobId = await enqueueOnce(pool, {
			tenant_id: req.tenant_id,
			job_type: JOB_TYPES.url_fetch,
			dedup_key: `url_fetch:${urlId}:${req.ctx.chat_id}`,
			payload: { tenant_id: req.tenant_id, url_id: urlId, ctx: req.ctx, trace_id: req.trace_id ?? null },
			correlation_id: correlationId,
		});
		return { url_id: urlId, normalized_url: canonical.normalized_url, fetch_job_id: fetchJobId };
	},
};
