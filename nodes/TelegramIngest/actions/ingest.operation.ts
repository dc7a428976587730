/**
 * TelegramIngest's one operation (seed 003 WF10, seed 002 §2): secret check → Update validation →
 * one atomic insert of raw update + keys + job → SuccessEnvelope with data.job_id.
 *
 * Errors (ContractError, status code → kind):
 *  - 400 validation: bot key missing/malformed, body not a Telegram Update (the failing field is named);
 *  - 401 auth: no X-Telegram-Bot-Api-Secret-Token header; 403 auth: wrong secret;
 *  - 404 not_found: no enabled bot with that key;
 *  - 503 db (retryable): database unreachable / connection lost; 500 db: any other database error.
 * ctx (correlation_id, trace_id, workflow, node, contracts.errorpipe) is built before any DB work and
 * travels on the error output.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Pool } from 'pg';
import { ERRORPIPE_CONTRACT_VERSION } from '../../shared/contracts/ctx';
import type { SuccessEnvelope } from '../../shared/contracts/envelope';
import { TelegramUpdate, updateKeys } from '../../shared/contracts/telegramUpdate';
import { isUuid, newCorrelationId, success } from '../../shared/envelope';
import { ContractError, fromPgError } from '../../shared/errors';
import { isRecord } from '../../shared/json';
import type { ItemState } from '../../shared/node/runItems';
import { FIND_DUPLICATE, INGEST_UPDATE, LOOKUP_BOT } from './sql';

export interface IngestInput {
	/** core.bots.bot_key: the `bot` query parameter of the webhook URL (/webhook/telegram?bot=<bot_key>). */
	botKey: unknown;
	/** Value of the X-Telegram-Bot-Api-Secret-Token header (undefined when absent). */
	secretToken: unknown;
	/** The webhook body: an object, or a JSON string. */
	update: unknown;
	/** Incoming correlation id (e.g. an X-Correlation-Id header); used only when it is a UUID. */
	correlationId?: unknown;
	/** External trace id (traceparent / X-Trace-Id), or null. */
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

/** Constant-time comparison of two secrets (hashes first, so lengths leak nothing either). */
export function secretsMatch(given: string, expected: string): boolean {
	const a = createHash('sha256').update(given).digest();
	const b = createHash('sha256').update(expected).digest();
	return timingSafeEqual(a, b);
}

function parseBody(update: unknown): unknown {
	if (typeof update !== 'string') return update;
	try {
		return JSON.parse(update);
	} catch (error) {
		throw new ContractError(`invalid Telegram update: body is not JSON (${(error as Error).message})`, 400, 'validation', false, {
			field: 'body',
		}, RAW);
	}
}

/** Runs the ingest for one item. `state.ctx` is set first, so a failure still carries it. */
export async function ingestUpdate(pool: Pool, input: IngestInput, state: ItemState): Promise<SuccessEnvelope> {
	const ctx: Record<string, unknown> = {
		correlation_id: isUuid(input.correlationId) ? input.correlationId : newCorrelationId(),
		trace_id: typeof input.traceId === 'string' && input.traceId !== '' ? input.traceId : null,
		workflow: input.workflow,
		node: input.nodeName,
		tenant_id: null,
		job_id: null,
		contracts: { errorpipe: ERRORPIPE_CONTRACT_VERSION },
	};
	state.ctx = ctx;

	if (typeof input.botKey !== 'string' || !BOT_KEY.test(input.botKey)) {
		throw new ContractError('invalid bot key: "Bot Key" must be 1-64 characters of A-Z a-z 0-9 _ -', 400, 'validation', false, {
			field: 'botKey',
		}, BOTS);
	}
	ctx.bot_key = input.botKey;

	let bot: { bot_id: string; tenant_id: string; webhook_secret: string; enabled: boolean } | undefined;
	try {
		bot = (await pool.query(LOOKUP_BOT, [input.botKey])).rows[0];
	} catch (error) {
		throw fromPgError(error, BOTS);
	}
	if (!bot || !bot.enabled) {
		throw new ContractError(`unknown bot: no enabled bot with key "${input.botKey}"`, 404, 'not_found', false, {
			bot_key: input.botKey,
		}, BOTS);
	}
	ctx.tenant_id = bot.tenant_id;
	ctx.bot_id = bot.bot_id;

	if (typeof input.secretToken !== 'string' || input.secretToken === '') {
		throw new ContractError('missing X-Telegram-Bot-Api-Secret-Token header', 401, 'auth', false, {}, BOTS);
	}
	if (!secretsMatch(input.secretToken, bot.webhook_secret)) {
		throw new ContractError('wrong X-Telegram-Bot-Api-Secret-Token', 403, 'auth', false, {}, BOTS);
	}

	const parsed = TelegramUpdate.safeParse(parseBody(input.update));
	if (!parsed.success) {
		const issues = parsed.error.issues.map((issue) => ({ path: issue.path.join('.') || '(update)', message: issue.message }));
		throw new ContractError(
			`invalid Telegram update: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
			400,
			'validation',
			false,
			{ field: 'body', issues },
			RAW,
		);
	}
	const update = parsed.data;
	const keys = updateKeys(update);
	ctx.chat_id = keys.chat_id;
	ctx.message_id = keys.message_id;

	let row: { job_id: string; raw_update_id: string; duplicate: boolean } | undefined;
	try {
		const params = [
			bot.bot_id,
			bot.tenant_id,
			keys.update_id,
			JSON.stringify(update), // text → ::jsonb: the update exactly as received, arrays included
			ctx.correlation_id,
			input.jobType,
			keys.update_type,
			input.maxAttempts,
			`tg:${bot.bot_id}:${keys.update_id}`,
			ctx.trace_id,
			keys.chat_id,
			keys.message_id,
			keys.from_id,
		];
		row = (await pool.query(INGEST_UPDATE, params)).rows[0];
		row ??= (await pool.query(FIND_DUPLICATE, [bot.bot_id, keys.update_id])).rows[0];
	} catch (error) {
		throw fromPgError(error, RAW);
	}
	if (!row) {
		throw new ContractError('update neither stored nor found as a duplicate', 500, 'db', true, {}, RAW);
	}
	const jobId = Number(row.job_id);
	ctx.job_id = jobId;
	return success(
		{
			job_id: jobId,
			duplicate: row.duplicate,
			raw_update_id: Number(row.raw_update_id),
			update_id: keys.update_id,
			update_type: keys.update_type,
			bot_id: bot.bot_id,
			tenant_id: bot.tenant_id,
			ctx,
		},
		{
			source: input.workflow,
			correlation: {
				correlation_id: ctx.correlation_id as string,
				trace_id: ctx.trace_id as string | null,
				tenant_id: bot.tenant_id,
				chat_id: keys.chat_id,
				message_id: keys.message_id,
				workflow: input.workflow,
				node: input.nodeName,
				job_id: jobId,
			},
		},
	);
}

/** Reads an incoming header from an n8n Webhook item (header names arrive lower-cased). */
export function headerOf(json: Record<string, unknown>, name: string): unknown {
	const headers = json.headers;
	return isRecord(headers) ? headers[name.toLowerCase()] : undefined;
}
