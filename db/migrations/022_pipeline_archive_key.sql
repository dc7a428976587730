-- Issue 26 item 2 (review finding 6): Archive recognises the retry of its own call after a lost reply by
-- the call's key, as Fail does (fail_key, migration 019), not by the summary and tags alone (another
-- Archivist writing the same summary is not this call). archive_key: md5 of the call key of the Archive
-- that archived the run (Pipeline Capture: n8n instance, workflow, execution, node, run index and item,
-- identical when n8n retries the node); NULL when that call named no key (then only a keyless call with the
-- same summary and tags is its replay).
SET lock_timeout = '5s';

ALTER TABLE maas.pipeline_runs ADD COLUMN IF NOT EXISTS archive_key text;
