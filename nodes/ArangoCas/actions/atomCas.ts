/**
 * What the user's compare-and-swap operations on one atom share (Atom → Lock, Unlock, Archive; each
 * keeps its own query, extra inputs, preconditions and output in its operation file):
 *  - the input `atom_id` (key or atoms/<key>), `user_id` (the Identity fields: the verified token's
 *    claim by default; 401/403 kind auth, see shared/node/identity.ts), `expected_rev` (body or If-Match);
 *  - the query's bind variables `@atom_key`, `@user_id`, `@expected_rev`;
 *  - the 423 LOCKED outcome (another user holds the atom's lock) with `locked_by`, `locked_until`
 *    (ms since epoch), besides the 404 NOT_FOUND and 409 REV_CONFLICT of every CAS update (./casUpdate.ts).
 */
import type { Database } from 'arangojs';
import { z } from 'zod';
import { ATOM_ID_FIELD, expectedRevField, type FieldInit } from '../../shared/node/fields';
import { identityFields } from '../../shared/node/identity';
import { casUpdateAtom } from './casUpdate';
import { keyIn, Rev, UserId } from './inputs';
import { lockDetails, type OutcomeDetails, type OutcomeRow } from './outcome';

/** The shared input (an operation with more inputs `.extend`s it; its fields come after these). */
export const AtomCasInput = z.object({ atom_id: keyIn('atoms'), user_id: UserId, expected_rev: Rev });

/** The parsed shared input. */
export type AtomCas = z.output<typeof AtomCasInput>;

/**
 * The shared fields, for `fieldsOf`: Atom ID, the Identity fields, Expected Revision (of the atom).
 * @param who what the user does, e.g. "Who takes the lock (stored in locked_by)"
 */
export function atomCasFields(who: string): FieldInit[] {
	return [
		ATOM_ID_FIELD,
		...identityFields(who),
		expectedRevField('Expected Revision', 'expectedRev', 'expected_rev', 'atom'),
	];
}

/**
 * Runs the operation's CAS `query` on the atom as `input.user_id`, with the shared bind variables and the
 * operation's `extra` ones; returns the OK row.
 * @param details `error.details` of the operation's further outcomes (INVALID_STATE, …), from the row
 * @throws ContractError 404 NOT_FOUND, 423 LOCKED, 409 REV_CONFLICT (with `current_rev`; after a lost
 * race also `current_revs`), the further outcomes, or a failure of ArangoDB (./casUpdate.ts)
 */
export function updateAtomAsUser(
	db: Database,
	input: AtomCas,
	query: string,
	extra: Record<string, unknown> = {},
	details: (row: OutcomeRow | undefined) => OutcomeDetails = () => ({}),
): Promise<OutcomeRow> {
	return casUpdateAtom(db, {
		key: input.atom_id,
		expectedRev: input.expected_rev,
		query,
		bindVars: { atom_key: input.atom_id, user_id: input.user_id, expected_rev: input.expected_rev, ...extra },
		details: (row) => ({ LOCKED: lockDetails(row), ...details(row) }),
	});
}
