/**
 * Maps what arangojs throws to a ContractError (status code, ErrorEnvelope kind, retryable), checking
 * `errorNum`, never the message text (FACTS: ArangoDB error numbers):
 *  - 1200 conflict (`_rev` mismatch or write-write conflict) → 409 conflict, details.code REV_CONFLICT;
 *  - 1202 document not found → 404 not_found; 1210 unique constraint → 409 conflict, UNIQUE_VIOLATION;
 *  - 18 lock timeout, 1654/1655 transaction aborted/not found, 503 responses → 503 db, retryable;
 *  - 1203 collection not found → 500 db, with a hint to run `npm run db:migrate:arango`;
 *  - 11 / HTTP 401 bad credentials → 502 auth; anything else from the server → 500 db;
 *  - network failures (refused, reset, DNS, timeout) → 503 db, retryable.
 * 1200, 1202 and 1210 (4xx, read by the caller) carry a fixed message (FIXED_MESSAGES); every error keeps
 * ArangoDB's own text in `details.arango_message` (and the cause). Other ArangoDB errors (5xx, answered
 * with a fixed text by the PublicError) keep `ArangoDB error <num>: <text>` as their message.
 * The credential's secrets are redacted from the message, and the cause is a redacted copy (name,
 * message, stack, code, its own cause), never arangojs's error with its request and headers.
 */
import { isArangoError, isNetworkError } from 'arangojs/errors';
import { ContractError, type ErrorContextInit } from '../../shared/errors';
import { NO_SECRETS, type Redactor } from '../../shared/redact';

/**
 * The message of a 4xx from ArangoDB (the caller reads it, issue 25 §4): fixed, never ArangoDB's text,
 * which names AQL, indexes, collections and servers; that text stays in `details.arango_message`.
 */
export const FIXED_MESSAGES = {
	1200: 'write conflict: the document changed during this request; read it again and retry with its current _rev',
	1202: 'document not found',
	1210: 'a document with the same unique values already exists',
} as const;

const TRANSIENT_ERROR_NUMS = new Set([18, 21, 1654, 1655, 1496, 1497]);

/** The cause chain's `code` (ECONNREFUSED, UND_ERR_…), when a network error has one. */
function causeCode(error: unknown): string | undefined {
	let current: unknown = error;
	for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
		const code = (current as { code?: unknown }).code;
		if (typeof code === 'string') return code;
		current = (current as { cause?: unknown }).cause;
	}
	return undefined;
}

/** @param redact the redactor of the credential the failing request used */
export function fromArangoError(error: unknown, where: ErrorContextInit, redact: Redactor = NO_SECRETS): ContractError {
	if (error instanceof ContractError) return error;
	const cause = redact.error(error);
	const clean = (message: string) => redact.string(message);
	if (isArangoError(error)) {
		const num = error.errorNum;
		const details: Record<string, unknown> = {
			arango_error_num: num,
			arango_http_code: error.code ?? null,
			arango_message: clean(error.message),
		};
		const make = (
			status: number,
			kind: ConstructorParameters<typeof ContractError>[2],
			retryable: boolean,
			extra = {},
			message = clean(`ArangoDB error ${num}: ${error.message}`),
		) => new ContractError(message, status, kind, retryable, { ...details, ...extra }, where, { cause });
		if (num === 1200)
			return make(409, 'conflict', false, { code: 'REV_CONFLICT', current_rev: null }, FIXED_MESSAGES[1200]);
		if (num === 1202) return make(404, 'not_found', false, { code: 'NOT_FOUND' }, FIXED_MESSAGES[1202]);
		if (num === 1210) return make(409, 'conflict', false, { code: 'UNIQUE_VIOLATION' }, FIXED_MESSAGES[1210]);
		if (num === 1203)
			return make(500, 'db', false, { code: 'COLLECTION_NOT_FOUND', hint: 'run npm run db:migrate:arango' });
		if (num === 11 || error.code === 401) return make(502, 'auth', false, { code: 'AUTH_FAILED' });
		if (TRANSIENT_ERROR_NUMS.has(num) || error.code === 503) return make(503, 'db', true, { code: 'UNAVAILABLE' });
		return make(500, 'db', false, { code: 'ARANGO_ERROR' });
	}
	if (isNetworkError(error)) {
		const status = (error as { code?: unknown }).code;
		if (typeof status === 'number' && status < 500) {
			return ContractError.upstream(
				clean(`ArangoDB answered HTTP ${status}: ${error.message}`),
				502,
				false,
				{ code: 'HTTP_ERROR', http_status: status },
				where,
				{ cause },
			);
		}
		const code = causeCode((error as { cause?: unknown }).cause);
		return ContractError.unavailable(
			clean(`ArangoDB unreachable: ${error.message}${code ? ` (${code})` : ''}`),
			{ code: 'UNREACHABLE', ...(code ? { cause_code: code } : {}) },
			where,
			{ cause },
		);
	}
	const message = error instanceof Error ? error.message : String(error);
	return ContractError.db(clean(`ArangoDB request failed: ${message}`), { code: 'ARANGO_ERROR' }, where, { cause });
}
