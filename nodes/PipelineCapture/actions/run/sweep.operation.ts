/**
 * Run → Sweep (the last safety net, on a schedule): releases runs stuck in progress longer than
 * `stuck_after_seconds` back to their waiting state (RELEASE; the trigger notifies again), and emits
 * one item per run waiting longer than `lost_after_seconds` (its notification may have been lost), so
 * the orchestrator captures it.
 * RELEASE's EXTERNAL processors (Calculation Nodes), when the definition declares some, run per run with
 * nothing held, then a compare-and-set releases it (sweep below); a SYNC / ASYNC_SAME_TX failure leaves
 * the run in progress (counted; FAILED at Max Processor Failures).
 * Output: one item per run `{ id, status, swept: "released" | "refused" | "waiting" }`; `warnings` (the
 * ASYNC_NEW_TX failures, also in ops.errors) on the runs whose RELEASE has processors; `error: { code,
 * message, failures }` on a "refused" one (status: where it stays, or FAILED); none when all is well.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { parseInput } from '../../../shared/contracts/input';
import { fieldsOf } from '../../../shared/node/fields';
import type { PipelineOperation, PipelineResult } from '../types';
import type { WorkflowDefinition } from '../../../shared/stateMachine';
import { abortError, runTransitionProcessors } from '../../../shared/stateMachine';
import { RECORD_WARNINGS } from '../../../shared/statements/errors';
import { edgesOf, transitionFrom, type Edge } from '../../engine/definition';
import {
	CLAIM_STUCK,
	LOST_WAITING,
	PROCESSOR_FAILED,
	RELEASE_READ_RUN,
	RELEASE_STUCK,
	STUCK_FOR_RELEASE,
} from '../../../shared/statements/pipelineRuns';
import {
	countFailure,
	stepOptionsOf,
	failureRows,
	MAX_PROCESSOR_FAILURES_FIELD,
	recordWarnings,
	type StepOptions,
	warningRows,
} from './processorOutcome';
import { publicRun, query, type RunRow } from './runRow';

/** What Sweep validates (422 `invalid input: <field> <message>`): its two ages (s) and its limit, defaulted. */
const Input = z.object({
	stuck_after_seconds: z.coerce.number().int().min(1).max(86_400).default(300),
	lost_after_seconds: z.coerce.number().int().min(1).max(86_400).default(60),
	limit: z.coerce.number().int().min(1).max(10_000).default(50),
});

/** A run the Sweep released (with `warnings` when its RELEASE has processors) or could not release. */
export interface SweptRun {
	id: string;
	status: string;
	/** ASYNC_NEW_TX failures of RELEASE's processors (also in ops.errors); only for RELEASEs with processors. */
	warnings?: string[];
	/** Set when a SYNC / ASYNC_SAME_TX processor of RELEASE failed: the run was not released. */
	error?: { code: string; message: string; failures: number | null };
}

/**
 * Sweep: releases runs stuck in an in-progress state (the target of a CAPTURE_*) for longer than
 * `stuck_after_seconds` back to their waiting state (RELEASE; the trigger notifies again), and re-emits
 * runs waiting longer than `lost_after_seconds` (their notification may have been lost).
 * RELEASEs without processors: one statement (FOR UPDATE SKIP LOCKED). A RELEASE with processors (issue 26
 * item 2): the stuck runs are read (no lock), then for each, one after another, it is claimed (CLAIM_STUCK:
 * `updated_at` moved to now on what was read, so an overlapping Sweep skips it and one stuck period runs
 * the processors once), its processors run over the run as released (waiting state, no capture token)
 * with nothing held, and one compare-and-set on the claim (status, capture token, `updated_at`) releases it and records the ASYNC_NEW_TX warnings in
 * ops.errors (a run completed, failed or released meanwhile is left alone and not listed). A SYNC /
 * ASYNC_SAME_TX failure refuses the release: the run stays in progress under its worker's token, the
 * failure is counted under the claim (PROCESSOR_FAILED; by id + status for a run without a capture token;
 * it also restarts its stuck clock: the next try is `stuck_after_seconds` later) and at Max Processor
 * Failures the run ends FAILED (PROCESSOR_FAILURES); unless the run was completed or failed meanwhile (not
 * listed, no error row), it is listed in `refused` with the error, which is also recorded as an ops.errors row (kind upstream, 400,
 * details.code WORKFLOW_FAILED / NO_COMPUTE_MEMBER_FOR_TAG, details.severity "error"), as are its
 * ASYNC_NEW_TX warnings.
 * @returns `{ released, refused, waiting }`: `released` and `refused` together at most `limit` rows,
 *          `waiting` at most `limit` rows
 */
