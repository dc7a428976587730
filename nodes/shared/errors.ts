/**
 * The error every node operation raises on a failed contract: it carries the HTTP status code, the
 * ErrorEnvelope kind, whether a retry may succeed, and where it happened (error_context, seed 002 §1.2).
 */
import type { ErrorKind } from './contracts/envelope';
import { rememberedSecrets } from './redact';

export interface ErrorContextInit {
	/** Operation on the table: select, insert, update, delete, upsert. */
	operation?: string;
	/** `schema.table` the failing statement touched. */
	table?: string;
	/** ArangoDB collection the failing query or check was about. */
	collection?: string;
}

/**
 * A failed contract. Every secret a transport has seen (see ./redact.ts `rememberSecrets`) is redacted
 * from the message, the details and the cause chain when the error is built.
 */
export class ContractError extends Error {
	readonly details: Record<string, unknown>;

	constructor(
		message: string,
		/** HTTP status code of the answer (400–599). */
		readonly statusCode: number,
		readonly kind: ErrorKind,
		readonly retryable: boolean,
		/** Extra facts for `error.details` (objects, never strings). */
		details: Record<string, unknown> = {},
		readonly where: ErrorContextInit = {},
		options?: { cause?: unknown },
	) {
		super(rememberedSecrets().string(message), options?.cause !== undefined && rememberedSecrets().active ? { cause: safely(() => rememberedSecrets().error(options.cause), undefined) } : options);
		this.details = safely(() => rememberedSecrets().value(details), { redaction: 'failed: details dropped' });
		this.name = 'ContractError';
	}
}

/** `make()`, or `fallback` if it throws (a details getter that throws must not break the error). */
function safely<T>(make: () => T, fallback: T): T {
	try {
		return make();
	} catch {
		return fallback;
	}
}

/** SQLSTATE classes that mean "the server or the connection is not there": retry later. */
const TRANSIENT_SQLSTATE = /^(08|53|57P0[1-3]|40001|40P01|55P03)/;
/** Node socket errors of an unreachable or dropped server. */
const TRANSIENT_NET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Maps an error thrown by `pg` to a ContractError of kind `db`: unreachable server, dropped
 * connection, serialization failure or deadlock → 503 retryable; constraint and data errors → 500 not
 * retryable. Keeps the SQLSTATE (`details.sqlstate`) and the constraint name when there is one.
 */
export function fromPgError(error: unknown, where: ErrorContextInit): ContractError {
	if (error instanceof ContractError) return error;
	const pgError = (error ?? {}) as { code?: unknown; message?: unknown; constraint?: unknown };
	const code = typeof pgError.code === 'string' ? pgError.code : undefined;
	// A URL's user info (`postgres://app:pw@host`) is never quoted, whoever's password it is.
	const message = (typeof pgError.message === 'string' && pgError.message ? pgError.message : String(error)).replace(/:\/\/[^@/\s]*@/g, '://[REDACTED]@');
	const transient =
		(code !== undefined && (TRANSIENT_SQLSTATE.test(code) || TRANSIENT_NET.has(code))) ||
		/Connection terminated|connection timeout|timeout exceeded when trying to connect/i.test(message);
	const details: Record<string, unknown> = {};
	if (code) details.sqlstate = code;
	if (typeof pgError.constraint === 'string') details.constraint = pgError.constraint;
	return new ContractError(
		`database error: ${message}`,
		transient ? 503 : 500,
		'db',
		transient,
		details,
		where,
		{ cause: error },
	);
}
