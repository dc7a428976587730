/**
 * Bot Transport → Check: WF11 of seed 003 (transport watchdog). Asks the Bot API how the bot's webhook
 * is doing (getWebhookInfo; the bot found by getMe's id in core.bots.tg_bot_id unless `bot_id` is given)
 * and records it:
 *  - ops.webhook_health_snapshots: one row per check (url, pending updates, last error, health, raw info);
 *  - core.bot_transport_state: the current mode and health (last_ok_at moves on `ok`);
 *  - ops.bot_transport_events: a `health_changed` row only when the health differs from the last check.
 * Health: `down` — the Bot API unreachable or failing, or no webhook URL while the mode is webhook;
 * `degraded` — a URL other than core.bot_transport_config.expected_webhook_url, more pending updates
 * than max_pending_updates (default 100), or a delivery error in the last 10 minutes; else `ok`.
 * An unreachable Bot API is recorded as `down`, not raised: recording it is the watchdog's job.
 * The bot token never reaches a row or an error: the transport redacts it from errors, and the snapshot's
 * url, last_error_message and info, the state's last_error and the event's reason are redacted here.
 * Input `req`: `{ tenant_id?, bot_id?, trace_id? }`. Output: `{ bot_id, snapshot_id, health, previous_health,
 *   pending_update_count, url, event_id }`.
 * Errors: 422 `req.<field>`; 500 validation BAD_CREDENTIAL_URL (the credential's Base URL is not an
 *   http(s) URL); 404 BOT_NOT_REGISTERED (no core.bots row for this token's bot); 503/500 db.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { OptionalUuid, parseRequest } from '../../../shared/contracts/request';
import { ContractError, fromPgError } from '../../../shared/errors';
import { inTransaction } from '../../../shared/postgres/transaction';
import {
	INSERT_HEALTH_CHANGED,
	INSERT_HEALTH_SNAPSHOT,
	UPSERT_TRANSPORT_STATE,
} from '../../../shared/statements/botTransport';
import { BOT_TRANSPORT } from '../../../shared/statements/core';
import { getMe, getWebhookInfo, telegramTransport, type WebhookInfo } from '../../transport/botApi';
import type { KnowledgeOperation } from '../types';

export const CheckRequest = z.object({
	tenant_id: OptionalUuid,
	bot_id: OptionalUuid,
	trace_id: z.string().nullish(),
});

/** A delivery error younger than this makes the webhook `degraded` (seconds). */
export const RECENT_ERROR_SECONDS = 600;

type Health = 'ok' | 'degraded' | 'down';

/** The health of a webhook from getWebhookInfo and the bot's config. Pure. */
export function healthOf(
	info: WebhookInfo | null,
	config: { mode: string; expected_webhook_url: string | null; max_pending_updates: number },
	nowSeconds: number,
): { health: Health; reason: string } {
	if (!info) return { health: 'down', reason: 'Bot API not answering' };
	if (config.mode === 'webhook' && !info.url) return { health: 'down', reason: 'no webhook set' };
	if (config.expected_webhook_url && info.url !== config.expected_webhook_url)
		return { health: 'degraded', reason: `webhook points at ${info.url}` };
	if (info.pending_update_count > config.max_pending_updates)
		return { health: 'degraded', reason: `${info.pending_update_count} pending updates` };
	if (info.last_error_date && nowSeconds - info.last_error_date < RECENT_ERROR_SECONDS)
		return { health: 'degraded', reason: `delivery error: ${info.last_error_message ?? 'unknown'}` };
	return { health: 'ok', reason: 'ok' };
}

async function findBot(pool: Pool, botId: string | null, tgBotId: number | null) {
	try {
		return (await pool.query(BOT_TRANSPORT, [botId, tgBotId])).rows[0] as Record<string, unknown> | undefined;
	} catch (error) {
		throw fromPgError(error, { operation: 'select', table: 'core.bots' });
	}
}

export const checkOperation: KnowledgeOperation = {
	value: 'check',
	name: 'Check',
	action: 'Check the webhook health of the bot',
	description:
		'Record the webhook health from getWebhookInfo: snapshot, current state, and an event when it changes (WF11)',
	workflow: 'WF11',
	async execute({ pool, state, http, telegram }, raw) {
		const req = parseRequest(CheckRequest, raw ?? {}, { table: 'core.bots' });
		const credential = await telegram();
		// Throws a ContractError 500 BAD_CREDENTIAL_URL for a base URL that can never work (not recorded as `down`).
		const { redact } = telegramTransport(credential);
		let info: WebhookInfo | null = null;
		let apiError: string | null = null;
		let tgBotId: number | null = null;
		try {
			if (!req.bot_id) tgBotId = (await getMe(http, credential, 10_000)).id;
			info = await getWebhookInfo(http, credential, 10_000);
		} catch (error) {
			apiError = redact.string(error instanceof Error ? error.message : String(error));
		}
		if (!req.bot_id && tgBotId === null) {
			throw ContractError.upstream(
				`Bot API not answering getMe: ${apiError}`,
				502,
				true,
				{ code: 'BOT_API_ERROR' },
				{ operation: 'select', table: 'core.bots' },
			);
		}
		const bot = await findBot(pool, req.bot_id ?? null, tgBotId);
		if (!bot)
			throw ContractError.notFound(
				'this bot is not registered in core.bots (tg_bot_id or bot_id)',
				{ code: 'BOT_NOT_REGISTERED', tg_bot_id: tgBotId, bot_id: req.bot_id ?? null },
				{ operation: 'select', table: 'core.bots' },
			);
		Object.assign(state.ctx!, { tenant_id: bot.tenant_id, trace_id: req.trace_id ?? null });
		const judged = healthOf(
			info,
			{
				mode: String(bot.mode),
				expected_webhook_url: (bot.expected_webhook_url as string | null) ?? null,
				max_pending_updates: Number(bot.max_pending_updates),
			},
			Math.floor(Date.now() / 1000),
		);
		const health = judged.health;
		// Judged on the answer as given; stored and returned with the token redacted (a webhook URL or a
		// delivery error may carry it).
		const reason = redact.string(judged.reason);
		info = info && redact.value(info);
		const previous = (bot.previous_health as Health | null) ?? null;
		try {
			return await inTransaction(pool, async (client) => {
				const snapshot = await client.query(INSERT_HEALTH_SNAPSHOT, [
					bot.bot_id,
					info?.url ?? null,
					info?.pending_update_count ?? null,
					info?.last_error_date ?? null,
					info?.last_error_message ?? apiError,
					health,
					JSON.stringify(info ?? { error: apiError }),
				]);
				await client.query(UPSERT_TRANSPORT_STATE, [
					bot.bot_id,
					bot.mode,
					health,
					health === 'ok' ? null : reason,
					info?.pending_update_count ?? null,
				]);
				let eventId: number | null = null;
				if (previous !== health) {
					const event = await client.query(INSERT_HEALTH_CHANGED, [
						bot.bot_id,
						previous,
						health,
						JSON.stringify({ reason }),
					]);
					eventId = Number(event.rows[0].id);
				}
				return {
					bot_id: bot.bot_id,
					snapshot_id: Number(snapshot.rows[0].id),
					health,
					previous_health: previous,
					reason,
					pending_update_count: info?.pending_update_count ?? null,
					url: info?.url ?? null,
					event_id: eventId,
				};
			});
		} catch (error) {
			throw fromPgError(error, { operation: 'insert', table: 'ops.webhook_health_snapshots' });
		}
	},
};
