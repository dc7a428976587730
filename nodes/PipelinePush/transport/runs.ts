/**
 * What Pipeline Push reads from `maas.pipeline_runs` (seed 001 §2): ownership at subscription, and the
 * answer once a run is COMPLETED or FAILED (statements: shared/statements/pipelineRuns.ts OWNED_RUNS,
 * FINISHED_RUNS). Read only; every call is one statement on the credential's
 * shared pool (nodes/shared/postgres/pool.ts), so a dropped connection fails one call, never the server.
 */
import type { Pool } from 'pg';
import { publicRunError } from '../../shared/envelopeBuilders';
import { FINISHED_RUNS, OWNED_RUNS } from '../../shared/statements/pipelineRuns';

export interface RunRow {
	id: string;
	user_id: string;
	status: string;
	final_answer: string | null;
	error: Record<string, unknown> | null;
}

/** The pushed answer: exactly the seed's `{ request_id, status, answer }` / `{ request_id, status, error }`. */
export type PushedAnswer =
	| { request_id: string; status: 'completed'; answer: string | null }
	| { request_id: string; status: 'failed'; error: string };

export interface RunStore {
	/** The runs among `ids` whose user_id is `userId` (any status). */
	owned(ids: string[], userId: string): Promise<RunRow[]>;
	/** The runs among `ids` that are COMPLETED or FAILED. */
	finished(ids: string[]): Promise<RunRow[]>;
}

/** A RunStore on the pool `pool()` returns (called per query: the shared pool may be recreated). */
export function pgRunStore(pool: () => Pool): RunStore {
	return {
		owned: async (ids, userId) => (await pool().query<RunRow>(OWNED_RUNS, [ids, userId])).rows,
		finished: async (ids) => (await pool().query<RunRow>(FINISHED_RUNS, [ids])).rows,
	};
}

/** The answer of a finished run (null while it is not finished); `error` as Get Status gives it (publicRunError). */
export function answerOf(row: RunRow): PushedAnswer | null {
	if (row.status === 'COMPLETED') return { request_id: row.id, status: 'completed', answer: row.final_answer };
	if (row.status === 'FAILED')
		return {
			request_id: row.id,
			status: 'failed',
			error: publicRunError(row.error),
		};
	return null;
}
