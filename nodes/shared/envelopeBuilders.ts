/**
 * The only place envelopes are assembled (seed 003 §0.3, seed 002 §1.4). Every builder validates its
 * result against the zod contract, so a node can never emit an envelope with a missing key, an
 * `undefined`, or `error.details` that is not an object.
 */
import { randomUUID } from 'node:crypto';
import {
	Correlation,
	ErrorEnvelope,
	MAX_PUBLIC_FIELD_LENGTH,
	MAX_PUBLIC_CURRENT_REVS,
	MAX_PUBLIC_MESSAGE_LENGTH,
	PUBLIC_CODE_PATTERN,
	PUBLIC_DOCUMENT_ID_PATTERN,
	PUBLIC_REV_PATTERN,
	ErrorKind,
	PublicError,
	SuccessEnvelope,
} from './contracts/envelope';
import { isRecord, toJsonObject } from './json';

/** A fresh correlation id (UUID v4). Call it only when no correlation id came in (seed 002 §1.3). */
export function newCorrelationId(): string {
	return randomUUID();
}

/** Fields of `meta.correlation`; any left out become null. */
export type CorrelationInit = { correlation_id: string } & Partial<Omit<Correlation, 'correlation_id'>>;

/** Builds `meta.correlation` with every key present (null where unknown). */
export function correlation(init: CorrelationInit): Correlation {
	return Correlation.parse({
		correlation_id: init.correlation_id,
		trace_id: init.trace_id ?? null,
		tenant_id: init.tenant_id ?? null,
		chat_id: init.chat_id ?? null,
		message_id: init.message_id ?? null,
		workflow: init.workflow ?? null,
		node: init.node ?? null,
		job_id: init.job_id ?? null,
	});
}

/**
 * `meta.correlation` fields from a travelling ctx (seed 003 §0.4): correlation_id, trace_id, tenant_id,
 * chat_id and message_id where ctx has them with the right type, plus the answering workflow and node.
 */
export function correlationOf(ctx: Record<string, unknown>, at: { workflow: string; node: string }): CorrelationInit {
	return {
		correlation_id: String(ctx.correlation_id),
		trace_id: typeof ctx.trace_id === 'string' ? ctx.trace_id : null,
		tenant_id: typeof ctx.tenant_id === 'string' ? ctx.tenant_id : null,
		chat_id: typeof ctx.chat_id === 'number' ? ctx.chat_id : null,
		message_id: typeof ctx.message_id === 'number' ? ctx.message_id : null,
		workflow: at.workflow,
		node: at.node,
	};
}

/**
 * SuccessEnvelope: `{ ok: true, status_code, data, error: null, meta: { source, ts, correlation } }`.
 * @param source the workflow (e.g. "WF10") or node that answers
 * @throws ZodError when `data` is not JSON-safe object data or the correlation is invalid
 */
export function success(
	data: Record<string, unknown>,
	opts: { source: string; correlation: CorrelationInit; status_code?: number; now?: Date },
): SuccessEnvelope {
	return SuccessEnvelope.parse({
		ok: true,
		status_code: opts.status_code ?? 200,
		data: toJsonObject(data),
		error: null,
		meta: {
			source: opts.source,
			ts: (opts.now ?? new Date()).toISOString(),
			correlation: correlation(opts.correlation),
		},
	});
}

export interface FailureInit {
	status_code: number;
	kind: ErrorKind;
	message: string;
	retryable: boolean;
	source: string;
	correlation: CorrelationInit;
	ctx: Record<string, unknown>;
	raw_error: { message: string; http_code: number | null; node_type: string | null };
	error_context: Record<string, unknown> | null;
	/** Further `error.details` keys (objects and scalars, never JSON strings). */
	extra_details?: Record<string, unknown>;
	/** `_internal` beyond correlation_id/tenant_id/job_id (test_mode, test_case, …). */
	internal?: Record<string, unknown>;
	now?: Date;
}

