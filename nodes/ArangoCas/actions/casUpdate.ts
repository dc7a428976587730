/**
 * The compare-and-swap update of one atom, the mechanics Lock, Unlock, Archive and Reject share (each
 * keeps its own query, inputs and preconditions in its operation file):
 *  1. one AQL query (one round trip, `operation: 'update'` on `atoms`) that reads the atom, checks the
 *     operation's preconditions and `_rev != @expected_rev`, writes only when they pass (`ignoreRevs:
 *     false`) and returns one outcome row (./outcome.ts) with `current_rev`, the `_rev` it read;
 *  2. a lost race (ArangoDB 1200, the document changed between the read and the write) becomes a 409
 *     REV_CONFLICT with `expected_rev`, and `current_rev` / `current_revs` read once more after the
 *     conflict (withCurrentRev, ../transport/conflict.ts);
 *  3. the row's outcome becomes its error (assertOk): 404 NOT_FOUND with `missing: ["atoms/<key>"]`,
 *     409 REV_CONFLICT with `expected_rev` and `current_rev`, and the operation's own outcomes
 *     (423 LOCKED, 409 INVALID_STATE, 409 PROTECTED_BY_BASELINE, …) with the details it gives.
 */
import type { Database } from 'arangojs';
import { withCurrentRev } from '../transport/conflict';
import { runQuery } from '../transport/query';
import { assertOk, type OutcomeDetails, type OutcomeRow } from './outcome';

/** One CAS update of one atom (see the header). */
export interface AtomCasUpdate {
	/** Key of the atom (`a1`): errors name it as `atoms/<key>`. */
	key: string;
	/** The `_rev` the caller expects the atom to have (the query's `@expected_rev`). */
	expectedRev: string;
	/** The operation's AQL (never built from input) and its bind variables, `expected_rev` included. */
	query: string;
	bindVars: Record<string, unknown>;
	/** `error.details` of the operation's own failed outcomes, from the row (undefined: no row). */
	details?: (row: OutcomeRow | undefined) => OutcomeDetails;
}

/**
 * Runs the CAS update of one atom and returns its OK row (the facts the operation outputs).
 * @throws ContractError 404 NOT_FOUND, 409 REV_CONFLICT (also after a lost race, 1200), the operation's
 * own outcomes (ContractError of ./outcome.ts), 500 NO_RESULT; any other ArangoDB failure as
 * ../transport/errors.ts maps it
 */
export async function casUpdateAtom(db: Database, update: AtomCasUpdate): Promise<OutcomeRow> {
	const atomId = `atoms/${update.key}`;
	const where = { operation: 'update', collection: 'atoms' };
	const { rows } = await withCurrentRev(db, { ids: [atomId], expectedRev: update.expectedRev }, () =>
		runQuery<OutcomeRow>(db, { query: update.query, bindVars: update.bindVars, ...where }),
	);
	const row = rows[0];
	assertOk(
		row,
		atomId,
		{
			NOT_FOUND: { missing: [atomId] },
			...update.details?.(row),
			REV_CONFLICT: { expected_rev: update.expectedRev, current_rev: row?.current_rev ?? null },
		},
		where,
	);
	return row;
}
