-- 013: Telegram Ingest caches the bot it looks up (issue 14: one round trip per update instead of two).
-- Every change to core.bots (a rotated webhook_secret, is_enabled, a new or removed bot) and to
-- core.tenants (is_enabled: a disabled tenant disables its bots) NOTIFYs channel 'contracts_bots_changed'
-- once per statement, delivered at COMMIT. Each n8n process listening on it (one connection per pool)
-- drops its whole bot cache; the cache's TTL (nodes/TelegramIngest/actions/botCache.ts) bounds staleness
-- when a notification is lost (listener reconnecting). Payload: the table name (informational).
CREATE FUNCTION core.notify_bots_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('contracts_bots_changed', TG_TABLE_NAME);
  RETURN NULL;
END $$;

CREATE TRIGGER bots_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON core.bots
  FOR EACH STATEMENT EXECUTE FUNCTION core.notify_bots_changed();

CREATE TRIGGER tenants_changed AFTER UPDATE OR DELETE OR TRUNCATE ON core.tenants
  FOR EACH STATEMENT EXECUTE FUNCTION core.notify_bots_changed();