/** What a 5xx answer says instead of its own message (which may name servers, tables or addresses). */
const SERVER_FAILURE: Record<ErrorKind, string> = {
	db: 'the database could not complete the request',
	upstream: 'a service this request depends on failed',
	rate_limit: 'too many requests',
	// a 5xx auth is our own credential refused upstream: internal, so nothing about authorisation
	auth: 'the request could not be completed',
	validation: 'the service is not configured to handle this request',
	not_found: 'the request could not be completed',
	conflict: 'the request could not be completed',
	locked: 'the request could not be completed',
	unknown: 'the request could not be completed',
};

/** `text` cut to `max` code units ("…" last), never ending in half a surrogate pair. */
function capped(text: string, max: number): string {
	if (text.length <= max) return text;
	let cut = text.slice(0, max - 1);
	if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
	return `${cut}…`;
}

/** The field a validation error names: `details.node_details.field` (a node's ContractError), else `details.field`. */
function validationField(details: Record<string, unknown>): string | undefined {
	const nodeDetails = isRecord(details.node_details) ? details.node_details : undefined;
	for (const value of [nodeDetails?.field, details.field]) {
		if (typeof value === 'string' && value.trim() !== '') return capped(value, MAX_PUBLIC_FIELD_LENGTH);
	}
	return undefined;
}

/**
 * The `message` of a PublicError: a 4xx keeps `message` (cut to MAX_PUBLIC_MESSAGE_LENGTH; a blank one says
 * "request refused"), a 5xx says only what kind of failure it was (SERVER_FAILURE) and that the
 * correlation id finds it. Pure.
 */
export function publicMessage(status_code: number, kind: ErrorKind, message: string): string {
	if (status_code >= 500)
		return `${SERVER_FAILURE[kind] ?? SERVER_FAILURE.unknown} (status ${status_code}); the correlation_id identifies it in the error log`;
	return message.trim() === '' ? `request refused (status ${status_code})` : capped(message, MAX_PUBLIC_MESSAGE_LENGTH);
}

/**
 * The `error` a FAILED pipeline run is answered with (Get Status, Pipeline Push; issue 25 §4): the
 * public message of the stored `maas.pipeline_runs.error` (`{ message, kind, status_code, correlation_id }`
 * from M11–M13's Fail Error, `{ message, code: "CASCADE_LIMIT", … }`, or any object a Fail was given).
 * Only a stored 4xx `status_code` (400–499) with a string `message` keeps that message; anything else —
 * no status, a 5xx, a rows stored before the fix with WF99's raw message — answers the fixed text of its
 * `kind` (ErrorKind, else `unknown`) with status 500 when none is stored. Pure; never throws.
 */
export function publicRunError(error: unknown): string {
	const stored = isRecord(error) ? error : {};
	const status =
		typeof stored.status_code === 'number' &&
		Number.isInteger(stored.status_code) &&
		stored.status_code >= 400 &&
		stored.status_code <= 599
			? stored.status_code
			: 500;
	const kind = ErrorKind.safeParse(stored.kind);
	const message = typeof stored.message === 'string' ? stored.message : '';
	return publicMessage(status, kind.success ? kind.data : 'unknown', message);
}

/** 9999-12-31T23:59:59.999Z: the last time `toISOString` writes with a four-digit year. */
const MAX_ISO_TIME_MS = 253_402_300_799_999;

/** `details.node_details` (a node's ContractError details, as the Error Pipe keeps them), else `details`. */
function reasonDetails(details: Record<string, unknown>): Record<string, unknown> {
	return isRecord(details.node_details) ? details.node_details : details;
}

