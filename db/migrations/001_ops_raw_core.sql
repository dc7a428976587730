-- 001: the schemas and tables WF10 (TelegramIngest) and WF99 (ErrorPipe) need.
-- Seeds: 003 §0.1 (identifier types), 003 WF10/WF99, 002 §1 (ops.errors, ops.jobs, ops.job_runs).
-- Applied by `npm run db:migrate` (scripts/migrate.js) inside one transaction.

CREATE EXTENSION IF NOT EXISTS pgcrypto; -- gen_random_uuid() on PostgreSQL < 13

CREATE SCHEMA IF NOT EXISTS ops;
CREATE SCHEMA IF NOT EXISTS raw;
CREATE SCHEMA IF NOT EXISTS core;

-- core: tenants and the bots that feed them -------------------------------------------------------
CREATE TABLE core.tenants (
  tenant_id   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name        text NOT NULL,
  is_enabled  boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- A bot is addressed by bot_key, the `bot` query parameter of its webhook URL (/webhook/telegram?bot=<bot_key>).
-- webhook_secret is the secret_token given to setWebhook (1-256 chars of A-Za-z0-9_-).
CREATE TABLE core.bots (
  bot_id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id       uuid NOT NULL REFERENCES core.tenants(tenant_id),
  bot_key         text NOT NULL UNIQUE CHECK (bot_key ~ '^[A-Za-z0-9_-]{1,64}$'),
  tg_bot_id       bigint,
  username        text,
  webhook_secret  text NOT NULL CHECK (length(webhook_secret) <= 256 AND webhook_secret ~ '^[A-Za-z0-9_-]+$'),
  is_enabled      boolean NOT NULL DEFAULT true,
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE core.tenant_users (
  tenant_id   uuid NOT NULL REFERENCES core.tenants(tenant_id),
  tg_user_id  bigint NOT NULL,
  role        text NOT NULL DEFAULT 'user' CHECK (role IN ('admin', 'user', 'blocked')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, tg_user_id)
);

CREATE TABLE core.tenant_chats (
  tenant_id   uuid NOT NULL REFERENCES core.tenants(tenant_id),
  chat_id     bigint NOT NULL,
  chat_type   text,
  title       text,
  is_enabled  boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, chat_id)
);

-- Chat policy (seed 003 WF00c output): defaults apply when no row exists.
CREATE TABLE core.chat_policies (
  tenant_id                 uuid NOT NULL REFERENCES core.tenants(tenant_id),
  chat_id                   bigint NOT NULL,
  allow_url_fetch           boolean NOT NULL DEFAULT true,
  allow_file_download       boolean NOT NULL DEFAULT true,
  allow_embedding           boolean NOT NULL DEFAULT true,
  retention_days_raw        integer NOT NULL DEFAULT 90 CHECK (retention_days_raw > 0),
  retention_days_documents  integer NOT NULL DEFAULT 3650 CHECK (retention_days_documents > 0),
  updated_at                timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, chat_id)
);

-- ops: the job queue, its runs, and every recorded error --------------------------------------------
-- status: queued (waiting, due at next_run_at) -> running (claimed) -> succeeded | failed | dead.
CREATE TABLE ops.jobs (
  id              bigserial PRIMARY KEY,
  tenant_id       uuid REFERENCES core.tenants(tenant_id),
  job_type        text NOT NULL,
  payload         jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(payload) = 'object'),
  status          text NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'dead')),
  priority        integer NOT NULL DEFAULT 0,
  attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts    integer NOT NULL DEFAULT 5 CHECK (max_attempts > 0),
  next_run_at     timestamptz NOT NULL DEFAULT now(),
  locked_by       text,
  locked_at       timestamptz,
  last_error      jsonb CHECK (last_error IS NULL OR jsonb_typeof(last_error) = 'object'),
  correlation_id  uuid,
  dedup_key       text UNIQUE,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz
);
-- The claim query of a queue: due jobs of one type in priority/time order.
CREATE INDEX jobs_due_idx ON ops.jobs (job_type, priority DESC, next_run_at, id) WHERE status = 'queued';
CREATE INDEX jobs_running_idx ON ops.jobs (locked_at) WHERE status = 'running';

CREATE TABLE ops.job_runs (
  id              bigserial PRIMARY KEY,
  job_id          bigint NOT NULL REFERENCES ops.jobs(id) ON DELETE CASCADE,
  attempt         integer NOT NULL,
  status          text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'retry', 'dead')),
  worker          text,
  correlation_id  uuid,
  error           jsonb CHECK (error IS NULL OR jsonb_typeof(error) = 'object'),
  started_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz
);
CREATE INDEX job_runs_job_idx ON ops.job_runs (job_id);

-- One row per error, always written by ErrorPipe (seed 002 §1.3 invariant 1).
CREATE TABLE ops.errors (
  id                bigserial PRIMARY KEY,
  correlation_id    uuid NOT NULL,
  tenant_id         uuid,
  job_id            bigint,
  workflow          text,
  node              text,
  kind              text NOT NULL,
  status_code       integer NOT NULL,
  retryable         boolean NOT NULL,
  message           text NOT NULL,
  details           jsonb NOT NULL CHECK (jsonb_typeof(details) = 'object'),
  contract_version  integer NOT NULL DEFAULT 1,
  source            text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX errors_correlation_idx ON ops.errors (correlation_id);
CREATE INDEX errors_created_idx ON ops.errors (created_at);

-- raw: Telegram updates exactly as received ----------------------------------------------------------
-- (bot_id, update_id) is the idempotency key: Telegram re-sends an update until it gets a 2xx.
CREATE TABLE raw.telegram_updates (
  id              bigserial PRIMARY KEY,
  bot_id          uuid NOT NULL REFERENCES core.bots(bot_id),
  tenant_id       uuid NOT NULL REFERENCES core.tenants(tenant_id),
  update_id       bigint NOT NULL,
  update          jsonb NOT NULL CHECK (jsonb_typeof(update) = 'object'),
  correlation_id  uuid NOT NULL,
  received_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (bot_id, update_id)
);

CREATE TABLE raw.telegram_update_keys (
  raw_update_id  bigint PRIMARY KEY REFERENCES raw.telegram_updates(id) ON DELETE CASCADE,
  bot_id         uuid NOT NULL,
  tenant_id      uuid NOT NULL,
  update_id      bigint NOT NULL,
  update_type    text NOT NULL,
  chat_id        bigint,
  message_id     bigint,
  from_id        bigint,
  job_id         bigint NOT NULL REFERENCES ops.jobs(id),
  UNIQUE (bot_id, update_id)
);
CREATE INDEX telegram_update_keys_chat_idx ON raw.telegram_update_keys (tenant_id, chat_id, message_id);
