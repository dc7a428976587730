/**
 * ErrorPipe step 1 (seed 002 §1.2–§1.4): turns ANY item into exactly one valid ErrorEnvelope v1 whose
 * every value PostgreSQL can store (issue 10 §1): the input is sanitised here, once, at the boundary
 * (nodes/shared/sanitize.ts), so recording it can only fail when the database itself does.
 * Never throws on its input. Pure: no I/O, the clock and the UUID source are parameters.
 *
 * Accepted shapes (all optional): `ctx`, `_ctx`, `error_context`, `_err` (node/operation/table stamped by
 * an "ERR — Source <node>" Set node), `message` (a string, or an object whose `message`/`detail`/
 * `description`/`reason`/`text`/`error` string — else its JSON text — is the message), `description`,
 * `errorMessage`, `reason`, `detail`, `statusCode`, `error` (a string, an n8n NodeApiError/NodeOperationError
 * JSON, or the `{ error: {...} }` object this package's nodes emit on their error output), `n8nDetails`,
 * `execution` + `workflow` (n8n's Error Trigger: `execution.id`, `.error`, `.lastNodeExecuted`, `.mode`,
 * `.retryOf`, `.executionContext.parentExecutionId`; `workflow.id`, `.name`; or `trigger.error` when no
 * execution started), `test_mode`, `test_case`, `_test_job_id`. Every other
 * field, and the fields of `error`/`n8nDetails` not used, are kept in `error.details.input` (sanitised,
 * the first copy dropped when details run out of budget; of `error.node` only id/name/type/typeVersion).
 */
import { ErrorKind, type ErrorEnvelope } from '../../shared/contracts/envelope';
import { ERRORPIPE_CONTRACT_VERSION } from '../../shared/contracts/ctx';
import { isUuid } from '../../shared/contracts/ids';
import { failure, newCorrelationId } from '../../shared/envelopeBuilders';
import { field, isRecord, mergeOwn, recordAt, setOwn, UNREADABLE } from '../../shared/json';
import { MAX_DETAILS_BYTES, MAX_ID_TEXT_LENGTH, MAX_STRING_LENGTH, Sanitizer } from '../../shared/sanitize';
import { rememberedSecrets } from '../../shared/redact';
import { absent, fitOrText, INT4_MAX, positiveInt } from './columns';

