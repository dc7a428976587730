/**
 * The statements of maas.llm_calls (db/migrations/016; seed 001 §9 "model API: calls, tokens, rate-limit
 * hits, timeouts"): one row per HTTP attempt of Pipeline Capture Model → Generate, as named texts. Bind
 * parameters only. User: nodes/shared/llm/calls.ts (recordLlmCall), which writes each row right after its
 * attempt, in its own statement (autocommit). Only the attempt's figures are stored — never the URL, a
 * header or the key. The metrics rollup (./metrics.ts, migration 017) counts each row by a trigger.
 */

/**
 * One attempt's row (returns nothing): $1 call_id (uuid, shared by the call's attempts), $2 attempt (from
 * 1), $3 run_id (uuid or NULL), $4 module and $5 model (label values), $6 started_at (timestamptz),
 * $7 duration_ms (≥ 0), $8 outcome ('ok' | 'rate_limited' | 'timeout' | 'error'), $9 http_status (NULL:
 * no answer), $10 prompt_tokens and $11 completion_tokens (NULL: not reported).
 */
export const INSERT_LLM_CALL = `INSERT INTO maas.llm_calls
  (call_id, attempt, run_id, module, model, started_at, duration_ms, outcome, http_status, prompt_tokens, completion_tokens)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;
