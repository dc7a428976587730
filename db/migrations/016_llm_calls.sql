-- seed 001 §9 "model API: calls, tokens, rate-limit hits, timeouts": one row per HTTP attempt of
-- Pipeline Capture Model → Generate (nodes/shared/llm/calls.ts writes it right after the attempt, in its
-- own statement: Generate runs outside any step transaction). Never a URL, a header or a key.
CREATE TABLE maas.llm_calls (
  id                 bigserial PRIMARY KEY,
  -- One Generate call (all its attempts share it); attempt counts from 1.
  call_id            uuid NOT NULL,
  attempt            integer NOT NULL CHECK (attempt >= 1),
  -- The pipeline run the call was for (Load Step Context's run_id), when known. No foreign key: a run's
  -- cleanup must not be blocked by, nor delete, its call records.
  run_id             uuid,
  -- The step (analysis, assembly, response, archive) or, when none was given, the Workflow Label.
  module             text NOT NULL,
  model              text NOT NULL,
  started_at         timestamptz NOT NULL,
  duration_ms        double precision NOT NULL CHECK (duration_ms >= 0),
  -- ok: a 2xx answer; rate_limited: HTTP 429; timeout: no answer within the timeout; error: anything else.
  outcome            text NOT NULL CHECK (outcome IN ('ok', 'rate_limited', 'timeout', 'error')),
  http_status        integer,
  prompt_tokens      integer CHECK (prompt_tokens >= 0),
  completion_tokens  integer CHECK (completion_tokens >= 0),
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX llm_calls_started_idx ON maas.llm_calls (started_at);
CREATE INDEX llm_calls_run_idx ON maas.llm_calls (run_id) WHERE run_id IS NOT NULL;
