/**
 * ErrorPipe step 1 (seed 002 §1.2–§1.4): turns ANY item into exactly one valid ErrorEnvelope v1.
 * Never throws on its input. Pure: no I/O, the clock and the UUID source are parameters.
 *
 * Accepted shapes (all optional, any extra fields ignored): `ctx`, `_ctx`, `error_context`, `_err`
 * (node/operation/table stamped by an "ERR — Source <node>" Set node), `message`, `description`,
 * `errorMessage`, `statusCode`, `error` (a string, an n8n NodeApiError/NodeOperationError JSON, or the
 * `{ error: {...} }` object this package's nodes emit on their error output), `n8nDetails`,
 * `test_mode`, `test_case`, `_test_job_id`.
 */
import { ErrorKind, type ErrorEnvelope } from '../../shared/contracts/envelope';
import { ERRORPIPE_CONTRACT_VERSION } from '../../shared/contracts/ctx';
import { failure, isUuid, newCorrelationId } from '../../shared/envelope';
import { field, isRecord, recordAt, toJsonObject, toJsonSafe } from '../../shared/json';

export interface NormalizeOptions {
	/** `meta.source` of the envelope: "WF99" unless the node says otherwise. */
	source: string;
	now?: Date;
	newId?: () => string;
}

export interface NormalizedError {
	envelope: ErrorEnvelope;
	/** `ops.jobs.id` from ctx, or null: the job path runs only when it is set (seed 002 §1.3 inv. 2). */
	jobId: number | null;
	/** The contract version the caller declared (`ctx.contracts.errorpipe`), else the current one. */
	contractVersion: number;
	/**
	 * `ctx.job_claim_token` (the attempt's `ops.jobs.claim_token`, from Claim Jobs via WF90), or null when ctx
	 * has none (null/""/absent). Not validated here: a value that is not a UUID (a non-string becomes
	 * `"<invalid: type>"`) never matches a claim, so its job path is stale.
	 */
	jobClaimToken: string | null;
}

/** ctx.job_claim_token as text; null when absent (older workflows: the job path then checks `running` only). */
function claimTokenOf(value: unknown): string | null {
	if (value === undefined || value === null || value === '') return null;
	return typeof value === 'string' ? value : `<invalid: ${Array.isArray(value) ? 'array' : typeof value}>`;
}

const DEFAULT_STATUS: Record<ErrorKind, number> = {
	db: 500,
	upstream: 502,
	auth: 401,
	rate_limit: 429,
	validation: 400,
	not_found: 404,
	conflict: 409,
	locked: 423,
	unknown: 500,
};

function firstString(...values: unknown[]): string | undefined {
	for (const value of values) {
		if (typeof value === 'string' && value.trim() !== '') return value;
	}
	return undefined;
}

/** An HTTP-like status from a number or numeric string (NodeApiError keeps `httpCode` as a string). */
function httpCode(...values: unknown[]): number | null {
	for (const value of values) {
		const n = typeof value === 'string' && /^\d{3}$/.test(value.trim()) ? Number(value) : value;
		if (typeof n === 'number' && Number.isInteger(n) && n >= 100 && n <= 599) return n;
	}
	return null;
}

/** A job id from a number or numeric string; null/undefined/""/0 mean "no job" (seed 002 §1.3). */
function jobIdOf(value: unknown): number | null {
	const n = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
	return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : null;
}

function classify(status: number | null, hasDbContext: boolean, nodeType: string | null, sqlstate: unknown): ErrorKind {
	if (status === 401 || status === 403) return 'auth';
	if (status === 429) return 'rate_limit';
	if (status === 400 || status === 422) return 'validation';
	if (status === 404) return 'not_found';
	if (status === 409) return 'conflict';
	if (status === 423) return 'locked';
	if (hasDbContext || (typeof sqlstate === 'string' && /^[0-9A-Z]{5}$/.test(sqlstate))) return 'db';
	if (nodeType && /httpRequest|webhook/i.test(nodeType)) return 'upstream';
	if (status !== null && status >= 500) return 'upstream';
	return 'unknown';
}

