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
		super(
			rememberedSecrets().string(message),
			options?.cause !== undefined && rememberedSecrets().active
				? { cause: safely(() => rememberedSecrets().error(options.cause), undefined) }
				: options,
		);
		this.details = safely(() => rememberedSecrets().value(details), { redaction: 'failed: details dropped' });
		this.name = 'ContractError';
	}

	/**
	 * 422 `validation`, not retryable: the input (a field of the request or item) breaks the contract.
	 * Details usually `{ code: 'VALIDATION', field }`, where usually `{ operation: 'validate' }`.
	 */
	static validation(
		message: string,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions,
	): ContractError {
		return new ContractError(message, 422, 'validation', false, details, where, options);
	}

	/**
	 * 400 `validation`, not retryable: the request itself is malformed (a body or header the node cannot
	 * read as a request at all, e.g. a webhook body that is not JSON or a bad bot key).
	 */
	static badRequest(
		message: string,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions,
	): ContractError {
		return new ContractError(message, 400, 'validation', false, details, where, options);
	}

	/**
	 * 500 `validation`, not retryable: the node's own configuration (a parameter, an option, a credential
	 * field) is wrong, not the input; 500 so a sender that retries on 5xx keeps the input until it is fixed.
	 */
	static configuration(
		message: string,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions,
	): ContractError {
		return new ContractError(message, 500, 'validation', false, details, where, options);
	}

	/** 404 `not_found`, not retryable: the row, document or run the request names does not exist (for this tenant or user). */
	static notFound(
		message: string,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions,
	): ContractError {
		return new ContractError(message, 404, 'not_found', false, details, where, options);
	}

	/**
	 * 409 `conflict`, not retryable: the target exists but is in a state the request does not fit
	 * (illegal transition, stale revision, already terminal, duplicate).
	 */
	static conflict(
		message: string,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions,
	): ContractError {
		return new ContractError(message, 409, 'conflict', false, details, where, options);
	}

	/** 401 `auth`, not retryable: the caller did not authenticate (missing or wrong secret, token or signature). */
	static unauthorized(
		message: string,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions,
	): ContractError {
		return new ContractError(message, 401, 'auth', false, details, where, options);
	}

	/** 403 `auth`, not retryable: the caller is known but may not do this (ACL, tenant or owner mismatch). */
	static forbidden(
		message: string,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions,
	): ContractError {
		return new ContractError(message, 403, 'auth', false, details, where, options);
	}

	/**
	 * `upstream` (or `rate_limit` with `options.rateLimited`): a service the node calls (Telegram, a URL,
	 * an embeddings or LLM endpoint, a sub-workflow) failed or answered something unusable.
	 * @param statusCode the answer's code: usually 502; 413 for a body over the limit; 400 for an aborted workflow
	 * @param retryable whether the same call may succeed later (5xx, 429, network errors: usually yes)
	 */
	static upstream(
		message: string,
		statusCode: number,
		retryable: boolean,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions & { rateLimited?: boolean },
	): ContractError {
		return new ContractError(
			message,
			statusCode,
			options?.rateLimited ? 'rate_limit' : 'upstream',
			retryable,
			details,
			where,
			causeOf(options),
		);
	}

	/**
	 * 500 `db`, not retryable by default (`options.retryable` to say a retry may succeed, e.g. a race
	 * the next attempt resolves): the database answered something the node cannot use (no row where
	 * one must be, a missing collection or table, an unexpected outcome). Driver errors go through
	 * `fromPgError` / `fromArangoError`, which pick 500 or 503 themselves.
	 */
	static db(
		message: string,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions & { retryable?: boolean },
	): ContractError {
		return new ContractError(message, 500, 'db', options?.retryable ?? false, details, where, causeOf(options));
	}

	/** 503 `db`, retryable: the database is unreachable or not ready; a later attempt may succeed. */
	static unavailable(
		message: string,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions,
	): ContractError {
		return new ContractError(message, 503, 'db', true, details, where, options);
	}

	/** 500 `unknown`, not retryable: an error nothing else classified (a bug, an unexpected throw). */
	static internal(
		message: string,
		details?: Record<string, unknown>,
		where?: ErrorContextInit,
		options?: FactoryOptions,
	): ContractError {
		return new ContractError(message, 500, 'unknown', false, details, where, options);
	}
}

/** `options` of a factory: only the cause reaches the constructor (`{ cause }` only when one was given). */
interface FactoryOptions {
	/** The error this one wraps (redacted like the message). */
	cause?: unknown;
}

function causeOf(options: FactoryOptions | undefined): FactoryOptions | undefined {
	return options && 'cause' in options ? { cause: options.cause } : undefined;
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
const TRANSIENT_NET = new Set([
	'ECONNREFUSED',
	'ECONNRESET',
	'ETIMEDOUT',
	'EPIPE',
	'EHOSTUNREACH',
	'ENOTFOUND',
	'EAI_AGAIN',
]);

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
	const message = (typeof pgError.message === 'string' && pgError.message ? pgError.message : String(error)).replace(
		/:\/\/[^@/\s]*@/g,
		'://[REDACTED]@',
	);
	const transient =
		(code !== undefined && (TRANSIENT_SQLSTATE.test(code) || TRANSIENT_NET.has(code))) ||
		/Connection terminated|connection timeout|timeout exceeded when trying to connect/i.test(message);
	const details: Record<string, unknown> = {};
	if (code) details.sqlstate = code;
	if (typeof pgError.constraint === 'string') details.constraint = pgError.constraint;
	return new ContractError(`database error: ${message}`, transient ? 503 : 500, 'db', transient, details, where, {
		cause: error,
	});
}
