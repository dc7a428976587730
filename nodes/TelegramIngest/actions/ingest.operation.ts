/**
 * TelegramIngest's one operation (seed 003 WF10, seed 002 §2): secret check → body classification
 * (body.ts) → one atomic insert of raw update + keys + job (one round trip: raw.ingest_update, migration
 * 014), or of the quarantine row (+ its ops.errors row) → envelope.
 *
 * Answers (every body of an authenticated bot is kept: stored, quarantined, or a duplicate of either):
 *  - 200 SuccessEnvelope, `data.quarantined: false`: stored (`data.job_id`), or a duplicate of a stored
 *    update (`data.duplicate: true`, the original job_id);
 *  - 200 SuccessEnvelope, `data.quarantined: true`: a Telegram update PostgreSQL cannot store normally
 *    (NUL, lone surrogate, id outside int8, > 64 levels, > 1 MiB, or a 22xxx/54xxx error of the insert):
 *    kept exactly in raw.telegram_quarantine with one ops.errors row written in the same statement
 *    (kind validation, status_code 422, details.quarantine_id and details.quarantine.answered = 200);
 *    `data.duplicate: true` for a re-delivery (nothing written).
 * Errors (ContractError, status code → kind):
 *  - 400 validation: bot key missing/malformed; a body that is not a Telegram update (not UTF-8/JSON,
 *    not an object, not an Update: the failing field is named) — that body is kept in
 *    raw.telegram_quarantine first (`details.quarantine_id`), the ops.errors row comes from WF99; a
 *    trace id header (traceparent / X-Trace-Id) with a control character (NUL included), a lone surrogate
 *    or more than 256 characters (details.field `traceId`; nothing written, ctx.trace_id null);
 *  - 401 auth: no X-Telegram-Bot-Api-Secret-Token header (checked before the bot is looked up);
 *  - 403 auth: no enabled bot with that key, or a wrong secret — the same status, kind and message, so a
 *    caller cannot probe which bot keys exist (details.reason `unknown_bot` / `wrong_secret` tells the
 *    operator in ops.errors). The bot row is cached (botCache.ts): a disabled bot/tenant or a rotated
 *    secret takes effect at once via NOTIFY (migration 013), and within BOT_CACHE_TTL_MS = 5 s at worst;
 *    a new secret or a re-enabled bot is accepted at once (refusals always read a fresh row);
 *  - 500 validation (details.field `jobType`): "Job Type" is not a registered job type whose payload is a
 *    Telegram update's (nodes/shared/jobs/registry.ts) — nothing is written, and Telegram delivers again;
 *    likewise (details.field `payload.<path>`) when the payload raw.ingest_update would write fails that
 *    type's registry schema (jobPayload.ts: a defect of the node, never of the update);
 *  - 503 db (retryable): database unreachable / connection lost — after the write was sent again twice
 *    (100 ms, 400 ms apart): the writes are idempotent on (bot, update_id) / the body's bytes, so a write
 *    whose reply was lost after its COMMIT is answered by the next attempt as stored (`duplicate: true`, the
 *    same job_id; issue 26, docs/retry-safety.md) and Telegram gets 200, not 5xx; 500 db: any other
 *    database error (never for a data error of the update: that is quarantined).
 * ctx (correlation_id, trace_id, workflow, node, contracts.errorpipe) is built before any DB work and
 * travels on the error output.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { ctxIdOf, ERRORPIPE_CONTRACT_VERSION, newCtx } from '../../shared/contracts/ctx';
import type { SuccessEnvelope } from '../../shared/contracts/envelope';
import { isUuid } from '../../shared/contracts/ids';
import { newCorrelationId, success } from '../../shared/envelopeBuilders';
import { ContractError, fromPgError } from '../../shared/errors';
import { isJobType, JOB_REGISTRY, JOB_TYPE_LIST } from '../../shared/jobs/registry';
import { TelegramUpdatePayload } from '../../shared/jobs/payloads';
import { isRecord } from '../../shared/json';
import type { ItemState } from '../../shared/node/runItems';
import { retryIdempotent } from '../../shared/postgres/outcome';
import { inTransaction } from '../../shared/postgres/transaction';
import { rememberSecrets } from '../../shared/redact';
import { classifyBody, safeText, type Body, type Classified, type QuarantineReason } from './body';
import { hasLoneSurrogate } from './exactJson';
import { botCacheOf, type Bot } from './botCache';
import { checkTelegramJob } from './jobPayload';
import {
	FIND_QUARANTINED,
	INGEST,
	LOCK_UPDATE,
	NEITHER_SQLSTATE,
	QUARANTINE,
} from '../../shared/statements/telegramRaw';
import { LOOKUP_BOT } from '../../shared/statements/core';

export interface IngestInput {
	/** core.bots.bot_key: the `bot` query parameter of the webhook URL (/webhook/telegram?bot=<bot_key>). */
	botKey: unknown;
	/** Value of the X-Telegram-Bot-Api-Secret-Token header (undefined when absent). */
	secretToken: unknown;
	/** The webhook body exactly as received (the Webhook node's raw body); when given, `update` is ignored. */
	rawBody?: Buffer;
	/** The webhook body as n8n parsed it (an object), or a JSON string; used when `rawBody` is absent. */
	update: unknown;
	/** Incoming correlation id (e.g. an X-Correlation-Id header); used only when it is a UUID. */
	correlationId?: unknown;
	/**
	 * External trace id (traceparent / X-Trace-Id), or null. A string that is not a storable trace id
	 * (traceIdProblem) is a 400 `validation` (details.field `traceId`), after the bot checks.
	 */
	traceId?: unknown;
	/** ops.jobs.job_type of the created job. */
	jobType: string;
	/** ops.jobs.max_attempts of the created job. */
	maxAttempts: number;
	/** meta.source and ctx.workflow (default "WF10"). */
	workflow: string;
	/** This node's name on the canvas (error_context.node, meta.correlation.node). */
	nodeName: string;
}

