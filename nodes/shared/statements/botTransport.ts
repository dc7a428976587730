/**
 * The statements of the bot's transport (seed 003 WF11, the transport watchdog): core.bot_transport_config,
 * core.bot_transport_state, ops.bot_transport_events and ops.webhook_health_snapshots, as named texts, in one
 * place as pg-boss keeps its `plans`. Bind parameters only. User: the Knowledge Bot's Bot Transport → Check,
 * which runs the three writes in one transaction (the bot and its config are read by core.BOT_TRANSPORT).
 * Every text value is redacted by the caller (the bot token never reaches a row).
 */

/**
 * One row per check: $1 bot_id, $2 url, $3 pending_update_count, $4 last_error_date (Unix s), $5
 * last_error_message, $6 health ('ok' | 'degraded' | 'down'), $7 info (jsonb: getWebhookInfo's answer, or
 * { error }). Column: id.
 */
export const INSERT_HEALTH_SNAPSHOT = `INSERT INTO ops.webhook_health_snapshots (bot_id, url, pending_update_count, last_error_date, last_error_message, health, info)
					 VALUES ($1, $2, $3, to_timestamp($4), $5, $6, $7::jsonb) RETURNING id`;

/**
 * The bot's current transport state: $1 bot_id, $2 mode, $3 health, $4 last_error (null on `ok`), $5
 * pending_update_count; last_checked_at now, last_ok_at moved on `ok` only.
 */
export const UPSERT_TRANSPORT_STATE = `INSERT INTO core.bot_transport_state AS s (bot_id, mode, health, last_checked_at, last_ok_at, last_error, pending_update_count)
					 VALUES ($1, $2, $3, now(), CASE WHEN $3 = 'ok' THEN now() END, $4, $5)
					 ON CONFLICT (bot_id) DO UPDATE SET mode = EXCLUDED.mode, health = EXCLUDED.health, last_checked_at = now(),
					   last_ok_at = coalesce(EXCLUDED.last_ok_at, s.last_ok_at), last_error = EXCLUDED.last_error, pending_update_count = EXCLUDED.pending_update_count`;

/** A `health_changed` event: $1 bot_id, $2 old_health (null: first check), $3 new_health, $4 details (jsonb { reason }). Column: id. */
export const INSERT_HEALTH_CHANGED = `INSERT INTO ops.bot_transport_events (bot_id, event, old_health, new_health, details) VALUES ($1, 'health_changed', $2, $3, $4::jsonb) RETURNING id`;
