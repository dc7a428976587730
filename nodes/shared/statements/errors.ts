/**
 * Every statement of ops.errors (seed 002 §3: one row per ErrorEnvelope v1) and ops.error_executions
 * (migration 018), as named builders and statements. There is one writer: `insertErrors`, which fills every
 * column of ERROR_COLUMNS in the same order wherever a row is written — by the Error Pipe (WF99,
 * nodes/ErrorPipe/actions/record.ts: INSERT_ERROR…EXECUTION_CLAIM below; its job path is ./jobs.ts's
 * failJobCtes), by Telegram Ingest's quarantine (WF10, a body that can never succeed: ./telegramRaw.ts
 * QUARANTINE) and by Pipeline Capture's processor warnings. A column a writer has no value for is written
 * NULL (tenant_id, job_id) or its contract's value (contract_version 1), never left to chance. Bind
 * parameters only; the callers pass SQL expressions of their own parameters.
 */
import { failJobCtes, priorNextRunAt } from './jobs';

/** The ops.errors columns every writer fills, in this order (the ErrorEnvelope v1 fields of seed 002 §3). */
export const ERROR_COLUMNS = Object.freeze([
	'correlation_id',
	'tenant_id',
	'job_id',
	'workflow',
	'node',
	'kind',
	'status_code',
	'retryable',
	'message',
	'details',
	'contract_version',
	'source',
] as const);

/** One of ERROR_COLUMNS. */
export type ErrorColumn = (typeof ERROR_COLUMNS)[number];

/** The ErrorEnvelope contract version the rows carry (seed 002: v1). */
export const ERROR_CONTRACT_VERSION = 1;

/**
 * `INSERT INTO ops.errors (ERROR_COLUMNS…) SELECT <values> [FROM …] [ON CONFLICT (id) DO NOTHING] [RETURNING …]`.
 *
 * @param values one SQL expression per column (every column required: the compiler refuses a missing one)
 * @param options.id an SQL expression for the row's id (an id taken up front, nextval of the sequence),
 *   written with `ON CONFLICT (id) DO NOTHING`: the row is written at most once under that id
 * @param options.onIdConflict with `id`: `nothing` (default, the ON CONFLICT above) or `error` (no ON
 *   CONFLICT: a row with that id already there fails the statement, SQLSTATE 23505)
 * @param options.from the rest of the SELECT after its list (`FROM q WHERE …`), when it reads rows
 * @param options.returning the RETURNING list (default `id`; null: no RETURNING, the statement returns no rows)
 * @returns the statement text (a CTE body or a whole statement)
 */
export function insertErrors(
	values: Readonly<Record<ErrorColumn, string>>,
	options: { id?: string; onIdConflict?: 'nothing' | 'error'; from?: string; returning?: string | null } = {},
): string {
	const columns = options.id ? ['id', ...ERROR_COLUMNS] : [...ERROR_COLUMNS];
	const list = options.id ? [options.id, ...ERROR_COLUMNS.map((c) => values[c])] : ERROR_COLUMNS.map((c) => values[c]);
	return [
		`INSERT INTO ops.errors\n    (${columns.join(', ')})`,
		`  SELECT ${list.join(', ')}`,
		options.from ? `  ${options.from}` : '',
		options.id && options.onIdConflict !== 'error' ? '  ON CONFLICT (id) DO NOTHING' : '',
		options.returning === null ? '' : `  RETURNING ${options.returning ?? 'id'}`,
	]
		.filter(Boolean)
		.join('\n');
}

/**
 * Pipeline Capture's ASYNC_NEW_TX processor warnings as ops.errors rows, one per element of a jsonb array
 * `[{ message, details, workflow, node }]` (PipelineCapture/actions/run/warnings); `correlation_id` from the
 * run (its own id when it has none); kind `upstream`, 400, not retryable, source `PipelineCapture`.
 * Used inside Complete Step's statement (the run read by `from`) and alone after a Capture (RECORD_WARNINGS).
 *
 * @param from an SQL row source with the run's `id` and `correlation_id` (a CTE name or a sub-select)
 * @param array the SQL expression of the jsonb array (a bind parameter)
 */
export function warningRows(from: string, array: string): string {
	return insertErrors(
		{
			correlation_id: 'coalesce(run.correlation_id, run.id)',
			tenant_id: 'NULL::uuid',
			job_id: 'NULL::bigint',
			workflow: 'w.workflow',
			node: 'w.node',
			kind: "'upstream'",
			status_code: '400',
			retryable: 'false',
			message: 'w.message',
			details: 'w.details',
			contract_version: String(ERROR_CONTRACT_VERSION),
			source: "'PipelineCapture'",
		},
		{
			from: `FROM ${from} AS run CROSS JOIN jsonb_to_recordset(${array}::jsonb) AS w(message text, details jsonb, workflow text, node text)`,
			returning: null,
		},
	);
}

