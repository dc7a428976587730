/**
 * The current `_rev` of a document after a write-write conflict (seed 000 "Section 2": 409 REV_CONFLICT
 * carries `current_rev`). ArangoDB answers a lost CAS race with errorNum 1200 and no document, so the
 * error arrives with `current_rev: null` (./errors.ts); `withCurrentRev` reads the document once more,
 * after the conflict (outside any transaction, which is aborted by then), and fills it in.
 * The read is best effort: when it fails too (or the document is gone), `current_rev` stays null and the
 * original 409 is thrown unchanged otherwise.
 */
import type { Database } from 'arangojs';
import { ContractError } from '../../shared/errors';
import { runQuery } from './query';

/** One read, no write: the `_rev` of `@collection/@key`, or null when it does not exist. */
export const CURRENT_REV_AQL = `RETURN DOCUMENT(@collection, @key)._rev`;

/** Whether `error` is the 409 of an ArangoDB write-write conflict (errorNum 1200). */
export function isWriteConflict(error: unknown): error is ContractError {
	return error instanceof ContractError && error.statusCode === 409 && error.details.code === 'REV_CONFLICT' && error.details.arango_error_num === 1200;
}

/**
 * Runs `work`; a 1200 conflict it throws is rethrown with `details.current_rev` = the `_rev` of
 * `collection/key` read after the conflict (and `expected_rev` when given). Other errors pass unchanged.
 */
export async function withCurrentRev<T>(
	db: Database,
	target: { collection: string; key: string; expectedRev?: string },
	work: () => Promise<T>,
): Promise<T> {
	try {
		return await work();
	} catch (error) {
		if (!isWriteConflict(error)) throw error;
		let current: unknown = null;
		try {
			const { rows } = await runQuery<string | null>(db, {
				query: CURRENT_REV_AQL,
				bindVars: { collection: target.collection, key: target.key },
				collection: target.collection,
				operation: 'select',
			});
			current = typeof rows[0] === 'string' ? rows[0] : null;
		} catch {
			// best effort: keep current_rev null
		}
		Object.assign(error.details, {
			...(target.expectedRev !== undefined ? { expected_rev: target.expectedRev } : {}),
			current_rev: current,
		});
		throw error;
	}
}
