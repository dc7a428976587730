/**
 * Canonical envelopes every node and workflow returns (seed 003 §0.3, ErrorEnvelope v1 of seed 002 §1.4).
 *
 * These zod schemas are the single source of truth: the TypeScript types are `z.infer` of them, the
 * builders in `../envelopeBuilders.ts` validate against them, and the tests assert outputs with them.
 */
import { z } from 'zod';

/** Error kinds of seed 003 §0.3, extended (seed 003 §2 allows additive changes) with validation,
 * not_found, conflict and locked for the 4xx answers the nodes give. */
export const ErrorKind = z.enum([
	'db',
	'upstream',
	'auth',
	'rate_limit',
	'validation',
	'not_found',
	'conflict',
	'locked',
	'unknown',
]);
export type ErrorKind = z.infer<typeof ErrorKind>;

/** `meta.correlation` (seed 003 §0.3, seed 002 §1.4). Every key is present; unknown values are null. */
export const Correlation = z
	.object({
		correlation_id: z.string().uuid(),
		trace_id: z.string().nullable(),
		tenant_id: z.string().nullable(),
		chat_id: z.union([z.number(), z.string()]).nullable(),
		message_id: z.number().nullable(),
		workflow: z.string().nullable(),
		node: z.string().nullable(),
		job_id: z.number().nullable(),
	})
	.strict();
export type Correlation = z.infer<typeof Correlation>;

/** `meta` of both envelopes: `source` is the workflow (WFxx) or node that built the envelope. */
export const Meta = z
	.object({
		source: z.string().min(1),
		ts: z.string().datetime(),
		correlation: Correlation,
	})
	.strict();

/** SuccessEnvelope (seed 003 §0.3): `ok: true`, `error: null`, `data` an object. */
export const SuccessEnvelope = z
	.object({
		ok: z.literal(true),
		status_code: z.number().int().min(200).max(299),
		data: z.record(z.unknown()),
		error: z.null(),
		meta: Meta,
	})
	.strict();
export type SuccessEnvelope = z.infer<typeof SuccessEnvelope>;

/**
 * A SuccessEnvelope as an n8n output item of a routed node (ArangoCAS, Pipeline Capture, Knowledge Bot):
 * the envelope without its `error: null`. n8n (2.4.8 and later) takes a first output item whose `json.error`
 * is defined — null included — for a failed try of a node with Retry On Fail and runs the node again after
 * Wait Between Tries, up to Max Tries: every successful call ran 3 times, 1 s apart (issue 29 P7). Expressions
 * reading `$json.error` see `undefined` instead of `null`; HTTP answers (WF10, Context Loader) keep `error: null`.
 */
export const SuccessItem = SuccessEnvelope.omit({ error: true });
export type SuccessItem = z.infer<typeof SuccessItem>;

/** `error.details.raw_error` (seed 002 §1.4): the upstream error as far as it is known. */
export const RawError = z
	.object({
		message: z.string(),
		http_code: z.number().int().nullable(),
		node_type: z.string().nullable(),
	})
	.strict();

/** `error.details` (seed 002 §1.4): always an object, never a string (seed 002 §3.3). */
export const ErrorDetails = z
	.object({
		ctx: z.record(z.unknown()),
		raw_error: RawError,
		error_context: z.record(z.unknown()).nullable(),
	})
	.passthrough();

/** `_internal` (seed 002 §1.4): identifiers the error pipe used, for logs and tests. */
export const Internal = z
	.object({
		correlation_id: z.string().uuid(),
		tenant_id: z.string().nullable(),
		job_id: z.number().nullable(),
	})
	.passthrough();

/** Longest `message` of a PublicError (UTF-16 code units); a longer one is cut and ends with "…". */
export const MAX_PUBLIC_MESSAGE_LENGTH = 500;
/** Longest `field` of a PublicError (a validation error's field path, e.g. `body.user_id`). */
export const MAX_PUBLIC_FIELD_LENGTH = 256;

