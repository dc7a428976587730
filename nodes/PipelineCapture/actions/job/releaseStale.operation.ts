/**
 * Job → Release Stale: running jobs locked longer than `older_than_seconds` (their worker died) go back
 * to the queue (dead when no attempt is left); their runs are closed as retry / dead.
 * Output: one item per released job `{ id, status, runs_closed }`. Errors: 422; 503.
 */
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation } from '../types';
import { releaseStale } from '../../../shared/jobs/queue';

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
			description: 'A running job locked this long is released',
		},
		{
			displayName: 'Limit',
			name: 'limit',
			type: 'number',
			typeOptions: { minValue: 1 },
			default: 50,
			description: 'Max number of results to return',
		},
	]),
	async execute(deps, input) {
		return {
			many: await releaseStale(deps.pool, { older_than_seconds: input.older_than_seconds, limit: input.limit }),
			output: 0,
		};
	},
};
