/**
 * Atom → Unlock (seed 000 §3.6.2): clears the lock, owner only, compare-and-swap on `_rev`.
 *
 * Input: `atom_id`, `user_id` (the Identity fields: the verified token's claim by default; 401/403
 * kind auth, see shared/node/identity.ts; issue 25: stored as `unlocked_by`), `expected_rev`.
 * Output data: `{ success: true, atom_id, atom_rev }`.
 * Errors: 404 NOT_FOUND; 423 LOCKED when another user holds the lock, expired or not (§3.6.2: only the
 * owner unlocks, `locked_by == null OR locked_by == user_id`; expired locks are cleared by the §3.8 cron,
 * Unlock Expired); unlocking an atom that is not locked still checks `expected_rev` but writes nothing
 * (its `_rev` and `unlocked_by` stay; `atom_rev` is the current `_rev`); 409 REV_CONFLICT with
 * `current_rev` (after a lost race, 1200, read again, with `current_revs`: ../../transport/conflict.ts);
 * 422 invalid input. One AQL query.
 */
import { AtomCasInput, atomCasFields, updateAtomAsUser } from '../atomCas';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection } from '../inputs';
import { fieldsOf } from '../../../shared/node/fields';
import { lockedUntilMs } from '../lockTime';
import { succeeded } from '../result';
import type { Operation } from '../types';

export const UNLOCK_AQL = `LET atom = DOCUMENT("atoms", @atom_key)
LET outcome = atom == null ? "NOT_FOUND"
  : (atom.locked_by != null AND atom.locked_by != @user_id) ? "LOCKED"
  : atom._rev != @expected_rev ? "REV_CONFLICT"
  : "OK"
LET was_locked = atom != null AND atom.locked_by != null
LET updated = FIRST(
  FOR a IN (outcome == "OK" AND was_locked ? [atom] : [])
    UPDATE a WITH { locked_by: null, locked_until: null, unlocked_by: @user_id } IN atoms OPTIONS { ignoreRevs: false, keepNull: true }
    RETURN NEW
)
RETURN {
  outcome: outcome,
  current_rev: atom._rev,
  locked_by: atom.locked_by,
  locked_until: ${lockedUntilMs('atom')},
  atom_rev: was_locked ? updated._rev : atom._rev
}`;

/** Unlock takes the shared input only. */
export const UnlockInput = AtomCasInput;

const ref = { resource: 'atom', operation: 'unlock' };

export const unlock: Operation = {
	value: 'unlock',
	name: 'Unlock',
	action: 'Unlock an atom',
	description: 'Release the lock of an atom, owner only (§3.6.2, CAS on _rev)',
	fields: fieldsOf(ref, [
		...atomCasFields('Who releases the lock: must be its holder (expired locks are cleared by Unlock Expired)'),
	]),
	async execute(db, raw) {
		const input = parseInput(UnlockInput, raw, inCollection('atoms'));
		const row = await updateAtomAsUser(db, input, UNLOCK_AQL);
		return succeeded({ atom_id: `atoms/${input.atom_id}`, atom_rev: row.atom_rev });
	},
};
