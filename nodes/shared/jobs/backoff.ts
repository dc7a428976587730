/**
 * The retry backoff of ops.jobs, shared by ErrorPipe (a failed job item) and Finish Job (./queue.ts):
 * next run after min(cap, base · 2^(attempts−1)) seconds, ±20 % jitter (pg-boss style), in SQL.
 */

/** Base (seconds) of the exponential backoff. */
export const RETRY_BASE_SECONDS = 10;
/** Cap (seconds) of the backoff. */
export const RETRY_CAP_SECONDS = 3600;

/**
 * SQL expression of the next run time.
 * @param attempts SQL expression of the attempts made so far (≥ 1 after a claim)
 * @param base placeholder of the base seconds (e.g. `$4`), cap: placeholder of the cap
 */
export function nextRunAtSql(attempts: string, base: string, cap: string): string {
	return `now() + make_interval(secs => least(${cap}::float8, ${base}::float8 * power(2, greatest(${attempts}, 1) - 1)) * (0.8 + random() * 0.4))`;
}
