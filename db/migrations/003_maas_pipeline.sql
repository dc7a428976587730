-- The MaaS request pipeline of seed 001 (PipelineCapture). Statuses and transitions are declared in
-- db/workflows/pipeline_runs.workflow.json (seed 004 format); the CHECK below lists the same states.
CREATE SCHEMA IF NOT EXISTS maas;

CREATE TABLE maas.pipeline_runs (
  id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id                text NOT NULL,
  user_query             text NOT NULL,
  status                 text NOT NULL DEFAULT 'NEW'
                           CHECK (status IN ('NEW', 'ANALYZING', 'ANALYZED', 'ASSEMBLING', 'READY', 'RESPONDING', 'COMPLETED', 'FAILED')),
  previous_transition    text,
  analysis_result        jsonb,
  draft_context          text,
  final_context_payload  text,
  final_answer           text,
  error                  jsonb CHECK (error IS NULL OR jsonb_typeof(error) = 'object'),
  correlation_id         uuid,
  captured_by            text,
  -- Set by every CAPTURE_* transition and required to complete the step: a worker whose run was released
  -- by the Sweep and captured again by another can no longer complete it (exactly once).
  capture_token          uuid,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now()
);
-- Sweep and catch-up: runs by status and age; a user's runs in order (Archivist blocking rule).
CREATE INDEX pipeline_runs_status_idx ON maas.pipeline_runs (status, updated_at) WHERE status NOT IN ('COMPLETED', 'FAILED');
CREATE INDEX pipeline_runs_changed_idx ON maas.pipeline_runs (updated_at);
CREATE INDEX pipeline_runs_user_idx ON maas.pipeline_runs (user_id, created_at);

-- Fast log of every message (Archivist signal 1) and the source of LSM summaries.
CREATE TABLE maas.raw_logs (
  id            bigserial PRIMARY KEY,
  user_id       text NOT NULL,
  run_id        uuid REFERENCES maas.pipeline_runs(id) ON DELETE SET NULL,
  message_type  text NOT NULL CHECK (message_type IN ('user_query', 'assistant_response', 'system')),
  content       text NOT NULL,
  log_data      jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(log_data) = 'object'),
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX raw_logs_user_idx ON maas.raw_logs (user_id, created_at DESC);

-- Role prompts (Analyzer, Mentor, Assembler, Archivist); one active prompt per role.
CREATE TABLE maas.system_prompts (
  id               bigserial PRIMARY KEY,
  role_name        text NOT NULL,
  prompt_template  text NOT NULL,
  is_active        boolean NOT NULL DEFAULT true,
  version          integer NOT NULL DEFAULT 1,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX system_prompts_one_active ON maas.system_prompts (role_name) WHERE is_active;

-- Long-term memory (Archivist signal 2): summaries per time bucket.
CREATE TABLE maas.lsm_storage (
  id                 bigserial PRIMARY KEY,
  user_id            text,
  run_id             uuid REFERENCES maas.pipeline_runs(id) ON DELETE SET NULL,
  time_bucket_start  timestamptz NOT NULL,
  time_bucket_end    timestamptz NOT NULL CHECK (time_bucket_end >= time_bucket_start),
  tags               text[] NOT NULL DEFAULT '{}',
  summary            text NOT NULL,
  raw_log_ids        bigint[] NOT NULL DEFAULT '{}',
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lsm_storage_bucket_idx ON maas.lsm_storage (time_bucket_start DESC);

-- seed 001 "notify_pipeline_change": a small payload {id, status, operation} on 'pipeline_events'
-- after an INSERT or a change of status (delivered at COMMIT; far below the 8000-byte limit).
CREATE FUNCTION maas.notify_pipeline_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('pipeline_events', json_build_object('id', NEW.id, 'status', NEW.status, 'operation', TG_OP)::text);
  RETURN NULL;
END;
$$;
CREATE TRIGGER pipeline_runs_notify_insert AFTER INSERT ON maas.pipeline_runs
  FOR EACH ROW EXECUTE FUNCTION maas.notify_pipeline_change();
CREATE TRIGGER pipeline_runs_notify_status AFTER UPDATE OF status ON maas.pipeline_runs
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION maas.notify_pipeline_change();

