import {
	NodeConnectionTypes,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
} from 'n8n-workflow';
import { postgresContractsApiTest } from '../shared/postgres/credentialTest';
import { getPool, type PostgresCredential } from '../shared/postgres/pool';
import type { Pool } from 'pg';
import { runItems } from '../shared/node/runItems';
import { ERRORPIPE_CONTRACT_VERSION } from '../shared/contracts/ctx';
import { fallbackEnvelope, normalizeErrorItem, type NormalizedError } from './actions/normalize';
import { recordError, recordOncePerExecution, type RecordResult } from './actions/record';

/**
 * Error Pipe — WF99, the global error handler, in one node (seed 002 §1, seed 003 WF99).
 *
 * Input: any item (ctx / _ctx / error_context / _err / n8n error output fields, or nothing at all); the
 * fields it does not use are kept in `error.details.input` (see actions/normalize.ts).
 * Output: exactly one ErrorEnvelope v1 per item, on the main output, always (it never fails an item, in
 * any error mode: the input is sanitised and capped in normalize, see nodes/shared/sanitize.ts):
 * `_internal.error_id` is the `ops.errors` row, `_internal.job_path` what happened to `ctx.job_id`'s job
 * (its `outcome`, also `error.details.job_outcome`: queued / dead / failed, or `stale` when the job is not
 * running under ctx.job_claim_token — a late error never revives a finished or re-claimed job), and a
 * database that could not be written is stated in `error.details.write_failures`.
 * Every row names the failed n8n execution (`details.execution_id`, with n8n's `details.instance_id`): the
 * Error Trigger's `execution.id`, else the execution that called this workflow (WF99 called by an error
 * branch), else this node's own (an id the item names is only `details.item_execution_id`). With
 * **Once per Failed Execution** (the catch-all error workflow WF99e, issue 25 §2) the execution is only the
 * Error Trigger's `execution.id`, and the row is written only when that failure has no row yet
 * (`_internal.execution.outcome`: `recorded` | `already_recorded`, migration 018's ops.error_executions;
 * a failure of another node than an error branch recorded gets its row, linked by `branch_error_id`);
 * the envelope is returned either way.
 */
// Not usable as an AI agent's tool (docs/contracts-and-secrets.md, "Nodes as AI tools"): it writes ops.errors rows (and marks jobs failed): an agent could forge or flood the error record.
// eslint-disable-next-line @n8n/community-nodes/node-usable-as-tool
export class ErrorPipe implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Error Pipe',
		name: 'errorPipe',
		icon: 'file:errorPipe.svg',
		group: ['transform'],
		version: 1,
		subtitle: '={{"ErrorEnvelope v1 → " + $parameter["source"]}}',
		description: 'Turns any error item into an ErrorEnvelope v1 and records it in ops.errors (WF99)',
		defaults: { name: 'Error Pipe' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'postgresContractsApi', required: true, testedBy: 'postgresContractsApiTest' }],
		properties: [
			{
				displayName:
					'Accepts any item: ctx, _ctx, error_context, _err and the fields of an n8n error output. Writes ops.errors always; updates ops.jobs and ops.job_runs only when ctx.job_id is set and that job is still running under ctx.job_claim_token (else job_outcome: stale).',
				name: 'notice',
				type: 'notice',
				default: '',
			},
			{
				displayName: 'Source',
				name: 'source',
				type: 'string',
				default: 'WF99',
				required: true,
				description: 'Value of meta.source in the envelope: the workflow that handles the error',
			},
			{
				displayName: 'Once per Failed Execution',
				name: 'oncePerExecution',
				type: 'boolean',
				default: false,
				description:
					"Whether to write the row only when this failure of the execution has no ops.errors row yet (an error branch recorded the same node's error, or this ran for it before). For an error workflow (Error Trigger → Error Pipe): the execution is the one the Error Trigger names, keyed with this n8n instance's ID.",
			},
		],
	};

	methods = { credentialTest: { postgresContractsApiTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const credential = (await this.getCredentials('postgresContractsApi')) as unknown as PostgresCredential;
		// A credential that cannot give a pool (e.g. a connection string pasted into Host: 500 BAD_CREDENTIAL_FIELD)
		// must not cost the items their envelopes either: each records that failure in write_failures.
		let pool: Pool | null = null;
		let poolFailure: unknown = null;
		try {
			pool = getPool(credential);
		} catch (error) {
			poolFailure = error;
		}
		// The failed execution when the item names none: the caller's (WF99 called by an error branch, or the
		// error workflow started for a failed execution), else this execution.
		let executionId: string | null = null;
		try {
			executionId = this.getExecutionContext()?.parentExecutionId ?? this.getExecutionId() ?? null;
		} catch {
			// an engine without an execution context (tests): the item's own execution id, if any, is used
		}
		// n8n's instance: execution ids are per n8n database, the claim is keyed on both (migration 018)
		let instanceId: string | null = null;
		try {
			instanceId = this.getInstanceId() || null;
		} catch {
			// unknown: the claim's instance is ''
		}
		// The handler never throws: whatever happens to one item, it still gets its envelope (and, when the
		// database answers, its row), so runItems' stop mode never fails an Error Pipe item.
		return runItems(this, async (item, itemIndex) => {
			let source = 'WF99';
			try {
				source = (this.getNodeParameter('source', itemIndex, 'WF99') as string) || 'WF99';
			} catch {
				// an unreadable parameter must not cost the item its envelope: the default source is used
			}
			let oncePerExecution = false;
			try {
				oncePerExecution = this.getNodeParameter('oncePerExecution', itemIndex, false) === true;
			} catch {
				// unreadable: every item gets its row (the default)
			}
			let normalized: NormalizedError;
			try {
				normalized = normalizeErrorItem(item?.json, { source, executionId, instanceId, oncePerExecution });
			} catch (error) {
				normalized = {
					envelope: fallbackEnvelope(error, { source }, item?.json),
					jobId: null,
					contractVersion: ERRORPIPE_CONTRACT_VERSION,
					jobClaimToken: null,
					executionId: null,
					failedNode: null,
				};
			}
			const { envelope, jobId, contractVersion, jobClaimToken } = normalized;
			if (oncePerExecution) envelope.error.details.recorded_by = 'catch_all';
			const recording: Promise<RecordResult> = !pool
				? Promise.reject(poolFailure)
				: oncePerExecution
					? recordOncePerExecution(pool, envelope, normalized.executionId, contractVersion, {
							// the sanitised copy in details: the key an error branch's row claims with (migration 018)
							instanceId:
								typeof envelope.error.details.instance_id === 'string' ? envelope.error.details.instance_id : null,
							failedNode: normalized.failedNode,
						})
					: recordError(pool, envelope, jobId, contractVersion, jobClaimToken);
			const recorded = await recording.catch(
				(error): RecordResult => ({
					error_id: null,
					job: { executed: false },
					write_failures: [
						{ table: 'ops.errors', message: String((error as Error)?.message ?? error), sqlstate: null },
					],
				}),
			);
			if (recorded.write_failures.length) envelope.error.details.write_failures = recorded.write_failures;
			envelope._internal = {
				...envelope._internal!,
				error_id: recorded.error_id,
				job_path: recorded.job,
				write_failures: recorded.write_failures,
				...(recorded.execution ? { execution: recorded.execution } : {}),
			};
			return { json: envelope as unknown as INodeExecutionData['json'] };
		});
	}
}