/** The allowlisted retry facts of a conflict/locked error (see PublicError); anything out of shape is left out. */
function retryFacts(details: Record<string, unknown>): Partial<PublicError> {
	const facts: Partial<PublicError> = {};
	const rev = (value: unknown) => typeof value === 'string' && PUBLIC_REV_PATTERN.test(value);
	if (details.current_rev === null || rev(details.current_rev))
		facts.current_rev = details.current_rev as string | null;
	const revs = details.current_revs;
	if (isRecord(revs)) {
		const entries = Object.entries(revs);
		if (
			entries.length <= MAX_PUBLIC_CURRENT_REVS &&
			entries.every(([id, value]) => PUBLIC_DOCUMENT_ID_PATTERN.test(id) && (value === null || rev(value)))
		)
			facts.current_revs = Object.fromEntries(entries) as Record<string, string | null>;
	}
	const until = details.locked_until;
	// ms since epoch (ArangoCAS's locks) or the seed's ISO string (DATE_ADD)
	const time =
		typeof until === 'number' && Number.isFinite(until)
			? new Date(until)
			: typeof until === 'string' && until.length <= 64 && !Number.isNaN(Date.parse(until))
				? new Date(until)
				: undefined;
	const ms = time?.getTime() ?? Number.NaN;
	if (ms >= 0 && ms <= MAX_ISO_TIME_MS) facts.locked_until = new Date(ms).toISOString();
	return facts;
}

/** What `publicError` reads: an ErrorEnvelope's status, kind, message, correlation id and details. */
export interface PublicErrorInit {
	status_code: number;
	kind: ErrorKind;
	message: string;
	correlation_id: string;
	/**
	 * `error.details` (or the `extra_details` given to `failure`): only its validation field, `code` and, for
	 * a conflict/locked error, current_rev/current_revs/locked_until are read (from `node_details` when present).
	 */
	details?: Record<string, unknown>;
}

/**
 * The PublicError (issue 25 §4) of an error: `{ ok: false, status_code, kind, message, correlation_id, field?,
 * code?, current_rev?, current_revs?, locked_until? }`. A 4xx keeps its message (cut to MAX_PUBLIC_MESSAGE_LENGTH);
 * a 5xx says only what kind of failure it was and that the correlation id finds it (its own message stays in
 * ops.errors). `field` only for kind `validation`; `code` when `details.code` matches PUBLIC_CODE_PATTERN;
 * current_rev/current_revs/locked_until only for kind `conflict`/`locked`, each only when well-formed
 * (`locked_until` given in ms since epoch or as a date string is answered as ISO 8601). Pure; never reads the
 * input, headers, ctx, `_internal` or any other detail (`locked_by`, `arango_message`, `missing`, …).
 * @throws ZodError when the status, kind or correlation id is out of contract
 */
export function publicError(init: PublicErrorInit): PublicError {
	const message = publicMessage(init.status_code, init.kind, init.message);
	const field = init.kind === 'validation' ? validationField(init.details ?? {}) : undefined;
	const reason = reasonDetails(init.details ?? {});
	const code = typeof reason.code === 'string' && PUBLIC_CODE_PATTERN.test(reason.code) ? reason.code : undefined;
	return PublicError.parse({
		ok: false,
		status_code: init.status_code,
		kind: init.kind,
		message,
		correlation_id: init.correlation_id,
		...(field === undefined ? {} : { field }),
		...(code === undefined ? {} : { code }),
		...(init.kind === 'conflict' || init.kind === 'locked' ? retryFacts(reason) : {}),
	});
}

/**
 * ErrorEnvelope v1 (seed 002 §1.4), validated, with its `public` projection (`publicError`).
 * @throws ZodError on an out-of-contract value
 */
export function failure(init: FailureInit): ErrorEnvelope {
	const corr = correlation(init.correlation);
	const extraDetails = toJsonObject(init.extra_details ?? {});
	return ErrorEnvelope.parse({
		ok: false,
		status_code: init.status_code,
		data: null,
		error: {
			kind: init.kind,
			message: init.message,
			retryable: init.retryable,
			details: {
				...extraDetails,
				ctx: toJsonObject(init.ctx),
				raw_error: init.raw_error,
				error_context: init.error_context === null ? null : toJsonObject(init.error_context),
			},
		},
		meta: { source: init.source, ts: (init.now ?? new Date()).toISOString(), correlation: corr },
		public: publicError({
			status_code: init.status_code,
			kind: init.kind,
			message: init.message,
			correlation_id: corr.correlation_id,
			details: extraDetails,
		}),
		_internal: {
			...toJsonObject(init.internal ?? {}),
			correlation_id: corr.correlation_id,
			tenant_id: corr.tenant_id,
			job_id: corr.job_id,
		},
	});
}
