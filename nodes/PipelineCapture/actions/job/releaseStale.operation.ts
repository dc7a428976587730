/**
 * Job → Release Stale: running jobs whose worker died go back to the queue (dead when no attempt is left);
 * their runs are written as retry / dead (one per attempt, migration 026).
 *  - Lease Grace 0 (the default, as before issue 26): every job locked longer than `older_than_seconds`.
 *  - Lease Grace > 0 (s): a job whose claiming process's lease (nodes/shared/jobs/lease.ts: an advisory lock
 *    on a connection of that process, dropped by PostgreSQL when the process dies) is not held for that
 *    long; a job with a lease locked longer than `lease_max_seconds` (backstop); a job without a lease
 *    locked longer than `older_than_seconds`. A live process keeps its jobs however long its step runs.
 * Output: one item per released job `{ id, status, runs_closed }` (+ `reason`: lease | lease_max | age with
 * a Lease Grace). A retry after a lost reply releases nothing twice: a released job is no longer running.
 * Errors: 422 (the field named); 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { DEFAULT_LEASE_MAX_SECONDS, releaseStale } from '../../../shared/jobs/queue';

export const releaseStaleOperation: PipelineOperation = {
	value: 'releaseStale',
	name: 'Release Stale',
	action: 'Release stale job locks',
	description: 'Put jobs whose worker died back in the queue',
	fields: fieldsOf({ resource: 'job', operation: 'releaseStale' }, [
		{
			displayName: 'Older Than (Seconds)',
			name: 'olderThanSeconds',
			type: 'number',
			default: 900,
			description: 'A running job locked this long is released (with a Lease Grace: only jobs claimed without a lease)',
		},
		{
			displayName: 'Limit',
			name: 'limit',
			type: 'number',
			typeOptions: { minValue: 1 },
			default: 50,
			description: 'Max number of results to return',
		},
		{
			displayName: 'Lease Grace (Seconds)',
			name: 'leaseGraceSeconds',
			type: 'number',
			typeOptions: { minValue: 0 },
			default: 0,
			description:
				"0: release by age only. Else (10–3600) a job is released once its claiming n8n process's lease has not been held for this long (the process died); covers a lease connection's reconnect. Leases need a direct (session) connection to PostgreSQL, not a transaction-pooling PgBouncer.",
		},
		{
			displayName: 'Lease Max (Seconds)',
			name: 'leaseMaxSeconds',
			type: 'number',
			typeOptions: { minValue: 1 },
			default: DEFAULT_LEASE_MAX_SECONDS,
			description:
				'With a Lease Grace: a job with a lease locked this long is released anyway (a hung step, or a Claim Jobs reply lost and never retried); at least the Lease Grace',
		},
	]),
	async execute(deps, input) {
		return {
			many: await releaseStale(deps.pool, {
				older_than_seconds: input.older_than_seconds,
				limit: input.limit,
				lease_grace_seconds: input.lease_grace_seconds,
				lease_max_seconds: input.lease_max_seconds,
			}),
			output: 0,
		};
	},
};
