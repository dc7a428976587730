-- tg: the current membership of Telegram users in chats (seed 003 §0.2: group data is visible to members
-- only). Written by the update processor from chat_member events; read by the Context Loader (WF00c).
CREATE SCHEMA IF NOT EXISTS tg;

CREATE TABLE tg.chat_memberships_current (
  tenant_id   uuid NOT NULL REFERENCES core.tenants(tenant_id),
  chat_id     bigint NOT NULL,
  tg_user_id  bigint NOT NULL,
  -- Telegram ChatMember.status
  status      text NOT NULL CHECK (status IN ('creator', 'administrator', 'member', 'restricted', 'left', 'kicked')),
  is_member   boolean GENERATED ALWAYS AS (status IN ('creator', 'administrator', 'member', 'restricted')) STORED,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, chat_id, tg_user_id)
);