/** A PublicError's `code`: the machine reason (`error.details.code`, e.g. REV_CONFLICT, LOCKED, UNREACHABLE). */
export const PUBLIC_CODE_PATTERN = /^[A-Z_]{1,64}$/;
/** An ArangoDB `_rev` as a PublicError carries it. */
export const PUBLIC_REV_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** An ArangoDB document id ("atoms/a1") as a key of a PublicError's `current_revs` (collection/key characters). */
export const PUBLIC_DOCUMENT_ID_PATTERN = /^[A-Za-z0-9_-]{1,256}\/[A-Za-z0-9_\-:.@()+,=;$!*'%]{1,254}$/;
/** Most entries of a PublicError's `current_revs`; a conflict that read more answers none. */
export const MAX_PUBLIC_CURRENT_REVS = 100;

/**
 * PublicError (issue 25 §4): what an outside caller (a webhook's client, Telegram) is answered when its call
 * is refused or fails — the ErrorEnvelope's `public` projection and nothing more:
 * `{ ok: false, status_code, kind, message, correlation_id, field?, code?, current_rev?, current_revs?, locked_until? }`.
 * `message` is the error's own message for a 4xx (it is about the caller's request) and a fixed text naming
 * only the kind for a 5xx (which may name servers, tables or addresses); `field` is set only for a
 * `validation` error that names one; `code` is the machine reason (`details.code`, PUBLIC_CODE_PATTERN) of any
 * error that has one. Only a `conflict` or `locked` error (ArangoCAS) may carry what a client needs to retry:
 * `current_rev` (the `_rev` to retry with, null when the document is gone), `current_revs` (document id →
 * `_rev` or null, at most MAX_PUBLIC_CURRENT_REVS) and `locked_until` (ISO 8601 time the lock ends). Everything
 * else (details.input with the request's headers and body, ctx, error_context, `_internal`, `locked_by`)
 * stays in ops.errors, found there by `correlation_id`. Strict: an extra key fails validation.
 */
export const PublicError = z
	.object({
		ok: z.literal(false),
		status_code: z.number().int().min(400).max(599),
		kind: ErrorKind,
		message: z.string().min(1).max(MAX_PUBLIC_MESSAGE_LENGTH),
		correlation_id: z.string().uuid(),
		field: z.string().min(1).max(MAX_PUBLIC_FIELD_LENGTH).optional(),
		code: z.string().regex(PUBLIC_CODE_PATTERN).optional(),
		current_rev: z.string().regex(PUBLIC_REV_PATTERN).nullable().optional(),
		current_revs: z
			.record(z.string().regex(PUBLIC_DOCUMENT_ID_PATTERN), z.string().regex(PUBLIC_REV_PATTERN).nullable())
			.refine((revs) => Object.keys(revs).length <= MAX_PUBLIC_CURRENT_REVS, {
				message: `at most ${MAX_PUBLIC_CURRENT_REVS} entries`,
			})
			.optional(),
		locked_until: z.string().datetime().optional(),
	})
	.strict();
export type PublicError = z.infer<typeof PublicError>;

/** ErrorEnvelope v1 (seed 002 §1.4, seed 003 §0.3). `status_code` is the HTTP status to answer with.
 * `public` (issue 25 §4) is the PublicError the webhooks answer outside callers with (`{{ $json.public }}`). */
export const ErrorEnvelope = z
	.object({
		ok: z.literal(false),
		status_code: z.number().int().min(400).max(599),
		data: z.null(),
		error: z
			.object({
				kind: ErrorKind,
				message: z.string().min(1),
				retryable: z.boolean(),
				details: ErrorDetails,
			})
			.strict(),
		meta: Meta,
		public: PublicError,
		_internal: Internal.optional(),
	})
	.strict();
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

export const Envelope = z.union([SuccessEnvelope, ErrorEnvelope]);
export type Envelope = z.infer<typeof Envelope>;
