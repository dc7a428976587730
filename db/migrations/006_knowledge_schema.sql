-- 006: the knowledge bot's facts (seed 003 §1 WF11–WF60, §3): Telegram facts (tg.*), fetched content
-- (content.*), chunks (kg.*, the vectors are in 007), the Q/A audit (audit.*) and the transport state.
-- The seed's SQL.txt was never provided; this schema is the project's own design of what the seed's
-- contracts read and write. Every table is keyed so that processing the same input twice is a no-op.

CREATE SCHEMA IF NOT EXISTS content;
CREATE SCHEMA IF NOT EXISTS kg;
CREATE SCHEMA IF NOT EXISTS audit;

-- Seed 003 §0.2: group data is visible to current members, dm data to its owner and the admins only.
CREATE TYPE core.visibility_scope AS ENUM ('group', 'dm');

-- core/ops: bot transport (WF11) ------------------------------------------------------------------------
CREATE TABLE core.bot_transport_config (
  bot_id                  uuid PRIMARY KEY REFERENCES core.bots(bot_id),
  mode                    text NOT NULL DEFAULT 'webhook' CHECK (mode IN ('webhook', 'polling')),
  expected_webhook_url    text,
  max_pending_updates     integer NOT NULL DEFAULT 100 CHECK (max_pending_updates >= 0),
  updated_at              timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE core.bot_transport_state (
  bot_id                uuid PRIMARY KEY REFERENCES core.bots(bot_id),
  mode                  text NOT NULL CHECK (mode IN ('webhook', 'polling')),
  health                text NOT NULL CHECK (health IN ('ok', 'degraded', 'down')),
  last_checked_at       timestamptz NOT NULL,
  last_ok_at            timestamptz,
  last_error            text,
  pending_update_count  integer
);

CREATE TABLE ops.webhook_health_snapshots (
  id                    bigserial PRIMARY KEY,
  bot_id                uuid NOT NULL REFERENCES core.bots(bot_id),
  url                   text,
  pending_update_count  integer,
  last_error_date       timestamptz,
  last_error_message    text,
  health                text NOT NULL CHECK (health IN ('ok', 'degraded', 'down')),
  info                  jsonb NOT NULL DEFAULT '{}'::jsonb,
  checked_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_health_snapshots_bot_idx ON ops.webhook_health_snapshots (bot_id, checked_at DESC);

CREATE TABLE ops.bot_transport_events (
  id          bigserial PRIMARY KEY,
  bot_id      uuid NOT NULL REFERENCES core.bots(bot_id),
  event       text NOT NULL,
  old_health  text,
  new_health  text,
  details     jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- tg: Telegram facts (WF20) ----------------------------------------------------------------------------
CREATE TABLE tg.users (
  tenant_id      uuid NOT NULL REFERENCES core.tenants(tenant_id),
  tg_user_id     bigint NOT NULL,
  is_bot         boolean NOT NULL DEFAULT false,
  username       text,
  first_name     text,
  last_name      text,
  language_code  text,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, tg_user_id)
);

CREATE TABLE tg.chats (
  tenant_id   uuid NOT NULL REFERENCES core.tenants(tenant_id),
  chat_id     bigint NOT NULL,
  chat_type   text NOT NULL CHECK (chat_type IN ('private', 'group', 'supergroup', 'channel')),
  title       text,
  username    text,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, chat_id)
);

-- A message's identity; its text lives in versions (0 = as sent, then one per edit).
CREATE TABLE tg.messages (
  id                bigserial PRIMARY KEY,
  tenant_id         uuid NOT NULL REFERENCES core.tenants(tenant_id),
  chat_id           bigint NOT NULL,
  message_id        integer NOT NULL,
  from_user_id      bigint,
  sent_at           timestamptz NOT NULL,
  visibility        core.visibility_scope NOT NULL,
  dm_owner_user_id  bigint,
  created_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, chat_id, message_id),
  CHECK ((visibility = 'dm') = (dm_owner_user_id IS NOT NULL))
);

