/**
 * The job Telegram Ingest enqueues, checked against the job-type registry at run time (issue 28). The job
 * row is written inside raw.ingest_update (migration 015: INGEST_UPDATE's jsonb_build_object), so its
 * payload is built in SQL; this module builds the same payload in JavaScript from what the node knows
 * before the call and checks it with the job type's schema (nodes/shared/jobs/registry.ts, payloads.ts),
 * so a job its worker would refuse is never written. The SQL is unchanged.
 */
import { ContractError } from '../../shared/errors';
import { JOB_REGISTRY, type JobType } from '../../shared/jobs/registry';

/** Largest |update_id| INGEST_UPDATE writes as a JSON number (2^53); beyond, its decimal text. */
const EXACT_JSON_LIMIT = 2n ** 53n;

/**
 * The id INGEST_UPDATE's payload carries for the raw row it inserts in the same statement, unknown
 * before the call: a bigserial, so at least 1; checked as 1 (the schema's DbId: 1 … 2^53 − 1).
 */
const RAW_ROW_ID_BEFORE_INSERT = 1;

/** What the node knows of the job before raw.ingest_update runs (the statement's parameters). */
export interface TelegramJobFields {
	tenant_id: string;
	bot_id: string;
	/** int8 text (as bound to $3). */
	update_id: string;
	update_type: string;
	trace_id: string | null;
	correlation_id: string;
}

/**
 * The payload INGEST_UPDATE builds for these fields, as a worker reads it: update_id a JSON number when
 * |update_id| < 2^53, else its decimal text; raw_update_id: see RAW_ROW_ID_BEFORE_INSERT.
 */
export function telegramJobPayload(fields: TelegramJobFields): Record<string, unknown> {
	const id = BigInt(fields.update_id);
	const exact = (id < 0n ? -id : id) < EXACT_JSON_LIMIT;
	return {
		tenant_id: fields.tenant_id,
		bot_id: fields.bot_id,
		raw_update_id: RAW_ROW_ID_BEFORE_INSERT,
		update_id: exact ? Number(id) : fields.update_id,
		update_type: fields.update_type,
		trace_id: fields.trace_id,
		correlation_id: fields.correlation_id,
	};
}

/**
 * Checks the payload of the job `jobType` (a registered type, checked before) against its registry schema.
 *
 * @throws ContractError 500 validation (not retryable) `{ field: "payload.<path>", job_type }` naming the
 *   first field the schema refuses: the payload is built by the node and the migration, never by the
 *   update, so a refusal is a defect here (nothing is written; Telegram delivers the update again)
 */
export function checkTelegramJob(jobType: JobType, fields: TelegramJobFields): void {
	const parsed = JOB_REGISTRY[jobType].payload.safeParse(telegramJobPayload(fields));
	if (parsed.success) return;
	const issue = parsed.error.issues[0];
	const field = ['payload', ...issue.path].join('.');
	throw ContractError.configuration(
		`invalid job: ${jobType} ${field} ${issue.message} (the payload raw.ingest_update would write)`,
		{ field, job_type: jobType },
		{ operation: 'validate', table: 'ops.jobs' },
	);
}