const BOT_KEY = /^[A-Za-z0-9_-]{1,64}$/;
/** error_context of the checks against the bot (key, secret) and of the update's own validation/insert. */
const BOTS = { operation: 'select', table: 'core.bots' } as const;
const RAW = { operation: 'insert', table: 'raw.telegram_updates' } as const;
const QUARANTINE_TABLE = { operation: 'insert', table: 'raw.telegram_quarantine' } as const;
/** SQLSTATE classes of a value the database refuses (data exception, program limit such as stack depth). */
const DATA_SQLSTATE = /^(22|54)/;

/** Longest trace id accepted (characters): a W3C traceparent is 55. */
export const MAX_TRACE_ID_LENGTH = 256;
// eslint-disable-next-line no-control-regex
const HEADER_CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/**
 * Why `traceId` (a header value) cannot be kept as ctx.trace_id (null when it can, or when it is not a
 * string: then there is no trace id): longer than MAX_TRACE_ID_LENGTH, a control character other than
 * tab (NUL included: PostgreSQL text and jsonb cannot hold it), or a lone surrogate. The message names the
 * header, never the value.
 */
export function traceIdProblem(traceId: unknown): string | null {
	if (typeof traceId !== 'string') return null;
	if (traceId.length > MAX_TRACE_ID_LENGTH)
		return `invalid trace id header (traceparent / X-Trace-Id): longer than ${MAX_TRACE_ID_LENGTH} characters`;
	if (HEADER_CONTROL.test(traceId))
		return 'invalid trace id header (traceparent / X-Trace-Id): a control character (NUL included)';
	if (hasLoneSurrogate(traceId)) return 'invalid trace id header (traceparent / X-Trace-Id): a lone surrogate';
	return null;
}

/** Compared against when no enabled bot has the key (never equal to a header: it is not a valid one). */
const UNKNOWN_BOT_SECRET = '\u0000no bot';

/** The one 403 of an unknown/disabled bot key or a wrong secret; `reason` only in details (for ops.errors). */
function forbidden(reason: 'unknown_bot' | 'wrong_secret'): ContractError {
	return ContractError.forbidden(
		'forbidden: unknown bot key or wrong X-Telegram-Bot-Api-Secret-Token',
		{ reason },
		BOTS,
	);
}

/** Constant-time comparison of two secrets (hashes first, so lengths leak nothing either). */
export function secretsMatch(given: string, expected: string): boolean {
	const a = createHash('sha256').update(given).digest();
	const b = createHash('sha256').update(expected).digest();
	return timingSafeEqual(a, b);
}

interface Run {
	pool: Pool;
	input: IngestInput;
	ctx: Record<string, unknown>;
	bot: Bot;
}

type Quarantined = Extract<Classified, { kind: 'quarantine' }>;

