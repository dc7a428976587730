/** Pieces the Knowledge Bot operations share: the job-carried ctx of a source, and enqueueing once. */
import type { Pool } from 'pg';
import { z } from 'zod';
import { BigIntLike, DbId } from '../../shared/contracts/request';
import { fromPgError } from '../../shared/errors';

/** Where content came from (seed 003 WF30–WF32 `req.ctx`): its chat and who may see it. */
export const SourceCtx = z
	.object({
		chat_id: BigIntLike,
		visibility: z.enum(['group', 'dm'], { errorMap: () => ({ message: 'must be "group" or "dm"' }) }),
		dm_owner_user_id: BigIntLike.nullish().transform((v) => v ?? null),
		message_version_id: DbId.nullish().transform((v) => v ?? null),
	})
	.passthrough()
	.superRefine((ctx, issue) => {
		if ((ctx.visibility === 'dm') !== (ctx.dm_owner_user_id !== null)) {
			issue.addIssue({ code: z.ZodIssueCode.custom, path: ['dm_owner_user_id'], message: 'is required for dm and must be null for group' });
		}
	});
export type SourceCtx = z.infer<typeof SourceCtx>;

/** A follow-up job: enqueued once per dedup key (ops.jobs.dedup_key is unique). */
export interface WantedJob {
	job_type: string;
	dedup_key: string;
	payload: Record<string, unknown>;
}

/**
 * One statement: $1 tenant_id, $2 correlation_id, $3 JSON array of WantedJob. Returns the id of every
 * job, created now (`created`) or found by its dedup key.
 */
const ENQUEUE_JOBS = `
WITH wanted AS (
  SELECT * FROM jsonb_to_recordset($3::jsonb) AS w(job_type text, dedup_key text, payload jsonb)
), created AS (
  INSERT INTO ops.jobs (tenant_id, job_type, payload, correlation_id, dedup_key)
  SELECT $1, job_type, payload, $2, dedup_key FROM wanted
  ON CONFLICT (dedup_key) DO NOTHING
  RETURNING id, dedup_key
)
SELECT id, dedup_key FROM created
UNION ALL
SELECT j.id, j.dedup_key FROM ops.jobs j JOIN wanted w ON w.dedup_key = j.dedup_key
WHERE NOT EXISTS (SELECT 1 FROM created c WHERE c.dedup_key = w.dedup_key)`;

/**
 * Enqueues each job unless its dedup key exists; returns the job ids in the order of `jobs`.
 * `db`: the pool, or the client of the caller's transaction (Process Update).
 * @throws ContractError 503/500 db
 */
export async function enqueueJobs(db: Pick<Pool, 'query'>, tenantId: string, correlationId: string, jobs: WantedJob[]): Promise<number[]> {
	if (jobs.length === 0) return [];
	try {
		const ids = new Map<string, number>();
		for (const r of (await db.query(ENQUEUE_JOBS, [tenantId, correlationId, JSON.stringify(jobs)])).rows) ids.set(r.dedup_key, Number(r.id));
		const unseen = jobs.filter((j) => !ids.has(j.dedup_key)).map((j) => j.dedup_key);
		if (unseen.length > 0) {
			// committed by a concurrent insert after this statement's snapshot: a fresh statement sees it
			for (const r of (await db.query('SELECT id, dedup_key FROM ops.jobs WHERE dedup_key = ANY($1)', [unseen])).rows) ids.set(r.dedup_key, Number(r.id));
		}
		return jobs.map((j) => ids.get(j.dedup_key)!);
	} catch (error) {
		throw fromPgError(error, { operation: 'insert', table: 'ops.jobs' });
	}
}

/** One job of enqueueJobs: its id. */
export async function enqueueOnce(pool: Pool, job: WantedJob & { tenant_id: string; correlation_id: string }): Promise<number> {
	const [id] = await enqueueJobs(pool, job.tenant_id, job.correlation_id, [job]);
	return id;
}
