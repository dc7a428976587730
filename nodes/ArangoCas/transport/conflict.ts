/**
 * What a 409 REV_CONFLICT after a lost race carries (seed 000 "Section 2": 409 REV_CONFLICT carries
 * `current_rev`). ArangoDB answers a lost CAS race (or a write-write conflict inside a stream
 * transaction) with errorNum 1200 and names no document, so the error arrives with `current_rev: null`
 * (./errors.ts). After the conflict (outside any transaction, which is aborted by then) one read-only
 * query reads the current `_rev`s again and fills in:
 *  - `current_rev`: the `_rev` of the primary document (the first id; the one whose `_rev` the caller
 *    gave as `expected_rev`), null when it no longer exists;
 *  - `current_revs`: `{ "<collection>/<key>": _rev | null }` for every document read again.
 * The read is best effort: when it fails too, `current_rev` stays null, `current_revs` is absent and
 * the original 409 is thrown unchanged otherwise (facts known without reading, such as `expected_rev`,
 * are still added). Errors other than a 1200 conflict pass unchanged and read nothing.
 *  - `withCurrentRev`: the `_rev`s of fixed document ids (CURRENT_REVS_AQL);
 *  - `onWriteConflict`: any read-only query of the caller (a traversal, or facts derived from the
 *    `_rev`s, as Merge's `conflict_on`), and optionally a clearer message.
 */
import type { Database } from 'arangojs';
import { ContractError } from '../../shared/errors';
import { runQuery } from './query';

/** One read, no write: `[id, _rev]` per document id of `@ids` (`_rev` null when it does not exist). */
export const CURRENT_REVS_AQL = `FOR id IN @ids
  RETURN [id, DOCUMENT(id)._rev]`;

/** Whether `error` is the 409 of an ArangoDB write-write conflict (errorNum 1200). */
export function isWriteConflict(error: unknown): error is ContractError {
	return (
		error instanceof ContractError &&
		error.statusCode === 409 &&
		error.details.code === 'REV_CONFLICT' &&
		error.details.arango_error_num === 1200
	);
}

/**
 * `[id, _rev]` rows as a map over `ids`: each id → its `_rev`, or null when the row is missing or its
 * `_rev` is not a string (the document does not exist).
 */
export function revMap(ids: string[], rows: unknown[]): Record<string, string | null> {
	const revs: Record<string, string | null> = Object.fromEntries(ids.map((id) => [id, null]));
	for (const [id, rev] of revPairs(rows)) if (id in revs) revs[id] = rev;
	return revs;
}

/**
 * The `[id, _rev]` rows whose id and `_rev` are both strings, in their order; any other row (a
 * document that does not exist: `_rev` null) is left out.
 */
export function revPairs(rows: unknown[]): [string, string][] {
	return rows.filter(
		(row): row is [string, string] => Array.isArray(row) && typeof row[0] === 'string' && typeof row[1] === 'string',
	);
}

/**
 * The current `_rev` of each document id ("atoms/a1") in one read-only query (one round trip).
 * @returns id → `_rev`, null when the document does not exist
 * @throws ContractError when the query fails (./errors.ts)
 */
export async function readCurrentRevs(db: Database, ids: string[]): Promise<Record<string, string | null>> {
	const { rows } = await runQuery<unknown>(db, {
		query: CURRENT_REVS_AQL,
		bindVars: { ids },
		collection: ids[0]?.split('/')[0] ?? '',
		operation: 'select',
	});
	return revMap(ids, rows);
}

/** How a 1200 conflict is completed (see the header). */
export interface ConflictReport {
	/** Details known without reading (e.g. `expected_rev`): added even when the re-read fails. */
	known?: Record<string, unknown>;
	/** One read-only query after the conflict; its details are added. Best effort: a throw adds nothing. */
	reread?: () => Promise<Record<string, unknown>>;
	/** Replaces the 409's fixed message; ArangoDB's own text stays in `details.arango_message` (./errors.ts). */
	message?: string;
}

/**
 * Runs `work`; a 1200 conflict it throws is rethrown as a 409 REV_CONFLICT completed by `report`
 * (same status, kind, details, where and cause). Other errors pass unchanged, without a read.
 */
export async function onWriteConflict<T>(work: () => Promise<T>, report: ConflictReport): Promise<T> {
	try {
		return await work();
	} catch (error) {
		if (!isWriteConflict(error)) throw error;
		let read: Record<string, unknown> = {};
		if (report.reread) {
			try {
				read = await report.reread();
			} catch {
				// best effort: the 409 stays as it was
			}
		}
		const details = { ...error.details, ...(report.known ?? {}), ...read };
		if (report.message === undefined) {
			Object.assign(error.details, details);
			throw error;
		}
		throw new ContractError(report.message, error.statusCode, error.kind, error.retryable, details, error.where, {
			cause: error.cause,
		});
	}
}

/**
 * Runs `work`; a 1200 conflict it throws is rethrown with `current_rev` = the `_rev` of `ids[0]` and
 * `current_revs` = the `_rev` of every id, read in one query after the conflict, plus `expected_rev`
 * when given (the caller's expected `_rev` of `ids[0]`). Other errors pass unchanged.
 * @param target.ids document ids ("atoms/a1"), the primary first; at least one
 */
export function withCurrentRev<T>(
	db: Database,
	target: { ids: string[]; expectedRev?: string },
	work: () => Promise<T>,
): Promise<T> {
	return onWriteConflict(work, {
		known: target.expectedRev !== undefined ? { expected_rev: target.expectedRev } : {},
		reread: async () => {
			const revs = await readCurrentRevs(db, target.ids);
			return { current_rev: revs[target.ids[0]] ?? null, current_revs: revs };
		},
	});
}