-- version_no: 0 for the message as sent, the edit_date (Unix seconds) for an edit — deterministic, so a
-- replayed update finds its version instead of adding one, and versions sort in time order.
CREATE TABLE tg.message_versions (
  id               bigserial PRIMARY KEY,
  message_fk       bigint NOT NULL REFERENCES tg.messages(id) ON DELETE CASCADE,
  version_no       bigint NOT NULL CHECK (version_no >= 0),
  text             text,
  caption          text,
  normalized_text  text,
  payload          jsonb NOT NULL,
  raw_update_id    bigint,
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (message_fk, version_no)
);

CREATE TABLE tg.files (
  tenant_id       uuid NOT NULL REFERENCES core.tenants(tenant_id),
  file_unique_id  text NOT NULL,
  file_name       text,
  mime_type       text,
  file_size       bigint,
  first_seen_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, file_unique_id)
);

-- file_id differs per bot for the same file; tg_file_path is what getFile returned (valid ≥ 1 hour).
CREATE TABLE tg.file_instances (
  id              bigserial PRIMARY KEY,
  tenant_id       uuid NOT NULL,
  file_unique_id  text NOT NULL,
  file_id         text NOT NULL,
  tg_file_path    text,
  last_seen_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, file_unique_id, file_id),
  FOREIGN KEY (tenant_id, file_unique_id) REFERENCES tg.files(tenant_id, file_unique_id) ON DELETE CASCADE
);

CREATE TABLE tg.message_attachments (
  id                  bigserial PRIMARY KEY,
  message_version_id  bigint NOT NULL REFERENCES tg.message_versions(id) ON DELETE CASCADE,
  kind                text NOT NULL CHECK (kind IN ('document', 'photo', 'audio', 'video', 'voice', 'animation', 'video_note', 'sticker')),
  tenant_id           uuid NOT NULL,
  file_unique_id      text NOT NULL,
  file_id             text NOT NULL,
  UNIQUE (message_version_id, kind, file_unique_id),
  FOREIGN KEY (tenant_id, file_unique_id) REFERENCES tg.files(tenant_id, file_unique_id)
);

-- One row per member change seen (chat_member / my_chat_member updates, new/left members).
CREATE TABLE tg.chat_member_events (
  id             bigserial PRIMARY KEY,
  tenant_id      uuid NOT NULL REFERENCES core.tenants(tenant_id),
  chat_id        bigint NOT NULL,
  tg_user_id     bigint NOT NULL,
  old_status     text,
  new_status     text NOT NULL,
  event_date     timestamptz NOT NULL,
  raw_update_id  bigint,
  UNIQUE (tenant_id, chat_id, tg_user_id, event_date, new_status)
);

-- content: URLs, fetches, blobs and documents (WF30–WF33) -------------------------------------------
CREATE TABLE content.urls (
  id              bigserial PRIMARY KEY,
  tenant_id       uuid NOT NULL REFERENCES core.tenants(tenant_id),
  normalized_url  text NOT NULL,
  original_url    text NOT NULL,
  host            text NOT NULL,
  first_seen_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, normalized_url)
);

