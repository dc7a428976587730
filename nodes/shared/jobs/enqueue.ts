/**
 * The producer side of ops.jobs: enqueue once per dedup key, each job's type and payload checked against
 * the registry (./registry.ts) first — a type no worker handles, or a bad payload, is a 422 naming the
 * field and nothing of the batch is enqueued; so is a payload whose `tenant_id` is not the job's tenant
 * (workers read rows by the payload's tenant).
 */
import type { Pool } from 'pg';
import { ContractError, fromPgError } from '../errors';
import { validateJob, type JobType } from './registry';
import { ENQUEUE_JOBS, JOBS_BY_DEDUP_KEY } from '../statements/jobs';

/** A job to enqueue: once per dedup key (ops.jobs.dedup_key is unique). */
export interface WantedJob {
	job_type: JobType;
	dedup_key: string;
	payload: Record<string, unknown>;
}

/**
 * Enqueues each job unless its dedup key exists (one statement); returns the job ids in the order of
 * `jobs`. `db`: the pool, or the client of the caller's transaction (Process Update).
 * @throws ContractError 422 validation (`job_type`, or `payload.<path>` + details.job_type) before any
 *         write; 503/500 db
 */
export async function enqueueJobs(
	db: Pick<Pool, 'query'>,
	tenantId: string,
	correlationId: string,
	jobs: WantedJob[],
): Promise<number[]> {
	if (jobs.length === 0) return [];
	jobs.forEach((j, i) => {
		validateJob(j.job_type, j.payload, jobs.length > 1 ? i : undefined);
		// the worker reads rows by the payload's tenant (e.g. WF20's raw row): it must be the job's own
		if (j.payload.tenant_id !== undefined && j.payload.tenant_id !== tenantId) {
			throw ContractError.validation(
				`invalid job${jobs.length > 1 ? ` (job ${i})` : ''}: payload.tenant_id is not the job's tenant`,
				{ code: 'VALIDATION', field: 'payload.tenant_id', job_type: j.job_type },
				{ operation: 'validate', table: 'ops.jobs' },
			);
		}
	});
	try {
		const ids = new Map<string, number>();
		for (const r of (await db.query(ENQUEUE_JOBS, [tenantId, correlationId, JSON.stringify(jobs)])).rows)
			ids.set(r.dedup_key, Number(r.id));
		const unseen = jobs.filter((j) => !ids.has(j.dedup_key)).map((j) => j.dedup_key);
		if (unseen.length > 0) {
			// committed by a concurrent insert after this statement's snapshot: a fresh statement sees it
			for (const r of (await db.query(JOBS_BY_DEDUP_KEY, [unseen])).rows) ids.set(r.dedup_key, Number(r.id));
		}
		return jobs.map((j) => ids.get(j.dedup_key)!);
	} catch (error) {
		throw fromPgError(error, { operation: 'insert', table: 'ops.jobs' });
	}
}

/** One job of enqueueJobs: its id. @throws as enqueueJobs */
export async function enqueueOnce(
	pool: Pick<Pool, 'query'>,
	job: WantedJob & { tenant_id: string; correlation_id: string },
): Promise<number> {
	const [id] = await enqueueJobs(pool, job.tenant_id, job.correlation_id, [
		{ job_type: job.job_type, dedup_key: job.dedup_key, payload: job.payload },
	]);
	return id;
}
