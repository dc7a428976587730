-- State machines as data (seed 004 WorkflowDefinition, used by PipelineCapture for pipeline_runs, seed 001).
-- One row per (model, model_version, name); `position` keeps the import order, which is the order the
-- engine tries workflow criteria in. Written by nodes/shared/stateMachine/store.ts (MERGE / REPLACE /
-- ACTIVATE imports, each in one transaction).
CREATE TABLE ops.workflow_definitions (
  model          text        NOT NULL,
  model_version  integer     NOT NULL CHECK (model_version >= 1),
  name           text        NOT NULL,
  position       integer     NOT NULL,
  active         boolean     NOT NULL DEFAULT true,
  definition     jsonb       NOT NULL CHECK (jsonb_typeof(definition) = 'object'),
  imported_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (model, model_version, name)
);