/** The registered job types whose payload is a Telegram update's (the only ones "Job Type" may name). */
const TELEGRAM_JOB_TYPES = JOB_TYPE_LIST.filter((t) => JOB_REGISTRY[t].payload === TelegramUpdatePayload);

/** ops.jobs.dedup_key of an update: tg:<bot_id>:<update_id>. */
function dedupKey(botId: string, updateId: string): string {
	return `tg:${botId}:${updateId}`;
}

/**
 * Runs `work` in one transaction that first holds the advisory lock of (bot, update_id) when `updateId`
 * is given (LOCK_UPDATE), so storing and quarantining one update_id never interleave.
 */
function lockedFor<T>(run: Run, updateId: string | null, work: (client: PoolClient) => Promise<T>): Promise<T> {
	return inTransaction(run.pool, async (client) => {
		if (updateId !== null) await client.query(LOCK_UPDATE, [run.bot.bot_id, updateId]);
		return work(client);
	});
}

function meta(run: Run, ids: { chat_id?: unknown; message_id?: unknown; job_id?: number | null }) {
	const { input, ctx, bot } = run;
	return {
		source: input.workflow,
		correlation: {
			correlation_id: ctx.correlation_id as string,
			trace_id: ctx.trace_id as string | null,
			tenant_id: bot.tenant_id,
			chat_id: (ids.chat_id ?? null) as number | string | null,
			message_id: typeof ids.message_id === 'number' ? ids.message_id : null,
			workflow: input.workflow,
			node: input.nodeName,
			job_id: ids.job_id ?? null,
		},
	};
}

