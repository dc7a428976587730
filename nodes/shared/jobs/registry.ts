/**
 * The job-type registry: job_type → the worker workflow that runs it → its payload schema. One source:
 * the types and workflows are ./registry.json (read as well by scripts/gen-knowledge-workflows.js, which
 * writes WF90's claim list and dispatch map from it), the schemas are ./payloads.ts (PAYLOAD_SCHEMAS). Producers take their
 * job_type from `JOB_TYPES`, never a literal; enqueue (./enqueue.ts) validates each payload here.
 *
 * Entry shape: `{ job_type, workflow_id, workflow_file, producer, payload }` —
 *  - `workflow_id`: the worker sub-workflow's id as shipped (workflows-json/<workflow_file>'s `id`),
 *    the one WF90's Run Worker calls for this type;
 *  - `workflow_file`: its file name under workflows-json/;
 *  - `producer`: which operation(s) enqueue it (documentation);
 *  - `payload`: the zod schema of ops.jobs.payload (the worker's `req`).
 */
import type { z } from 'zod';
import { ContractError } from '../errors';
import { PAYLOAD_SCHEMAS } from './payloads';
import REGISTRY from './registry.json';

export type JobType = keyof typeof REGISTRY;

export interface JobTypeEntry {
	job_type: JobType;
	workflow_id: string;
	workflow_file: string;
	producer: string;
	payload: z.ZodTypeAny;
}

/** The payload schema of each registered type (./payloads.ts; a type without one does not compile). */
const PAYLOADS: Record<JobType, z.ZodTypeAny> = PAYLOAD_SCHEMAS;

/** Every registered job type, in registry order. */
export const JOB_TYPE_LIST = Object.keys(REGISTRY) as JobType[];

/** `JOB_TYPES.url_normalize === 'url_normalize'`: the names producers write into ops.jobs.job_type. */
export const JOB_TYPES = Object.freeze(Object.fromEntries(JOB_TYPE_LIST.map((t) => [t, t]))) as {
	readonly [K in JobType]: K;
};

/** job_type → its entry. */
export const JOB_REGISTRY: Readonly<Record<JobType, JobTypeEntry>> = Object.freeze(
	Object.fromEntries(JOB_TYPE_LIST.map((t) => [t, { job_type: t, ...REGISTRY[t], payload: PAYLOADS[t] }])) as Record<
		JobType,
		JobTypeEntry
	>,
);

export function isJobType(value: unknown): value is JobType {
	return typeof value === 'string' && Object.prototype.hasOwnProperty.call(REGISTRY, value);
}

const JOBS_TABLE = { operation: 'validate', table: 'ops.jobs' };

/**
 * Checks one job before it is enqueued.
 * @param index position of the job in its batch (named in the error when given)
 * @throws ContractError 422 validation `{ code: "VALIDATION", field: "job_type" }` for a type no worker
 *         handles, or `{ field: "payload.<path>", job_type }` naming the first bad payload field
 */
export function validateJob(jobType: unknown, payload: unknown, index?: number): JobType {
	const at = index === undefined ? '' : ` (job ${index})`;
	if (!isJobType(jobType)) {
		throw ContractError.validation(
			`invalid job${at}: job_type ${JSON.stringify(String(jobType))} is not registered (no worker handles it)`,
			{ code: 'VALIDATION', field: 'job_type' },
			JOBS_TABLE,
		);
	}
	const parsed = JOB_REGISTRY[jobType].payload.safeParse(payload);
	if (!parsed.success) {
		const issue = parsed.error.issues[0];
		const field = ['payload', ...issue.path].join('.');
		throw ContractError.validation(
			`invalid job${at}: ${jobType} ${field} ${issue.message}`,
			{ code: 'VALIDATION', field, job_type: jobType },
			JOBS_TABLE,
		);
	}
	return jobType;
}