/** Builds the envelope. See the module comment for the accepted input shapes. */
export function normalizeErrorItem(input: unknown, options: NormalizeOptions): NormalizedError {
	const json: Record<string, unknown> = isRecord(input) ? input : { message: typeof input === 'string' ? input : undefined };
	const err = recordAt(json, 'error');
	const n8nDetails = recordAt(json, 'n8nDetails');

	// ctx: the canonical `ctx` wins over the in-workflow glue `_ctx`, which wins over what a node put in its error.
	const ctx = {
		...toJsonObject(recordAt(err, 'ctx') ?? {}),
		...toJsonObject(isRecord(json._ctx) ? json._ctx : {}),
		...toJsonObject(isRecord(json.ctx) ? json.ctx : {}),
	};

	// error_context: explicit block, else the node's own, completed by the `_err.*` stamps of the error branch.
	const stamped = isRecord(json._err) ? toJsonObject(json._err) : {};
	const givenContext = recordAt(json, 'error_context') ?? recordAt(err, 'error_context');
	const given = givenContext ? toJsonObject(givenContext) : null;
	const errorContext: Record<string, unknown> | null =
		given || Object.keys(stamped).length ? { ...stamped, ...(given ?? {}) } : null;

	const incomingCorrelation = errorContext?.correlation_id ?? ctx.correlation_id;
	const correlationId = isUuid(incomingCorrelation) ? incomingCorrelation : (options.newId ?? newCorrelationId)();
	const extra: Record<string, unknown> = { contract_version: ERRORPIPE_CONTRACT_VERSION };
	if (incomingCorrelation !== undefined && !isUuid(incomingCorrelation)) {
		// Kept, not silently dropped: the caller's id was not a UUID, so a new one correlates this error.
		extra.invalid_correlation_id = toJsonSafe(incomingCorrelation) ?? null;
	}

	const message =
		firstString(
			errorContext?.error_message,
			json.message,
			typeof json.error === 'string' ? json.error : undefined,
			err?.message,
			json.errorMessage,
			json.description,
			err?.description,
		) ?? 'Unknown error';
	const nodeType = firstString(err?.node_type, field(err?.node, 'type'), n8nDetails?.nodeType, json.node_type) ?? null;
	const code = httpCode(
		errorContext?.status_code,
		json.statusCode,
		json.status_code,
		err?.status_code,
		err?.http_code,
		err?.httpCode,
		n8nDetails?.httpCode,
	);
	const declaredKind = ErrorKind.safeParse(err?.kind);
	const kind: ErrorKind = declaredKind.success
		? declaredKind.data
		: classify(code, Boolean(errorContext?.table || errorContext?.operation), nodeType, field(err?.details, 'sqlstate') ?? err?.code);
	const statusCode = code !== null && code >= 400 ? code : DEFAULT_STATUS[kind];
	const retryable =
		typeof err?.retryable === 'boolean'
			? err.retryable
			: kind === 'rate_limit' || ((kind === 'db' || kind === 'upstream') && (statusCode >= 502 || code === null));

	if (err && isRecord(err.details) && Object.keys(err.details).length) extra.node_details = toJsonObject(err.details);
	const testMode = json.test_mode ?? ctx.test_mode;
	const testCase = json.test_case ?? ctx.test_case;
	const internal: Record<string, unknown> = {};
	if (testMode !== undefined) extra.test_mode = internal.test_mode = testMode;
	if (testCase !== undefined) extra.test_case = internal.test_case = testCase;
	if (json._test_job_id !== undefined) internal._test_job_id = json._test_job_id;

	const contractVersion =
		jobIdOf((ctx.contracts as Record<string, unknown> | undefined)?.errorpipe) ?? ERRORPIPE_CONTRACT_VERSION;
	const jobId = jobIdOf(ctx.job_id);
	const tenantId = typeof ctx.tenant_id === 'string' ? ctx.tenant_id : null;
	const envelope = failure({
		status_code: statusCode,
		kind,
		message,
		retryable,
		source: options.source,
		correlation: {
			correlation_id: correlationId,
			trace_id: typeof ctx.trace_id === 'string' ? ctx.trace_id : null,
			tenant_id: tenantId,
			chat_id: typeof ctx.chat_id === 'number' || typeof ctx.chat_id === 'string' ? ctx.chat_id : null,
			message_id: typeof ctx.message_id === 'number' ? ctx.message_id : null,
			workflow: firstString(ctx.workflow, errorContext?.workflow) ?? null,
			node: firstString(errorContext?.node, ctx.node) ?? null,
			job_id: jobId,
		},
		ctx,
		raw_error: {
			message: firstString(json.message, err?.message, typeof json.error === 'string' ? json.error : undefined) ?? message,
			http_code: code,
			node_type: nodeType,
		},
		error_context: errorContext,
		extra_details: { ...extra, contract_version: contractVersion },
		internal,
		now: options.now,
	});
	return { envelope, jobId, contractVersion, jobClaimToken: claimTokenOf(ctx.job_claim_token) };
}
