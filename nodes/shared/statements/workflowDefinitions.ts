/**
 * The statements of ops.workflow_definitions (db/migrations/002; seed 004 WorkflowDefinitions: one row per
 * (model, model_version, name), `position` the import order, which is the order the engine tries workflow
 * criteria in), as named texts. Bind parameters only. User: nodes/shared/stateMachine/store.ts (the MERGE /
 * REPLACE / ACTIVATE imports, each in one transaction opened by inTransaction, and the read of a model),
 * for Pipeline Capture's pipeline (seed 001) and its workflow import/export.
 */

/**
 * Serialises the imports of one model: a transaction-scoped advisory lock on $1 model (text) || $2
 * model_version (integer), held until the import's COMMIT or ROLLBACK. Column: pg_advisory_xact_lock (void).
 */
export const LOCK_MODEL = 'SELECT pg_advisory_xact_lock(hashtext($1 || $2::text))';

/** REPLACE: discards every workflow of $1 model, $2 model_version (returns nothing). */
export const DELETE_MODEL_WORKFLOWS = 'DELETE FROM ops.workflow_definitions WHERE model = $1 AND model_version = $2';

/** ACTIVATE: sets inactive every workflow of $1 model, $2 model_version not named in $3 (text[]) (returns nothing). */
export const DEACTIVATE_OTHER_WORKFLOWS =
	'UPDATE ops.workflow_definitions SET active = false WHERE model = $1 AND model_version = $2 AND NOT (name = ANY($3))';

/** The position after the last one stored for $1 model, $2 model_version (1 when none). Column: next (integer). */
export const NEXT_POSITION =
	'SELECT coalesce(max(position), 0) + 1 AS next FROM ops.workflow_definitions WHERE model = $1 AND model_version = $2';

/**
 * One workflow of an import (returns nothing): $1 model, $2 model_version, $3 name, $4 position, $5 the
 * definition (jsonb text), stored `active = true` (seed 004); a workflow of the same name is overwritten
 * (its definition, active again, imported_at now; its position kept).
 */
export const UPSERT_WORKFLOW = `INSERT INTO ops.workflow_definitions (model, model_version, name, position, active, definition)
				 VALUES ($1, $2, $3, $4, true, $5)
				 ON CONFLICT (model, model_version, name)
				 DO UPDATE SET definition = EXCLUDED.definition, active = true, imported_at = now()`;

/** The stored workflows of $1 model, $2 model_version, in import order. Columns: definition (jsonb), active. */
export const LOAD_WORKFLOWS =
	'SELECT definition, active FROM ops.workflow_definitions WHERE model = $1 AND model_version = $2 ORDER BY position';