/** Runs the ingest for one item. `state.ctx` is set first, so a failure still carries it. */
export async function ingestUpdate(pool: Pool, input: IngestInput, state: ItemState): Promise<SuccessEnvelope> {
	// update_id / chat_id / message_id are set below as the Ctx schema's CtxId: a number when exact, else the text
	// A trace id that cannot be stored is not put into ctx (ctx travels to ops.errors): refused 400 below.
	const traceProblem = traceIdProblem(input.traceId);
	const ctx = newCtx({
		correlation_id: isUuid(input.correlationId) ? input.correlationId : newCorrelationId(),
		trace_id: traceProblem === null && typeof input.traceId === 'string' && input.traceId !== '' ? input.traceId : null,
		workflow: input.workflow,
		node: input.nodeName,
		tenant_id: null,
		job_id: null,
	});
	state.ctx = ctx;

	// The job must be one a worker takes with this payload (built in SQL: test/integration/telegramIngest.property.test.ts
	// checks every stored payload against the registry's schema). A configuration error, not the update's: 500, so
	// Telegram keeps the update and delivers it again once the node is fixed.
	if (!isJobType(input.jobType) || JOB_REGISTRY[input.jobType].payload !== TelegramUpdatePayload) {
		throw ContractError.configuration(
			`invalid node configuration: "Job Type" ${JSON.stringify(String(input.jobType).slice(0, 100))} is not a registered job type whose worker takes a Telegram update (${TELEGRAM_JOB_TYPES.join(', ')})`,
			{ field: 'jobType' },
			{ operation: 'validate', table: 'ops.jobs' },
		);
	}

	if (typeof input.botKey !== 'string' || !BOT_KEY.test(input.botKey)) {
		throw ContractError.badRequest(
			'invalid bot key: "Bot Key" must be 1-64 characters of A-Z a-z 0-9 _ -',
			{
				field: 'botKey',
			},
			BOTS,
		);
	}
	ctx.bot_key = input.botKey;

	if (typeof input.secretToken !== 'string' || input.secretToken === '') {
		throw ContractError.unauthorized('missing X-Telegram-Bot-Api-Secret-Token header', {}, BOTS);
	}

	// A cached enabled bot (≤ BOT_CACHE_TTL_MS old, dropped on NOTIFY) may only accept; anything else —
	// no entry, a wrong secret — is decided on a fresh row (botCache.ts).
	const cache = botCacheOf(pool);
	const botKey = input.botKey;
	let bot = cache.get(botKey);
	let matched = bot !== undefined && secretsMatch(input.secretToken, bot.webhook_secret);
	if (!matched) {
		try {
			bot = await cache.load(botKey, async () => (await pool.query<Bot>(LOOKUP_BOT, [botKey])).rows[0]);
		} catch (error) {
			throw fromPgError(error, BOTS);
		}
		// Unknown bot and wrong secret: one answer (and one comparison each, so timing tells nothing either).
		matched = secretsMatch(input.secretToken, bot?.enabled ? bot.webhook_secret : UNKNOWN_BOT_SECRET);
	}
	if (!bot || !bot.enabled) throw forbidden('unknown_bot');
	// Remembered process-wide, so any error built later (here or in another node) redacts it.
	rememberSecrets([bot.webhook_secret]);
	ctx.tenant_id = bot.tenant_id;
	ctx.bot_id = bot.bot_id;

	if (!matched) throw forbidden('wrong_secret');

	// A header byte the database cannot hold is the caller's error, like the same byte in a request field: 400.
	if (traceProblem !== null)
		throw ContractError.badRequest(
			traceProblem,
			{ field: 'traceId' },
			{ operation: 'validate', table: 'raw.telegram_updates' },
		);

	const run: Run = { pool, input, ctx, bot };
	const classified = classifyBody(input.rawBody, input.update);
	if (classified.kind === 'quarantine') return quarantine(run, classified);

	const { keys } = classified;
	ctx.update_id = ctxIdOf(keys.update_id);
	ctx.chat_id = ctxIdOf(keys.chat_id);
	ctx.message_id = ctxIdOf(keys.message_id);

	// The job is written by raw.ingest_update (its payload built in SQL): the payload it will carry, checked
	// against the job type's registry schema first (jobPayload.ts; 500 and nothing written when refused).
	checkTelegramJob(input.jobType, {
		tenant_id: bot.tenant_id,
		bot_id: bot.bot_id,
		update_id: keys.update_id,
		update_type: keys.update_type,
		trace_id: ctx.trace_id as string | null,
		correlation_id: ctx.correlation_id as string,
	});

	let row:
		| { job_id: string | null; raw_update_id: string | null; quarantine_id: string | null; duplicate: boolean }
		| undefined;
	try {
		const params = [
			bot.bot_id,
			bot.tenant_id,
			keys.update_id,
			classified.text, // the JSON text as received → ::jsonb (exact ids, every key, arrays included)
			ctx.correlation_id,
			input.jobType,
			keys.update_type,
			input.maxAttempts,
			dedupKey(bot.bot_id, keys.update_id),
			ctx.trace_id,
			keys.chat_id,
			keys.message_id,
			keys.from_id,
		];
		// One round trip (raw.ingest_update, migration 014: lock, INGEST_UPDATE, else FIND_DUPLICATE). Idempotent
		// on (bot, update_id): a lost reply is sent again and finds what it committed (duplicate, the same job).
		row = await retryIdempotent(async () => (await pool.query(INGEST, params)).rows[0]);
	} catch (error) {
		const code = (error as { code?: unknown })?.code;
		// none (e.g. a job with this dedup key written outside the lock): the function rolled back whatever it inserted
		if (code === NEITHER_SQLSTATE)
			throw ContractError.db('update neither stored nor found as a duplicate', {}, RAW, { retryable: true });
		if (typeof code === 'string' && DATA_SQLSTATE.test(code)) {
			// Safety net: whatever the checks before the insert missed, the database refused as data.
			return quarantine(
				run,
				{
					kind: 'quarantine',
					body: classified.body,
					reason: 'rejected_by_database',
					status: 200,
					message: safeText(
						`update quarantined: the database refused it (SQLSTATE ${code}: ${(error as Error).message})`,
					),
					path: null,
					update_id: keys.update_id,
				},
				code,
			);
		}
		throw fromPgError(error, RAW);
	}
	if (!row) throw ContractError.db('update neither stored nor found as a duplicate', {}, RAW, { retryable: true });
	const jobId = row.job_id === null ? null : Number(row.job_id);
	ctx.job_id = jobId;
	const quarantined = row.quarantine_id !== null;
	return success(
		{
			job_id: jobId,
			duplicate: row.duplicate,
			quarantined,
			quarantine_id: quarantined ? Number(row.quarantine_id) : null,
			raw_update_id: row.raw_update_id === null ? null : Number(row.raw_update_id),
			update_id: ctxIdOf(keys.update_id),
			update_type: keys.update_type,
			bot_id: bot.bot_id,
			tenant_id: bot.tenant_id,
			ctx,
		},
		meta(run, { chat_id: ctx.chat_id, message_id: ctx.message_id, job_id: jobId }),
	);
}

