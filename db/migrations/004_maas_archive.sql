-- Archivist signal 2 (seed 001): when the LLM summary of a completed run is stored in lsm_storage, the
-- run is marked archived. A user's next run is not captured for analysis until the previous run of that
-- user is archived or failed (the seed's blocking rule: LSM consistency before speed).
ALTER TABLE maas.pipeline_runs ADD COLUMN archived_at timestamptz;
CREATE INDEX pipeline_runs_unarchived_idx ON maas.pipeline_runs (user_id, created_at) WHERE archived_at IS NULL AND status <> 'FAILED';
