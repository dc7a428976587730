/**
 * Every statement that writes ops.errors (seed 002 §3: one row per ErrorEnvelope v1) and ops.error_executions
 * (migration 018), as named builders. There is one writer: `insertErrors`, which fills every column of
 * ERROR_COLUMNS in the same order wherever a row is written — by the Error Pipe (WF99), by Telegram Ingest's
 * quarantine (WF10, a body that can never succeed) and by Pipeline Capture's processor warnings. A column a
 * writer has no value for is written NULL (tenant_id, job_id) or its contract's value (contract_version 1),
 * never left to chance. Bind parameters only; the callers pass SQL expressions of their own parameters.
 */

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
 * @param options.from the rest of the SELECT after its list (`FROM q WHERE …`), when it reads rows
 * @param options.returning the RETURNING list (default `id`)
 * @returns the statement text (a CTE body or a whole statement)
 */
export function insertErrors(
	values: Readonly<Record<ErrorColumn, string>>,
	options: { id?: string; from?: string; returning?: string } = {},
): string {
	const columns = options.id ? ['id', ...ERROR_COLUMNS] : [...ERROR_COLUMNS];
	const list = options.id ? [options.id, ...ERROR_COLUMNS.map((c) => values[c])] : ERROR_COLUMNS.map((c) => values[c]);
	return [
		`INSERT INTO ops.errors\n    (${columns.join(', ')})`,
		`  SELECT ${list.join(', ')}`,
		options.from ? `  ${options.from}` : '',
		options.id ? '  ON CONFLICT (id) DO NOTHING' : '',
		`  RETURNING ${options.returning ?? 'id'}`,
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
		},
	);
}

/** The warnings of a Capture's processors ($1 the run id, $2 the jsonb array), after the capture committed. */
export const RECORD_WARNINGS = `
${warningRows('(SELECT id, correlation_id FROM maas.pipeline_runs WHERE id = $1)', '$2')}`;
