/**
 * The two ways an ArangoCAS operation talks to ArangoDB (FACTS: ArangoDB):
 *  - `runQuery`: one AQL query = one HTTP round trip (`POST /_api/cursor`); a single AQL query is
 *    atomic, so an operation that fits the one-modification-per-collection rule (error 1579) is one query;
 *  - `inStreamTransaction`: `POST /_api/transaction/begin`, serial steps each carrying
 *    `x-arango-trx-id`, then commit; **any** thrown error or failed precondition aborts it, so
 *    nothing an aborted operation wrote is ever visible.
 * Every failure leaves as a ContractError (see ./errors.ts).
 */
import type { Database } from 'arangojs';
import type { Transaction } from 'arangojs/transactions';
import { ContractError } from '../../shared/errors';
import { redactorOf, requestTimeoutOf } from './database';
import { fromArangoError } from './errors';

/** One AQL statement with the facts an error report needs. */
export interface AqlStep {
	/** AQL text (never built from input: every value is a bind variable). */
	query: string;
	bindVars: Record<string, unknown>;
	/** The collection the step is mainly about (error_context.collection). */
	collection: string;
	/** What the step does: select, insert, update, remove, merge, … (error_context.operation). */
	operation: string;
}

/** Rows and write statistics of one executed step. */
export interface StepResult<T> {
	rows: T[];
	writesExecuted: number;
	writesIgnored: number;
}

/** Rows per batch: every query of this node returns one row, the sweep at most its batch size (≤ 1000). */
const BATCH_SIZE = 1000;

async function execute<T>(db: Database, step: AqlStep, trx?: Transaction): Promise<StepResult<T>> {
	const where = { operation: step.operation, collection: step.collection };
	try {
		const timeout = requestTimeoutOf(db);
		const send = () =>
			db.query(
				{ query: step.query, bindVars: step.bindVars },
				{ batchSize: BATCH_SIZE, ...(timeout ? { timeout } : {}) },
			);
		const cursor = trx ? await trx.step(send) : await send();
		const rows = (await cursor.all()) as T[];
		const stats = cursor.extra?.stats;
		return { rows, writesExecuted: stats?.writesExecuted ?? 0, writesIgnored: stats?.writesIgnored ?? 0 };
	} catch (error) {
		throw fromArangoError(error, where, redactorOf(db));
	}
}

/** Runs one AQL query (one round trip). @throws ContractError */
export function runQuery<T>(db: Database, step: AqlStep): Promise<StepResult<T>> {
	return execute<T>(db, step);
}

/** Runs a step inside the stream transaction it is given. */
export type TransactionRunner = <T>(step: AqlStep) => Promise<StepResult<T>>;

/**
 * Begins a stream transaction on `collections`, runs `work` (its steps strictly one after another),
 * commits when `work` resolves and aborts when it throws; the error is rethrown (as a ContractError).
 * A failed abort is ignored: the server drops an idle stream transaction after 60 s anyway.
 */
export async function inStreamTransaction<T>(
	db: Database,
	collections: { write: string[]; read?: string[] },
	work: (run: TransactionRunner) => Promise<T>,
): Promise<T> {
	// error_context names one collection: the first written one (the one the operation is about).
	const where = { operation: 'begin_transaction', collection: collections.write[0] };
	let trx: Transaction;
	try {
		trx = await db.beginTransaction({ write: collections.write, read: collections.read ?? [] });
	} catch (error) {
		throw fromArangoError(error, where, redactorOf(db));
	}
	let result: T;
	try {
		result = await work((step) => execute(db, step, trx));
	} catch (error) {
		await trx.abort().catch(() => undefined);
		throw error instanceof ContractError ? error : fromArangoError(error, where, redactorOf(db));
	}
	try {
		await trx.commit();
	} catch (error) {
		throw fromArangoError(error, { operation: 'commit_transaction', collection: where.collection }, redactorOf(db));
	}
	return result;
}