/** The warnings of a Capture's processors ($1 the run id, $2 the jsonb array), after the capture committed. */
export const RECORD_WARNINGS = `
${warningRows('(SELECT id, correlation_id FROM maas.pipeline_runs WHERE id = $1)', '$2')}`;

/**
 * The Error Pipe's ops.errors row from its parameters (nodes/ErrorPipe/actions/record.ts errorParams): $1
 * correlation_id, $2 tenant_id, $3 job_id, $4 workflow, $5 node, $6 kind, $7 status_code, $8 retryable,
 * $9 message, $10 details (jsonb), $11 contract_version, $12 source. `details`: an SQL expression
 * replacing `$10::jsonb` (one that extends it).
 */
function envelopeValues(details = '$10::jsonb'): Record<ErrorColumn, string> {
	return {
		correlation_id: '$1',
		tenant_id: '$2',
		job_id: '$3',
		workflow: '$4',
		node: '$5',
		kind: '$6',
		status_code: '$7',
		retryable: '$8',
		message: '$9',
		details,
		contract_version: '$11',
		source: '$12',
	};
}

/** An ops.errors id taken up front (the Error Pipe writes its row under it, at most once). Column: id. */
export const NEXT_ERROR_ID = `SELECT nextval(pg_get_serial_sequence('ops.errors', 'id')) AS id`;

/** The Error Pipe's row ($1–$12, see envelopeValues) under a new id. Column: id. */
export const INSERT_ERROR = `
${insertErrors(envelopeValues())}`;

/**
 * INSERT_ERROR under the id taken up front ($13); nothing when a row with that id exists (no row returned).
 * Column: id.
 */
export const INSERT_ERROR_WITH_ID = `
${insertErrors(envelopeValues(), { id: '$13' })}`;

/**
 * The outcome a committed RECORD_WITH_JOB wrote ($1 its ops.errors id): its row's job_outcome, and the
 * job's next run when its last error is still that row. Columns: outcome, next_run_at (no row: none).
 */
export const COMMITTED_OUTCOME = `
SELECT e.details->>'job_outcome' AS outcome,
       CASE WHEN (j.last_error->>'error_id')::bigint = e.id THEN j.next_run_at END AS next_run_at
FROM ops.errors e LEFT JOIN ops.jobs j ON j.id = e.job_id
WHERE e.id = $1`;

/**
 * RECORD_WITH_JOB's row: under prior's id (else $21), its details with job_outcome (the job's new status,
 * else prior's run outcome — `retry` is the job's `queued` —, else `stale`); written when the job path
 * applied, prior exists, no token was given ($19 false) or $22 is true.
 */
function recordWithJobRow(): string {
	return insertErrors(
		envelopeValues(`$10::jsonb || jsonb_build_object('job_outcome', coalesce((SELECT status FROM job),
           (SELECT CASE status WHEN 'retry' THEN 'queued' ELSE status END FROM prior), 'stale'))`),
		{
			id: 'coalesce((SELECT error_id FROM prior), $21::bigint)',
			from: 'WHERE EXISTS (SELECT 1 FROM job) OR EXISTS (SELECT 1 FROM prior) OR NOT $19::boolean OR $22::boolean',
		},
	);
}

/**
 * One statement: the ops.errors row (parameters $1–$12 as INSERT_ERROR, its details completed with
 * job_outcome, its id $21 taken up front) and the job path (./jobs.ts failJobCtes over $13–$20: job id,
 * retryable, last_error, backoff base, cap, correlation id, token given, token), committed together. The
 * job is updated before the row is inserted (the row's job_outcome reads it): the recovery transaction
 * takes the same two locks in the same order. When this envelope was recorded already for the same claim
 * token (failJobCtes' `prior`: the same last_error on the run the job path closed; a caller that sends the
 * envelope again, issue 26) the row is that first call's: it is inserted under `prior`'s id, with the
 * outcome that run recorded, `ON CONFLICT (id) DO NOTHING` — nothing is written when it exists, and it is
 * written now when the first call's row insert failed after its job path committed (every error path ends
 * in an ops.errors row). `error_id` is that row, `prior_status` the run's status and `prior_next_run_at` the
 * job's next run while its last error is still that row; `prior_restored` is true when the row was missing
 * and written now.
 * A stale error under a claim token (the job path applied nothing, no `prior` in this snapshot) writes no
 * row unless $22 is true: `error_id` is then NULL and the caller runs the statement again with $22 true, in
 * a new snapshot. The job path's UPDATE may have waited for the lock of a concurrent call of the same
 * envelope that committed meanwhile — its run is invisible to this statement's snapshot, visible to the
 * next one: that call's row is answered (a replay) instead of a second, stale row (issue 26 review).
 * Its home is this module (its product is the ops.errors row); the ops.jobs / ops.job_runs text is
 * ./jobs.ts's. Columns: error_id, status, next_run_at, prior_status, prior_restored, prior_next_run_at.
 */
