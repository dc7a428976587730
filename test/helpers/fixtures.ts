/** Fixtures A and B of seed 002 §1.5, with real UUIDs in place of "<uuid>". */
import { randomUUID } from 'node:crypto';

export function fixtureA(jobId: number) {
	const uuid = randomUUID();
	return {
		uuid,
		item: {
			ctx: { correlation_id: uuid, job_id: jobId, workflow: 'WF10' },
			error_context: {
				node: 'Lookup Bot',
				operation: 'select',
				table: 'core.bots',
				correlation_id: uuid,
				error_message: 'relation "core.bots" does not exist',
				status_code: 500,
			},
			message: 'relation "core.bots" does not exist',
		},
	};
}

export function fixtureB() {
	const uuid = randomUUID();
	return {
		uuid,
		item: {
			ctx: { correlation_id: uuid, workflow: 'WF10' },
			error_context: {
				node: 'Insert Updates',
				operation: 'insert',
				table: 'raw.telegram_updates',
				correlation_id: uuid,
				error_message: 'duplicate key value violates unique constraint',
				status_code: 500,
			},
			message: 'duplicate key value violates unique constraint',
		},
	};
}

/** Paths in `value` whose value is `undefined` (JSON-serialisable data has none). */
export function undefinedPaths(value: unknown, path = '$'): string[] {
	if (value === undefined) return [path];
	if (value === null || typeof value !== 'object') return [];
	return Object.entries(value).flatMap(([key, entry]) => undefinedPaths(entry, `${path}.${key}`));
}
