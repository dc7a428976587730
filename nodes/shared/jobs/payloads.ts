/**
 * The payload of each job type (ops.jobs.payload, the worker's `req`), as its producer writes it: the
 * ids and shapes the worker needs (seed 003 WF20–WF51 inputs). Checked by enqueue (./enqueue.ts) before
 * anything is written; the worker's own request schema still applies its business limits (a URL longer
 * than the worker accepts is recorded as that job's failure, not refused at enqueue). Passthrough: extra
 * fields (e.g. `correlation_id`) are kept.
 */
import { z } from 'zod';
import { BigIntLike, DbId, TenantId } from '../contracts/request';
import { SourceCtx } from '../contracts/sourceCtx';

const TraceId = z.string().nullish();
const Text = z.string({ required_error: 'is required' }).min(1, 'must not be empty');

/**
 * WF10 → WF20: the stored update's raw.telegram_updates id (+ meta). Built in SQL by Telegram Ingest
 * (INGEST_UPDATE), which does not copy the update into the job (issue 14): the worker reads the raw row.
 * A producer may still carry the update itself in `update` (then `raw_update_id` is optional); one of
 * the two is required.
 */
export const TelegramUpdatePayload = z
	.object({
		tenant_id: TenantId,
		bot_id: z.string({ required_error: 'is required' }).uuid('must be a UUID'),
		raw_update_id: DbId.nullish(),
		update_id: BigIntLike,
		update_type: z.string().nullish(),
		trace_id: TraceId,
		correlation_id: z.string().uuid('must be a UUID').nullish(),
		update: z
			.object({ update_id: z.number({ required_error: 'is required' }).int() })
			.passthrough()
			.optional(),
	})
	.passthrough()
	.refine((p) => p.update !== undefined || (p.raw_update_id !== undefined && p.raw_update_id !== null), {
		message: 'is required when the payload has no update',
		path: ['raw_update_id'],
	});

/** WF20 → WF30: one URL of a message. */
export const UrlNormalizePayload = z
	.object({ tenant_id: TenantId, url: Text, ctx: SourceCtx, trace_id: TraceId })
	.passthrough();

/** WF30 → WF31: the canonical URL row to fetch. */
export const UrlFetchPayload = z
	.object({ tenant_id: TenantId, url_id: DbId, ctx: SourceCtx, trace_id: TraceId })
	.passthrough();

/** WF20 → WF32: one attachment of a message. */
export const FileDownloadPayload = z
	.object({
		tenant_id: TenantId,
		file_id: Text,
		file_unique_id: Text,
		file_name: z.string().nullish(),
		mime_type: z.string().nullish(),
		file_size: z.number().int().nonnegative().nullish(),
		ctx: SourceCtx,
		trace_id: TraceId,
	})
	.passthrough();

/** WF31/WF32 → WF33 and WF33 → WF40: a stored document. */
export const DocumentPayload = z.object({ tenant_id: TenantId, document_id: DbId, trace_id: TraceId }).passthrough();

/** WF40 → WF41: a chunked document and the embedding model. */
export const DocumentEmbedPayload = z
	.object({ tenant_id: TenantId, document_id: DbId, model_id: DbId, trace_id: TraceId })
	.passthrough();

/** WF20 → WF51: a question to the bot. */
export const QaAnswerPayload = z
	.object({
		tenant_id: TenantId,
		tg_user_id: BigIntLike,
		channel: z.enum(['group', 'dm'], { errorMap: () => ({ message: 'must be "group" or "dm"' }) }),
		chat_id: BigIntLike.nullish(),
		question: Text,
		question_message_version_id: DbId.nullish(),
		trace_id: TraceId,
	})
	.passthrough();

/**
 * The payload schema of each job type of ./registry.json, keyed by job type: a new type's schema goes here
 * (./registry.ts reads this map; a type of registry.json without a schema here does not compile).
 */
export const PAYLOAD_SCHEMAS = {
	telegram_update: TelegramUpdatePayload,
	url_normalize: UrlNormalizePayload,
	url_fetch: UrlFetchPayload,
	file_download: FileDownloadPayload,
	document_extract: DocumentPayload,
	document_chunk: DocumentPayload,
	document_embed: DocumentEmbedPayload,
	qa_answer: QaAnswerPayload,
} as const satisfies Record<string, z.ZodTypeAny>;
