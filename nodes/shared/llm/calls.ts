/**
 * The model-call records of seed 001 §9 ("model API: calls, tokens, rate-limit hits, timeouts"): one
 * `maas.llm_calls` row per HTTP attempt of Pipeline Capture Model → Generate (db/migrations/016_llm_calls.sql).
 * Written right after each attempt, in its own statement (autocommit): Generate runs between Capture
 * and Complete Step, outside any step transaction, so a record survives a call that fails later.
 * Only the attempt's figures are stored — never the URL, a header or the key.
 */
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { isUuid } from '../contracts/ids';
import { replaceUnstorable } from '../sanitize';
import { INSERT_LLM_CALL } from '../statements/llmCalls';
import type { AttemptObserver, LlmAttempt } from './generate';

/** UTF-16 code units kept of a model name or module label (they become Prometheus label values). */
export const MAX_LABEL_LENGTH = 200;

/** Where a call belongs: the pipeline run (when known) and the module (step label or Workflow Label). */
export interface CallOrigin {
	runId?: unknown;
	module: string;
}

/** A label value PostgreSQL `text` can hold: NUL and lone surrogates → U+FFFD, at most MAX_LABEL_LENGTH units. */
export function storableLabel(value: string): string {
	return replaceUnstorable(value.slice(0, MAX_LABEL_LENGTH)).text;
}

/** Inserts one attempt's row (one statement: INSERT_LLM_CALL, shared/statements/llmCalls.ts). @throws the pg error */
export async function recordLlmCall(pool: Pool, callId: string, origin: CallOrigin, a: LlmAttempt): Promise<void> {
	await pool.query(INSERT_LLM_CALL, [
		callId,
		a.attempt,
		isUuid(origin.runId) ? origin.runId : null,
		storableLabel(origin.module),
		storableLabel(a.model),
		a.startedAt,
		a.durationMs,
		a.outcome,
		a.httpStatus,
		a.promptTokens,
		a.completionTokens,
	]);
}

/**
 * An observer for `generate` that records every attempt of one call (a fresh call_id). A failed write
 * does not fail the model call (its answer is worth more than its record): it is counted in
 * `failures` (Generate's output `records_lost`), and the rest of the call's attempts are still tried.
 */
export function callRecorder(
	pool: Pool,
	origin: CallOrigin,
): { callId: string; observe: AttemptObserver; failures: () => number } {
	const callId = randomUUID();
	let failures = 0;
	return {
		callId,
		observe: async (attempt) => {
			try {
				await recordLlmCall(pool, callId, origin, attempt);
			} catch {
				failures++;
			}
		},
		failures: () => failures,
	};
}