/** ops.errors.details of a quarantine row (the same shape WF99 writes: ctx, raw_error, error_context). */
function errorDetails(run: Run, item: Quarantined, body: Body): Record<string, unknown> {
	return {
		ctx: run.ctx,
		raw_error: { message: item.message, http_code: 422, node_type: 'n8n-nodes-contracts.telegramIngest' },
		error_context: {
			node: run.input.nodeName,
			operation: 'insert',
			table: 'raw.telegram_quarantine',
			correlation_id: run.ctx.correlation_id,
			error_message: item.message,
			status_code: 422,
		},
		quarantine: {
			reason: item.reason,
			path: item.path,
			answered: item.status,
			body_sha256: body.sha256,
			body_bytes: body.bytes.length,
			body_source: body.source,
		},
	};
}

/** Keeps a body in raw.telegram_quarantine (and, for a 200 reason, its ops.errors row) and answers. */
async function quarantine(run: Run, item: Quarantined, sqlstate?: string): Promise<SuccessEnvelope> {
	const { input, ctx, bot } = run;
	const { body } = item;
	const rejected = item.status === 400;
	ctx.update_id = ctxIdOf(item.update_id);
	// The update_id identifies the body only when it is a parsed update (answered 200); a body that is not
	// an update, or was not parsed (too_large: update_id null), is a duplicate only by its bytes.
	const dedupId = rejected ? null : item.update_id;
	const details: Record<string, unknown> = { message: item.message, path: item.path };
	if (sqlstate) details.sqlstate = sqlstate;
	let row:
		| {
				quarantine_id: string | null;
				error_id: string | null;
				job_id: string | null;
				raw_update_id: string | null;
				duplicate: boolean;
		  }
		| undefined;
	try {
		const sha = Buffer.from(body.sha256, 'hex');
		const params = [
			bot.bot_id,
			bot.tenant_id,
			body.bytes,
			sha,
			item.update_id,
			body.source,
			item.reason,
			item.status,
			JSON.stringify(details),
			ctx.correlation_id,
			input.workflow,
			input.nodeName,
			item.message,
			JSON.stringify(errorDetails(run, item, body)),
			!rejected,
			ERRORPIPE_CONTRACT_VERSION,
			dedupId,
			dedupId === null ? null : dedupKey(bot.bot_id, dedupId),
		];
		// idempotent (by bytes or update_id): a lost reply (COMMIT's included) is sent again and finds its row
		row = await retryIdempotent(() =>
			lockedFor(
				run,
				dedupId,
				async (client) =>
					(await client.query(QUARANTINE, params)).rows[0] ??
					(await client.query(FIND_QUARANTINED, [bot.bot_id, sha, dedupId])).rows[0],
			),
		);
	} catch (error) {
		throw fromPgError(error, QUARANTINE_TABLE);
	}
	if (!row) {
		throw ContractError.db('body neither quarantined nor found as a duplicate', {}, QUARANTINE_TABLE, {
			retryable: true,
		});
	}
	const quarantineId = row.quarantine_id === null ? null : Number(row.quarantine_id);
	const jobId = row.job_id === null ? null : Number(row.job_id);
	const reason: QuarantineReason = item.reason;
	if (rejected && jobId === null) {
		throw ContractError.badRequest(
			item.message,
			{
				field: 'body',
				reason,
				path: item.path,
				quarantine_id: quarantineId,
				duplicate: row.duplicate,
				body_sha256: body.sha256,
			},
			QUARANTINE_TABLE,
		);
	}
	ctx.job_id = jobId;
	return success(
		{
			job_id: jobId,
			duplicate: row.duplicate,
			quarantined: quarantineId !== null,
			quarantine_id: quarantineId,
			reason: quarantineId !== null ? reason : null,
			raw_update_id: row.raw_update_id === null ? null : Number(row.raw_update_id),
			update_id: ctxIdOf(item.update_id),
			bot_id: bot.bot_id,
			tenant_id: bot.tenant_id,
			error_id: row.error_id === null ? null : Number(row.error_id),
			ctx,
		},
		meta(run, { job_id: jobId }),
	);
}

/** Reads an incoming header from an n8n Webhook item (header names arrive lower-cased). */
export function headerOf(json: Record<string, unknown>, name: string): unknown {
	const headers = json.headers;
	return isRecord(headers) ? headers[name.toLowerCase()] : undefined;
}
