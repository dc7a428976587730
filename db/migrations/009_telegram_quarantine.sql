-- raw.telegram_quarantine: webhook bodies Telegram Ingest cannot store normally, kept exactly as received
-- (issue 10 item 3, seed 003 WF10). A body lands here instead of raw.telegram_updates when it is not a
-- Telegram update (answered 400) or is one that jsonb/bigint cannot hold — a NUL character, a lone
-- surrogate, an id outside int8, nesting deeper than 64 levels, more than 1 MiB (answered 200, so
-- Telegram stops re-sending it). See nodes/TelegramIngest/actions/body.ts for the exact rules.
--
-- Idempotent like raw.telegram_updates: a re-delivery finds the first row and writes nothing. A duplicate
-- is the same bot and the same bytes (body_sha256) — or, for a quarantined UPDATE (status_code 200, its
-- update_id read from the parsed body), the same bot and update_id. A body that is not an update (400)
-- or is too large to read (too_large) is a duplicate only by its bytes: its update_id is kept for
-- information but never identifies it. Telegram Ingest serialises the writes of one (bot, update_id)
-- with a transaction-level advisory lock, so a stored update and a quarantined one never share an id. For the 200 reasons the ops.errors row is
-- written by the same statement (details.quarantine_id); for the 400 reasons the error output of the
-- node goes to WF99, which writes it.
CREATE TABLE raw.telegram_quarantine (
  id              bigserial PRIMARY KEY,
  bot_id          uuid NOT NULL REFERENCES core.bots(bot_id),
  tenant_id       uuid NOT NULL REFERENCES core.tenants(tenant_id),
  -- update_id when the body has one that is an exact non-negative int8, else NULL
  update_id       bigint,
  -- the body: 'raw' = the webhook's bytes as received; 'text' = the string the node was given (UTF-8,
  -- a lone surrogate as its 3-byte WTF-8 form); 'json' = the parsed body n8n gave, re-serialised
  body            bytea NOT NULL,
  body_source     text NOT NULL CHECK (body_source IN ('raw', 'text', 'json')),
  body_sha256     bytea NOT NULL CHECK (length(body_sha256) = 32),
  reason          text NOT NULL CHECK (reason IN ('not_json', 'not_object', 'invalid_update', 'too_large', 'too_deep',
                                                  'nul_character', 'lone_surrogate', 'id_not_int8', 'rejected_by_database')),
  -- the HTTP status answered: 400 (not a Telegram update) or 200 (quarantined update)
  status_code     integer NOT NULL CHECK (status_code IN (200, 400)),
  -- message (names the field), path, sqlstate for rejected_by_database
  details         jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(details) = 'object'),
  correlation_id  uuid NOT NULL,
  received_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (bot_id, body_sha256)
);
CREATE UNIQUE INDEX telegram_quarantine_update_idx ON raw.telegram_quarantine (bot_id, update_id)
  WHERE update_id IS NOT NULL AND status_code = 200;
CREATE INDEX telegram_quarantine_received_idx ON raw.telegram_quarantine (received_at);