-- Bodies by content: the same bytes are stored once.
CREATE TABLE content.blob_objects (
  id          bigserial PRIMARY KEY,
  sha256      text NOT NULL UNIQUE CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  size_bytes  bigint NOT NULL CHECK (size_bytes >= 0),
  mime_type   text,
  bytes       bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE content.url_fetches (
  id              bigserial PRIMARY KEY,
  url_id          bigint NOT NULL REFERENCES content.urls(id) ON DELETE CASCADE,
  status          text NOT NULL CHECK (status IN ('done', 'error')),
  http_status     integer,
  content_type    text,
  final_url       text,
  blob_object_id  bigint REFERENCES content.blob_objects(id),
  error           text,
  fetched_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX url_fetches_url_idx ON content.url_fetches (url_id, fetched_at DESC);

-- A document is one source (URL, file) seen in one chat: visibility travels with it to the chunks.
-- source_key: the url id ("url:<id>") or the file_unique_id ("file:<id>").
CREATE TABLE content.documents (
  id                  bigserial PRIMARY KEY,
  tenant_id           uuid NOT NULL REFERENCES core.tenants(tenant_id),
  doc_type            text NOT NULL CHECK (doc_type IN ('url', 'file')),
  source_key          text NOT NULL,
  url_id              bigint REFERENCES content.urls(id),
  file_unique_id      text,
  chat_id             bigint NOT NULL,
  visibility          core.visibility_scope NOT NULL,
  dm_owner_user_id    bigint,
  message_version_id  bigint REFERENCES tg.message_versions(id) ON DELETE SET NULL,
  blob_object_id      bigint REFERENCES content.blob_objects(id),
  mime_type           text,
  title               text,
  text                text,
  text_sha256         text,
  token_count         integer,
  status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'error')),
  error               text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, doc_type, source_key, chat_id),
  CHECK ((visibility = 'dm') = (dm_owner_user_id IS NOT NULL))
);

-- kg: chunks and the embedding models (the vectors: 007) ----------------------------------------------
CREATE TABLE kg.chunks (
  id           bigserial PRIMARY KEY,
  tenant_id    uuid NOT NULL REFERENCES core.tenants(tenant_id),
  document_id  bigint NOT NULL REFERENCES content.documents(id) ON DELETE CASCADE,
  chunk_no     integer NOT NULL CHECK (chunk_no >= 0),
  text         text NOT NULL,
  char_start   integer NOT NULL,
  char_end     integer NOT NULL,
  text_sha256  text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (document_id, chunk_no)
);

CREATE TABLE kg.embedding_models (
  id         serial PRIMARY KEY,
  provider   text NOT NULL,
  name       text NOT NULL,
  dims       integer NOT NULL CHECK (dims > 0),
  is_active  boolean NOT NULL DEFAULT true,
  UNIQUE (provider, name)
);

-- audit: questions, answers and their citations (WF50/WF51) ------------------------------------------
CREATE TABLE audit.qa_sessions (
  session_id  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id   uuid NOT NULL REFERENCES core.tenants(tenant_id),
  tg_user_id  bigint NOT NULL,
  channel     core.visibility_scope NOT NULL,
  chat_id     bigint NOT NULL,
  meta        jsonb NOT NULL DEFAULT '{}'::jsonb,
  started_at  timestamptz NOT NULL DEFAULT now(),
  last_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, tg_user_id, chat_id)
);

CREATE TABLE audit.qa_turns (
  id                           bigserial PRIMARY KEY,
  session_id                   uuid NOT NULL REFERENCES audit.qa_sessions(session_id) ON DELETE CASCADE,
  question                     text NOT NULL,
  question_message_version_id  bigint,
  answer_text                  text,
  model                        text,
  -- the bot's reply in Telegram (null until sendMessage succeeded: a retry only re-sends)
  telegram_message_id          bigint,
  correlation_id               uuid,
  created_at                   timestamptz NOT NULL DEFAULT now()
);
-- one answer per question message: a retried job finds its turn instead of answering twice
CREATE UNIQUE INDEX qa_turns_question_uidx ON audit.qa_turns (session_id, question_message_version_id)
  WHERE question_message_version_id IS NOT NULL;

CREATE TABLE audit.qa_citations (
  turn_id     bigint NOT NULL REFERENCES audit.qa_turns(id) ON DELETE CASCADE,
  rank        integer NOT NULL CHECK (rank >= 1),
  chunk_id    bigint REFERENCES kg.chunks(id) ON DELETE SET NULL,
  score       double precision,
  snippet     text NOT NULL,
  source_ref  jsonb NOT NULL DEFAULT '{}'::jsonb,
  PRIMARY KEY (turn_id, rank)
);