export interface NormalizeOptions {
	/** `meta.source` of the envelope: "WF99" unless the node says otherwise. */
	source: string;
	/**
	 * The n8n execution the error belongs to, from the engine (issue 25 §2): the Error Pipe node passes the
	 * execution that called its workflow (WF99 called by an error branch), else its own. It wins over an id
	 * the item names (error_context/ctx `execution_id`, kept as `details.item_execution_id`); only an Error
	 * Trigger item's `execution.id` comes first (that item is the engine's). Not used with `oncePerExecution`.
	 */
	executionId?: string | null;
	/**
	 * "Once per Failed Execution" (the catch-all): the execution is only an Error Trigger item's `execution.id`
	 * (none for an item without one, e.g. `trigger.error`: no claim), never the engine's nor another field.
	 */
	oncePerExecution?: boolean;
	/** n8n's instance id (getInstanceId()), stored as `details.instance_id`: with the execution id it names the execution. */
	instanceId?: string | null;
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
	 * `ctx.job_claim_token` (the attempt's `ops.jobs.claim_token`, from Claim Jobs via WF90), read from the
	 * item itself (never from the budget-cut copy in details), or null when ctx has none (key absent, or
	 * null/undefined: ctx contract `nullable`). Any other value that is not a UUID — "", a number, an array, a
	 * getter that throws — is returned as `"<invalid: type>"`, which never matches a claim: its job path is
	 * `stale`, never the tokenless fallback.
	 */
	jobClaimToken: string | null;
	/**
	 * The failed n8n execution (also `details.execution_id`): the Error Trigger's `execution.id`, else
	 * error_context/ctx `execution_id`, else `options.executionId`; null when none fits (1–128 characters of
	 * `A–Z a–z 0–9 _ . : -`, or a non-negative integer; another value is kept in `details.invalid_execution_id`).
	 */
	executionId: string | null;
	/**
	 * The node that failed, by the Error Trigger item (`execution.error.node.name`, else
	 * `execution.lastNodeExecuted`), else the envelope's node (`meta.correlation.node`); null when none is named.
	 */
	failedNode: string | null;
}

/**
 * An item shaped like n8n's Error Trigger output: `workflow` an object and `execution` (a failed execution)
 * or `trigger` (a trigger that failed before an execution existed) an object. Only such an item's
 * `execution`/`trigger`/`workflow` are read as the Error Trigger's (and left out of `details.input`).
 */
export function isErrorTriggerItem(json: Record<string, unknown>): boolean {
	const own = mergeOwn(json);
	return isRecord(own.workflow) && (isRecord(own.execution) || isRecord(own.trigger));
}

/** Query parameters whose values are secrets (`?api_key=…`): their values are replaced in the kept error text. */
const SECRET_QUERY =
	/([?&;](?:api[_-]?key|apikey|key|token|access[_-]?token|auth|secret|password|passwd|pwd|sig|signature)=)[^&#\s"'<>]*/gi;

/** `text` with the values of secret query parameters replaced by [REDACTED]. */
export function redactQuerySecrets(text: string): string {
	return text.replace(SECRET_QUERY, '$1[REDACTED]');
}

/** An n8n execution id (a digit string in 2.4.8) that can key ops.error_executions, else null. */
export function executionIdOf(value: unknown): string | null {
	if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? String(value) : null;
	return typeof value === 'string' && /^[A-Za-z0-9_.:-]{1,128}$/.test(value) ? value : null;
}

/** ctx.job_claim_token: the UUID, null when none was given (older workflows), else `<invalid: type>`. */
function claimTokenOf(value: unknown): string | null {
	if (value === undefined || value === null) return null;
	if (isUuid(value)) return value;
	return `<invalid: ${value === UNREADABLE ? 'unreadable' : Array.isArray(value) ? 'array' : typeof value === 'string' ? 'not a UUID' : typeof value}>`;
}

/**
 * A message given as something else than a string, made readable: a string field of an object (`message`,
 * `detail`, `description`, `reason`, `text`, `error`), else the object's JSON text (a bounded copy); a number
 * or boolean as text. Strings as they are; undefined for nothing usable.
 */
function messageText(value: unknown): string | undefined {
	if (typeof value === 'string') return value;
	if (typeof value === 'number' || typeof value === 'boolean') return String(value);
	if (value === null || typeof value !== 'object') return undefined;
	const copy = new Sanitizer({
		budgetBytes: 4 * MAX_ID_TEXT_LENGTH,
		maxDepth: 8,
		maxStringLength: MAX_ID_TEXT_LENGTH,
	}).value(value);
	if (isRecord(copy)) {
		const named = firstString(copy.message, copy.detail, copy.description, copy.reason, copy.text, copy.error);
		if (named !== undefined) return named;
	}
	const text = copy === undefined ? '' : JSON.stringify(copy);
	return text === '{}' || text === '[]' || text === '' ? undefined : text;
}

/** Top-level fields whose whole value is copied elsewhere in the envelope (ctx, error_context, _internal …). */
const CONSUMED_FIELDS = new Set(['ctx', '_ctx', 'error_context', '_err', 'test_mode', 'test_case', '_test_job_id']);
/** …and, of an Error Trigger item only (isErrorTriggerItem), these (details.execution). */
const CONSUMED_TRIGGER_FIELDS = new Set([...CONSUMED_FIELDS, 'execution', 'trigger', 'workflow']);
/** Fields of `error` the envelope carries already (ctx, kind, details → node_details …). */
const CONSUMED_ERROR_FIELDS = new Set([
	'ctx',
	'error_context',
	'kind',
	'retryable',
	'details',
	'node_type',
	'status_code',
	'http_code',
	'httpCode',
]);
/** Of an n8n node JSON (`error.node`), only what names it: its parameters may hold values typed in by hand. */
const NODE_FIELDS = ['id', 'name', 'type', 'typeVersion'];

/**
 * The fields of the item the envelope does not carry otherwise (`details.input`), so that an error in a shape
 * the Error Pipe does not know (`reason`, `execution`, `error.context`, `n8nDetails.*` …) is still in the row:
 * every top-level field but those consumed, a string used as the message / node type / status left out;
 * of `error` and `n8nDetails` the fields not used. Read with `mergeOwn` (a getter that throws is a marker).
 */
function unusedFields(
	json: Record<string, unknown>,
	usedStrings: Array<string | undefined>,
	code: number | null,
	errorTrigger: boolean,
): Record<string, unknown> {
	const used = new Set(usedStrings.filter((v): v is string => v !== undefined));
	const rest: Record<string, unknown> = {};
	const keep = (from: Record<string, unknown>, skip: Set<string>, to: Record<string, unknown>) => {
		for (const [key, value] of Object.entries(from)) {
			if (skip.has(key) || (typeof value === 'string' && used.has(value))) continue;
			if (
				(key === 'statusCode' || key === 'status_code' || key === 'httpCode') &&
				code !== null &&
				httpCode(value) === code
			)
				continue;
			setOwn(to, key, value);
		}
	};
	const top = mergeOwn(json);
	for (const name of ['error', 'n8nDetails'] as const) {
		const inner = top[name];
		if (!isRecord(inner)) continue;
		const part: Record<string, unknown> = {};
		const fields = mergeOwn(inner);
		if (name === 'error' && isRecord(fields.node)) {
			const node = mergeOwn(fields.node);
			fields.node = Object.fromEntries(NODE_FIELDS.filter((k) => node[k] !== undefined).map((k) => [k, node[k]]));
		}
		keep(fields, name === 'error' ? CONSUMED_ERROR_FIELDS : new Set(['nodeType']), part);
		top[name] = Object.keys(part).length ? part : undefined;
	}
	keep(top, errorTrigger ? CONSUMED_TRIGGER_FIELDS : CONSUMED_FIELDS, rest);
	for (const key of Object.keys(rest)) if (rest[key] === undefined) delete rest[key];
	return rest;
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

/** Keys of `error.details` the Error Pipe writes itself (flags and ids); their bytes are reserved from the budget. */
const RESERVED_BYTES = 4 * 1024;

/**
 * Builds the envelope. See the module comment for the accepted input shapes. Never throws: an input it
 * cannot read still gives an envelope (`fallbackEnvelope`). Every string, key and value taken from the
 * input is sanitised once, here (nodes/shared/sanitize.ts): NUL and lone surrogates become U+FFFD
 * (`details.sanitized: true`), ids and numbers that do not fit their column are kept as text in
 * `details.invalid_<field>` (column NULL, `sanitized: true`), nesting is kept to MAX_DEPTH levels, strings to
 * MAX_STRING_LENGTH code units and `error.details` to MAX_DETAILS_BYTES (`details.truncated: true`).
 */
export function normalizeErrorItem(input: unknown, options: NormalizeOptions): NormalizedError {
	// Secrets first, before anything is sanitised or cut (a secret cut in half could no longer be found):
	// every remembered secret (../../shared/redact.ts) is redacted from the whole item and the values of
	// well-known secret headers are replaced, wherever they are; the built envelope is redacted once more.
	const redactor = rememberedSecrets();
	let safe: unknown = input;
	try {
		safe = redactor.value(input, { dropKeys: SECRET_HEADERS });
		const built = buildEnvelope(safe, options);
		return { ...built, envelope: redactor.value(built.envelope, { dropKeys: SECRET_HEADERS }) };
	} catch (error) {
		// `safe` is the raw item when it could not even be copied: the envelope is redacted below.
		let envelope = fallbackEnvelope(redactor.error(error), options, safe);
		try {
			envelope = redactor.value(envelope, { dropKeys: SECRET_HEADERS });
		} catch {
			envelope = fallbackEnvelope('unreadable error', options, null);
		}
		return {
			envelope,
			jobId: null,
			contractVersion: ERRORPIPE_CONTRACT_VERSION,
			jobClaimToken: null,
			executionId: null,
			failedNode: null,
		};
	}
}

/** Headers whose values are secrets: never kept in an envelope, whatever their place in the item. */
export const SECRET_HEADERS: ReadonlySet<string> = new Set([
	'authorization',
	'proxy-authorization',
	'x-telegram-bot-api-secret-token',
	'cookie',
	'set-cookie',
	'x-api-key',
	'x-goog-api-key',
]);

function buildEnvelope(input: unknown, options: NormalizeOptions): NormalizedError {
	const clean = new Sanitizer({ budgetBytes: MAX_DETAILS_BYTES - RESERVED_BYTES });
	const json: Record<string, unknown> = isRecord(input) ? input : {};
	const err = recordAt(json, 'error');
	const n8nDetails = recordAt(json, 'n8nDetails');

	// ctx: the canonical `ctx` wins over the in-workflow glue `_ctx`, which wins over what a node put in its error.
	const ctxIn: Record<string, unknown> = mergeOwn(recordAt(err, 'ctx'), recordAt(json, '_ctx'), recordAt(json, 'ctx'));
	// error_context: explicit block, else the node's own, completed by the `_err.*` stamps of the error branch.
	const stamped = recordAt(json, '_err');
	const given = recordAt(json, 'error_context') ?? recordAt(err, 'error_context');
	const contextIn: Record<string, unknown> | null =
		given || (stamped && Object.keys(stamped).length) ? { ...stamped, ...given } : null;

	// n8n's Error Trigger: { execution: { id, error, lastNodeExecuted, mode, … }, workflow: { id, name } }
	// (or { trigger: { error, mode }, workflow } when the failure came before an execution existed)
	const errorTrigger = isErrorTriggerItem(json);
	const execution = errorTrigger ? (recordAt(json, 'execution') ?? recordAt(json, 'trigger')) : undefined;
	const failedWorkflow = errorTrigger ? recordAt(json, 'workflow') : undefined;
	const rawMessage = firstString(
		messageText(contextIn?.error_message),
		messageText(json.message),
		typeof json.error === 'string' ? json.error : undefined,
		messageText(err?.message),
		json.errorMessage,
		json.description,
		err?.description,
		json.reason,
		err?.reason,
		json.detail,
		err?.detail,
		messageText(field(execution?.error, 'message')),
		messageText(field(execution?.error, 'description')),
		typeof input === 'string' ? input : undefined,
	);
	const message = rawMessage === undefined ? 'Unknown error' : clean.text(rawMessage);
	const rawErrorMessage = firstString(
		messageText(json.message),
		messageText(err?.message),
		typeof json.error === 'string' ? json.error : undefined,
	);
	const rawNodeType = firstString(err?.node_type, field(err?.node, 'type'), n8nDetails?.nodeType, json.node_type);
	const nodeType = rawNodeType === undefined ? null : clean.text(rawNodeType, MAX_ID_TEXT_LENGTH, true);

	// Ids and numbers bound for a column: used when they fit, else kept as text (`invalid_*`), column NULL.
	const extra: Record<string, unknown> = { contract_version: ERRORPIPE_CONTRACT_VERSION };
	// The caller's correlation id (error_context's, else ctx's); a malformed one is kept as text, and a valid
	// one in the other place is still used — a new id is generated only when none came in (seed 002 §1.3).
	const incoming = [contextIn?.correlation_id, ctxIn.correlation_id].filter((v) => !absent(v));
	const malformed = incoming.find((v) => !isUuid(v));
	if (malformed !== undefined) extra.invalid_correlation_id = clean.asText(malformed);
	const correlationId = (incoming.find(isUuid) as string | undefined) ?? (options.newId ?? newCorrelationId)();
	// The failed execution: an Error Trigger item's execution.id (the engine's), else the engine's id given by
	// the node; an id the item names elsewhere never keys the claim (a hostile item could claim another
	// execution): it is kept as details.item_execution_id. The catch-all uses execution.id only.
	const triggerExecution = recordAt(json, 'execution') === execution ? execution?.id : undefined;
	const itemExecution = [contextIn?.execution_id, ctxIn.execution_id].find((v) => !absent(v));
	const givenExecution = options.oncePerExecution
		? triggerExecution
		: [triggerExecution, options.executionId, itemExecution].find((v) => !absent(v));
	const executionId = fitOrText(clean, extra, 'execution_id', givenExecution, executionIdOf);
	if (executionId !== null) extra.execution_id = executionId;
	if (itemExecution !== undefined && itemExecution !== givenExecution)
		extra.item_execution_id = clean.asText(itemExecution);
	if (typeof options.instanceId === 'string' && options.instanceId !== '')
		extra.instance_id = clean.text(options.instanceId, MAX_ID_TEXT_LENGTH, true);
	const failedExecution = execution ? errorTriggerExecution(clean, execution, failedWorkflow) : undefined;
	if (failedExecution) extra.execution = failedExecution;
	const tenantId = fitOrText(clean, extra, 'tenant_id', ctxIn.tenant_id, (v) => (isUuid(v) ? v : null));
	const jobId = fitOrText(clean, extra, 'job_id', ctxIn.job_id, (v) => positiveInt(v, Number.MAX_SAFE_INTEGER));
	const contractVersion =
		fitOrText(clean, extra, 'contract_version', field(ctxIn.contracts, 'errorpipe'), (v) => positiveInt(v, INT4_MAX)) ??
		ERRORPIPE_CONTRACT_VERSION;
	const statusCandidates = [
		contextIn?.status_code,
		json.statusCode,
		json.status_code,
		err?.status_code,
		err?.http_code,
		err?.httpCode,
		n8nDetails?.httpCode,
		field(execution?.error, 'httpCode'),
	];
	const code = httpCode(...statusCandidates);
	const firstGiven = statusCandidates.find((v) => !absent(v));
	if (code === null && firstGiven !== undefined) extra.invalid_status_code = clean.asText(firstGiven);

	const declaredKind = ErrorKind.safeParse(err?.kind);
	const kind: ErrorKind = declaredKind.success
		? declaredKind.data
		: classify(
				code,
				Boolean(contextIn?.table || contextIn?.operation),
				nodeType,
				field(err?.details, 'sqlstate') ?? err?.code,
			);
	const statusCode = code !== null && code >= 400 ? code : DEFAULT_STATUS[kind];
	const retryable =
		typeof err?.retryable === 'boolean'
			? err.retryable
			: kind === 'rate_limit' || ((kind === 'db' || kind === 'upstream') && (statusCode >= 502 || code === null));
	const rawError = {
		message: rawErrorMessage === undefined ? message : clean.text(rawErrorMessage, MAX_STRING_LENGTH, true),
		http_code: code,
		node_type: nodeType,
	};

	// The copies kept in error.details, in order of importance: the budget is spent on ctx first.
	const ctx = clean.object(ctxIn);
	const errorContext = contextIn === null ? null : clean.object(contextIn);
	if (err && isRecord(err.details) && Object.keys(err.details).length) extra.node_details = clean.object(err.details);
	const internal: Record<string, unknown> = {};
	const testMode = json.test_mode ?? ctxIn.test_mode;
	const testCase = json.test_case ?? ctxIn.test_case;
	if (testMode !== undefined) extra.test_mode = internal.test_mode = clean.value(testMode) ?? null;
	if (testCase !== undefined) extra.test_case = internal.test_case = clean.value(testCase) ?? null;
	if (json._test_job_id !== undefined) internal._test_job_id = clean.value(json._test_job_id) ?? null;
	if (!isRecord(input) && input !== undefined) extra.input = clean.value(input) ?? null; // a non-object item, kept
	// What the Error Pipe did not use, kept last (the first copy dropped when the budget runs out).
	const rest = isRecord(input)
		? unusedFields(json, [rawMessage, rawErrorMessage, rawNodeType], code, errorTrigger)
		: {};
	const input_ = Object.keys(rest).length ? clean.object(rest) : undefined;
	if (input_ !== undefined) extra.input = input_;

	const str = (value: unknown) => (typeof value === 'string' ? clean.text(value) : null);
	const workflow = firstString(ctxIn.workflow, contextIn?.workflow, failedWorkflow?.name, failedWorkflow?.id);
	const triggerNode = firstString(field(field(execution?.error, 'node'), 'name'), execution?.lastNodeExecuted);
	const node = firstString(contextIn?.node, ctxIn.node, triggerNode);
	const chatId = ctxIn.chat_id;
	const envelope = failure({
		status_code: statusCode,
		kind,
		message,
		retryable,
		source: clean.text(String(options.source || 'WF99'), MAX_ID_TEXT_LENGTH) || 'WF99',
		correlation: {
			correlation_id: correlationId,
			trace_id: str(ctxIn.trace_id),
			tenant_id: tenantId,
			chat_id: typeof chatId === 'number' && Number.isFinite(chatId) ? chatId : str(chatId),
			message_id: typeof ctxIn.message_id === 'number' && Number.isFinite(ctxIn.message_id) ? ctxIn.message_id : null,
			workflow: workflow === undefined ? null : clean.text(workflow),
			node: node === undefined ? null : clean.text(node),
			job_id: jobId,
		},
		ctx,
		raw_error: rawError,
		error_context: errorContext,
		extra_details: { ...extra, contract_version: contractVersion },
		internal,
		now: options.now,
	});
	// zod drops a `__proto__` key from the records it checks: put back the sanitised copies (plain data).
	const details = envelope.error.details;
	details.ctx = ctx;
	details.error_context = errorContext;
	if (input_ !== undefined) details.input = input_;
	fitDetails(details);
	if (clean.sanitized) details.sanitized = true;
	if (clean.truncated || details.truncated) details.truncated = true;
	return {
		envelope,
		jobId,
		contractVersion,
		jobClaimToken: jobId === null ? null : claimTokenOf(ctxIn.job_claim_token),
		executionId,
		failedNode: triggerNode === undefined ? (envelope.meta.correlation.node ?? null) : clean.text(triggerNode),
	};
}

/**
 * The fields of the Error Trigger's `execution.error` kept in `details.execution.error` (with `node`'s
 * id/name/type/typeVersion and the first MAX_STACK_LENGTH characters of `stack`). Everything else —
 * `errorResponse`, `cause`, `context`, `options` (an HTTP client's url, headers and body) — is left out:
 * it may carry a request's secrets.
 */
const TRIGGER_ERROR_FIELDS = ['name', 'message', 'description', 'httpCode', 'lineNumber', 'timestamp', 'functionality'];
/** Characters of `execution.error.stack` kept. */
const MAX_STACK_LENGTH = 2000;

/**
 * What the Error Trigger said of the failed execution (`details.execution`), sanitised: its id, mode,
 * retryOf, lastNodeExecuted, url, the workflow's id and name, the caller's execution
 * (`executionContext.parentExecutionId`) and the error without its node's parameters (only id, name, type,
 * typeVersion of `error.node`: parameters may hold values typed in by hand).
 */
function errorTriggerExecution(
	clean: Sanitizer,
	execution: Record<string, unknown>,
	workflow: Record<string, unknown> | undefined,
): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	const exec = mergeOwn(execution);
	for (const key of ['id', 'mode', 'retryOf', 'lastNodeExecuted', 'url'] as const)
		if (!absent(exec[key])) setOwn(out, key, exec[key]);
	const parent = field(exec.executionContext, 'parentExecutionId');
	if (!absent(parent)) out.parentExecutionId = parent;
	if (workflow) out.workflow = { id: workflow.id ?? null, name: workflow.name ?? null };
	if (isRecord(exec.error)) {
		const error = mergeOwn(exec.error);
		const kept: Record<string, unknown> = {};
		for (const key of TRIGGER_ERROR_FIELDS) {
			const value = error[key];
			if (absent(value)) continue;
			setOwn(kept, key, typeof value === 'string' ? redactQuerySecrets(value) : value);
		}
		if (typeof error.stack === 'string') kept.stack = redactQuerySecrets(error.stack.slice(0, MAX_STACK_LENGTH));
		if (isRecord(error.node)) {
			const node = mergeOwn(error.node);
			kept.node = Object.fromEntries(NODE_FIELDS.filter((k) => node[k] !== undefined).map((k) => [k, node[k]]));
		}
		out.error = kept;
	}
	return clean.object(out);
}

/**
 * Last guard of MAX_DETAILS_BYTES (the budget normally keeps details well within it): the biggest copies
 * are replaced by a marker, least important first.
 */
function fitDetails(details: Record<string, unknown>): void {
	const size = () => Buffer.byteLength(JSON.stringify(details), 'utf8');
	const marker = `[truncated: more than ${MAX_DETAILS_BYTES} bytes of details]`;
	for (const key of ['input', 'node_details', 'test_case', 'test_mode', 'error_context', 'ctx'] as const) {
		if (size() <= MAX_DETAILS_BYTES) return;
		if (details[key] === undefined || details[key] === null) continue;
		details[key] = key === 'ctx' ? { truncated: marker } : key === 'error_context' ? { truncated: marker } : marker;
		details.truncated = true;
	}
}

/**
 * The envelope for an item that could not be read at all (a getter or proxy that throws, an option that
 * is not a date …): 500 `unknown`, the reason in `details.normalize_failure`, as much of the item as can be
 * read in `details.input` (sanitised, capped). Never throws.
 */
export function fallbackEnvelope(
	reason: unknown,
	options: Partial<NormalizeOptions> = {},
	input?: unknown,
): ErrorEnvelope {
	const clean = new Sanitizer({ budgetBytes: MAX_DETAILS_BYTES / 2 });
	let why = 'unreadable error';
	let source = 'WF99';
	let kept: unknown = null;
	try {
		why = clean.text(
			reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason),
			MAX_ID_TEXT_LENGTH,
		);
		source = clean.text(String(options.source || 'WF99'), MAX_ID_TEXT_LENGTH) || 'WF99';
		kept = clean.value(input) ?? null;
	} catch {
		// keep what was read so far
	}
	const message = `Error Pipe could not read this item: ${why}`;
	return failure({
		status_code: 500,
		kind: 'unknown',
		message,
		retryable: false,
		source,
		correlation: { correlation_id: newCorrelationId() },
		ctx: {},
		raw_error: { message, http_code: null, node_type: null },
		error_context: null,
		extra_details: {
			contract_version: ERRORPIPE_CONTRACT_VERSION,
			normalize_failure: why,
			input: kept,
			sanitized: true,
			truncated: clean.truncated || undefined,
		},
	});
}
