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

/**
 * Enqueues one job unless its dedup key exists; returns the job id either way.
 * @throws ContractError 503/500 db
 */
export async function enqueueOnce(pool: Pool, job: { tenant_id: string; job_type: string; dedup_key: string; payload: Record<string, unknown>; correlation_id: string }): Promise<number> {
	try {
		const { rows } = await pool.query(
			`WITH created AS (
			   INSERT INTO ops.jobs (tenant_id, job_type, payload, correlation_id, dedup_key) VALUES ($1, $2, $3::jsonb, $4, $5)
			   ON CONFLICT (dedup_key) DO NOTHING RETURNING id)
			 SELECT id FROM created UNION ALL SELECT id FROM ops.jobs WHERE dedup_key = $5 AND NOT EXISTS (SELECT 1 FROM created)`,
			[job.tenant_id, job.job_type, JSON.stringify(job.payload), job.correlation_id, job.dedup_key],
		);
		if (rows.length === 0) {
			// the other insert is not visible to this statement's snapshot yet: a fresh statement sees it
			const again = await pool.query('SELECT id FROM ops.jobs WHERE dedup_key = $1', [job.dedup_key]);
			return Number(again.rows[0].id);
		}
		return Number(rows[0].id);
	} catch (error) {
		throw fromPgError(error, { operation: 'insert', table: 'ops.jobs' });
	}
}