export async function sweep(
	pool: Pool,
	definition: WorkflowDefinition,
	input: { stuck_after_seconds: number; lost_after_seconds: number; limit: number },
	options: StepOptions = {},
): Promise<{ released: SweptRun[]; refused: SweptRun[]; waiting: { id: string; status: string }[] }> {
	const captures = edgesOf(definition).filter((e) => e.name.startsWith('CAPTURE_'));
	const withProcessors = (c: Edge) => (transitionFrom(definition, c.to, 'RELEASE')?.processors.length ?? 0) > 0;
	const plain = captures.filter((c) => !withProcessors(c));
	const processed = captures.filter(withProcessors);
	const released: SweptRun[] =
		plain.length === 0
			? []
			: await query<{ id: string; status: string }>(
					pool,
					RELEASE_STUCK,
					[plain.map((c) => c.to), plain.map((c) => c.from), input.stuck_after_seconds, input.limit],
					'update',
				);
	const refused: SweptRun[] = [];
	const room = input.limit - released.length;
	if (processed.length > 0 && room > 0) {
		const stuck = await query<RunRow & { read_at: string }>(
			pool,
			STUCK_FOR_RELEASE,
			[processed.map((c) => c.to), input.stuck_after_seconds, room],
			'select',
		);
		for (const { read_at, ...run } of stuck) {
			const outcome = await releaseWithProcessors(pool, definition, run as RunRow, read_at, options);
			if (outcome?.error) refused.push(outcome);
			else if (outcome) released.push(outcome);
		}
	}
	const waiting = await query<{ id: string; status: string }>(
		pool,
		LOST_WAITING,
		[captures.map((c) => c.from), input.lost_after_seconds, input.limit],
		'select',
	);
	return { released, refused, waiting };
}

/**
 * One stuck run through RELEASE with its processors (see sweep): the released run, the refused one, or
 * null when the run changed meanwhile (not stuck any more: nothing written, not listed).
 */
async function releaseWithProcessors(
	pool: Pool,
	definition: WorkflowDefinition,
	run: RunRow,
	readAt: string,
	options: StepOptions,
): Promise<SweptRun | null> {
	const declared = transitionFrom(definition, run.status, 'RELEASE')!;
	const step = { id: run.id, transition: 'RELEASE' };
	const token = typeof run.capture_token === 'string' ? run.capture_token : null;
	// claimed before its processors run: an overlapping Sweep that read the same row skips it
	const [claim] = await query<{ read_at: string }>(pool, CLAIM_STUCK, [run.id, run.status, token, readAt], 'update');
	if (!claim) return null;
	const entity: Record<string, unknown> = {
		...publicRun(run),
		status: declared.next,
		previous_transition: 'RELEASE',
	};
	delete entity.capture_token; // a credential of the stuck worker: processors never see it
	const result = await runTransitionProcessors(run.status, declared, entity, options);
	if (!result.ok) {
		const error = abortError(result, { run_id: run.id, transition: 'RELEASE' });
		// counted on the run (by id + status when it has no token, id + status + token otherwise, and only
		// under this Sweep's claim); it keeps its worker's token (the worker may still complete it)
		const where = {
			...step,
			holding: run.status,
			token,
			backTo: null,
			restoreToken: token ?? undefined,
			readAt: claim.read_at,
			result,
			options,
		};
		const counted = await countFailure(pool, PROCESSOR_FAILED, where, error, async () => undefined);
		// the run was completed, failed or released meanwhile: nothing was refused (its warnings are recorded)
		if (counted.details.capture_lost === true) return null;
		// no error output carries it (the Sweep lists it on Done): recorded in ops.errors here, best effort
		await pool.query(RECORD_WARNINGS, [run.id, failureRows(counted, options)]).catch(() => undefined);
		return {
			id: run.id,
			status: typeof counted.details.run_status === 'string' ? counted.details.run_status : run.status,
			warnings: result.warnings,
			error: {
				code: String(counted.details.code),
				message: counted.message,
				failures: typeof counted.details.failures === 'number' ? counted.details.failures : null,
			},
		};
	}
	const rows = await query<{ id: string; status: string }>(
		pool,
		RELEASE_READ_RUN,
		[run.id, run.status, token, claim.read_at, declared.next, warningRows(result.warnings, step, options)],
		'update',
	);
	if (rows.length === 0) {
		await recordWarnings(pool, result.warnings, step, options);
		return null;
	}
	return { ...rows[0], warnings: result.warnings };
}

export const sweepOperation: PipelineOperation = {
	value: 'sweep',
	name: 'Sweep',
	action: 'Sweep stuck and forgotten runs',
	description: 'Release runs stuck in progress and re-emit runs whose notification was lost',
	fields: fieldsOf({ resource: 'run', operation: 'sweep' }, [
		{
			displayName: 'Stuck After (Seconds)',
			name: 'stuckAfterSeconds',
			type: 'number',
			default: 300,
			description:
				"A run in ANALYZING / ASSEMBLING / RESPONDING unchanged this long is released (after the RELEASE transition's processors, if it has any)",
		},
		{
			displayName: 'Lost After (Seconds)',
			name: 'lostAfterSeconds',
			type: 'number',
			default: 60,
			description: 'A run in NEW / ANALYZED / READY unchanged this long is re-emitted',
		},
		{
			displayName: 'Limit',
			name: 'limit',
			type: 'number',
			typeOptions: { minValue: 1 },
			default: 50,
			description: 'Max number of results to return',
		},
		MAX_PROCESSOR_FAILURES_FIELD,
	]),
	async execute(deps, input): Promise<PipelineResult> {
		// no error context (where), as before the shared parser: PIPELINE_INPUT would add the table
		const parsed = parseInput(Input, input);
		const result = await sweep(deps.pool, await deps.definition(), parsed, stepOptionsOf(deps, input));
		return {
			many: [
				...result.released.map((r) => ({ ...r, swept: 'released' })),
				...result.refused.map((r) => ({ ...r, swept: 'refused' })),
				...result.waiting.map((r) => ({ ...r, swept: 'waiting' })),
			],
			output: 0,
		};
	},
};