export const RECORD_WITH_JOB = `
WITH ${failJobCtes(13, '$21::bigint').trimStart()}, err AS (
  ${recordWithJobRow()}
)
SELECT coalesce((SELECT error_id FROM prior), (SELECT id FROM err)) AS error_id,
       (SELECT status FROM job) AS status, (SELECT next_run_at FROM job) AS next_run_at,
       (SELECT status FROM prior) AS prior_status,
       EXISTS (SELECT 1 FROM prior) AND EXISTS (SELECT 1 FROM err) AS prior_restored,
       ${priorNextRunAt('$13')} AS prior_next_run_at`;

/**
 * RECORD_ONCE_PER_EXECUTION's row, one per `claim` row, under the id taken up front ($15; a row with that id
 * already there fails the statement); details.branch_error_id names the error branch's row it is linked to.
 */
function catchAllRow(): string {
	return insertErrors(
		envelopeValues(`$10::jsonb || CASE WHEN claim.error_id <> $15::bigint
                            THEN jsonb_build_object('branch_error_id', claim.error_id) ELSE '{}'::jsonb END`),
		{
			id: '$15::bigint',
			onIdConflict: 'error',
			from: 'FROM claim',
			returning: "id, details->'branch_error_id' AS branch_error_id",
		},
	);
}

/**
 * The catch-all's row (issue 25 §2, migration 018): claims the failed execution ($13 instance id, $14
 * execution id, $17 the failing node) under the ops.errors id taken up front ($15) and inserts the row
 * (parameters $1–$12 as INSERT_ERROR) only when
 *  - nobody claimed it (a new claim), or the claim is older than $16 seconds (replaced: a new failure);
 *  - or an error branch claimed it for another node (its row is kept as the execution's first; this row
 *    is linked to it by details.branch_error_id and noted in catch_all_error_id, once).
 * The claim's row is locked and the WHERE re-read on the committed version (ON CONFLICT DO UPDATE), so two
 * catch-alls, or a catch-all and an error branch's row, never both write one failure's row. No row
 * returned = the failure was recorded already (read it with EXECUTION_CLAIM). Columns: error_id,
 * branch_error_id.
 */
export const RECORD_ONCE_PER_EXECUTION = `
WITH claim AS (
  INSERT INTO ops.error_executions AS c (instance_id, execution_id, error_id, recorded_by, node)
  VALUES ($13, $14, $15::bigint, 'catch_all', $17::text)
  ON CONFLICT (instance_id, execution_id) DO UPDATE SET
    error_id = CASE WHEN c.created_at < now() - make_interval(secs => $16) THEN EXCLUDED.error_id ELSE c.error_id END,
    recorded_by = CASE WHEN c.created_at < now() - make_interval(secs => $16) THEN 'catch_all' ELSE c.recorded_by END,
    node = CASE WHEN c.created_at < now() - make_interval(secs => $16) THEN EXCLUDED.node ELSE c.node END,
    catch_all_error_id = CASE WHEN c.created_at < now() - make_interval(secs => $16) THEN NULL ELSE EXCLUDED.error_id END,
    created_at = CASE WHEN c.created_at < now() - make_interval(secs => $16) THEN now() ELSE c.created_at END
  WHERE c.created_at < now() - make_interval(secs => $16)
     OR (c.recorded_by = 'branch' AND c.catch_all_error_id IS NULL AND c.node IS DISTINCT FROM EXCLUDED.node)
  RETURNING error_id
), err AS (
  ${catchAllRow()}
)
SELECT id AS error_id, branch_error_id FROM err`;

/**
 * Who recorded execution ($1 instance, $2 id) first: its ops.errors row, `branch` | `catch_all`, the node,
 * the catch-all's linked row. Columns: error_id, recorded_by, node, catch_all_error_id (no row: no claim).
 */
export const EXECUTION_CLAIM = `
SELECT error_id, recorded_by, node, catch_all_error_id
FROM ops.error_executions WHERE instance_id = $1 AND execution_id = $2`;
