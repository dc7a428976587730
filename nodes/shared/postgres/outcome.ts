/**
 * A statement that failed without PostgreSQL's answer (the connection was lost, reset or timed out) may
 * have committed: its outcome is unknown. One that failed with a SQLSTATE was rolled back. Issue 26:
 * idempotent writes (the same input stores nothing twice and answers with what is stored) are sent again
 * on a new connection when the outcome is unknown, so a committed write whose reply was lost is answered
 * as stored instead of a 503 (docs/retry-safety.md).
 */
import { DatabaseError } from 'pg';

/** True when PostgreSQL answered with an error (a SQLSTATE: the statement was rolled back). */
export function rolledBack(error: unknown): boolean {
	return error instanceof DatabaseError && typeof error.code === 'string' && /^[0-9A-Z]{5}$/.test(error.code);
}

/** Socket errors of a connection that was never made (nothing was sent). */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * True when the statement may have run without its caller hearing the outcome: no SQLSTATE, and not a
 * connection that was never made (refused, unknown host, pg-pool's connect timeout).
 */
export function outcomeUnknown(error: unknown): boolean {
	if (rolledBack(error)) return false;
	const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
	if (typeof code === 'string' && NOT_CONNECTED.has(code)) return false;
	return !(typeof message === 'string' && /timeout exceeded when trying to connect/i.test(message));
}

/** Waits (ms) before the 2nd and 3rd attempt of retryIdempotent. */
export const UNKNOWN_OUTCOME_WAITS_MS = [100, 400] as const;

/**
 * Runs `write` (which must be idempotent: the same input run twice stores once and answers with what is
 * stored), and runs it again after each wait of `waitsMs` while its outcome is unknown (outcomeUnknown: the
 * connection was lost after the statement was sent). Any other failure (a SQLSTATE, a refused connection),
 * or the last unknown one, is thrown as it is.
 */
export async function retryIdempotent<T>(
	write: () => Promise<T>,
	waitsMs: readonly number[] = UNKNOWN_OUTCOME_WAITS_MS,
): Promise<T> {
	for (let attempt = 0; ; attempt++) {
		try {
			return await write();
		} catch (error) {
			if (!outcomeUnknown(error) || attempt >= waitsMs.length) throw error;
			await new Promise((resolve) => setTimeout(resolve, waitsMs[attempt]));
		}
	}
}
