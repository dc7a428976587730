/**
 * Atom → Lock (seed 000 §3.6.1): takes the edit lock of an atom for a lease, compare-and-swap on `_rev`.
 *
 * Input: `atom_id` (key or atoms/<key>), `user_id` (the Identity fields: the verified token's claim
 * by default; 401/403 kind auth, see shared/node/identity.ts), `expected_rev` (from the body or the
 * webhook's If-Match header), `lease_minutes` (default 5).
 * Output data: `{ success: true, atom_id, locked_by, locked_until, atom_rev }`; `locked_until` is ms since epoch.
 * Errors: 404 NOT_FOUND; 423 LOCKED when another user holds an unexpired lock (no lock stealing).
 * Deviation from §3.6.1 (which refuses any active lock): the holder may renew its own lock (a new lease
 * from now), so a long edit extends its lease in one CAS instead of Unlock + Lock, which would open a
 * window where another user takes the lock; renewing steals nothing (same verified identity) and still
 * needs the current `_rev`. An expired lock counts as free; a `locked_until` stored as the seed's ISO
 * string is compared in ms (../lockTime.ts). 409 REV_CONFLICT with `current_rev` (after a lost race,
 * 1200, read again, with `current_revs`: ../../transport/conflict.ts); 422 invalid input.
 * A lock clears `unlocked_by` (null: the atom is locked, nobody released it since; issue 25).
 * One AQL query (one round trip): the checks read the atom, the CAS UPDATE (`ignoreRevs: false` on
 * the document read) runs only when they pass, and a concurrent change still fails it with 1200 → 409.
 */
import { z } from 'zod';
import { AtomCasInput, atomCasFields, updateAtomAsUser } from '../atomCas';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection } from '../inputs';
import { fieldsOf } from '../../../shared/node/fields';
import { lockedUntilMs } from '../lockTime';
import { succeeded } from '../result';
import type { Operation } from '../types';

export const LOCK_AQL = `LET now = DATE_NOW()
LET atom = DOCUMENT("atoms", @atom_key)
LET locked_until = ${lockedUntilMs('atom')}
LET lock_is_active = atom != null AND atom.locked_by != null AND locked_until != null AND locked_until > now
LET outcome = atom == null ? "NOT_FOUND"
  : (lock_is_active AND atom.locked_by != @user_id) ? "LOCKED"
  : atom._rev != @expected_rev ? "REV_CONFLICT"
  : "OK"
LET updated = FIRST(
  FOR a IN (outcome == "OK" ? [atom] : [])
    UPDATE a WITH { locked_by: @user_id, locked_until: now + @lease_ms, unlocked_by: null } IN atoms OPTIONS { ignoreRevs: false, keepNull: true }
    RETURN NEW
)
RETURN {
  outcome: outcome,
  current_rev: atom._rev,
  locked_by: atom.locked_by,
  locked_until: locked_until,
  atom_rev: updated._rev,
  new_locked_until: updated.locked_until
}`;

export const LockInput = AtomCasInput.extend({
	lease_minutes: z.coerce
		.number()
		.positive('must be > 0')
		.max(24 * 60, 'must be ≤ 1440')
		.default(5),
});

const ref = { resource: 'atom', operation: 'lock' };

export const lock: Operation = {
	value: 'lock',
	name: 'Lock',
	action: 'Lock an atom',
	description: 'Take the edit lock of an atom for a lease (§3.6.1, CAS on _rev, no lock stealing)',
	fields: fieldsOf(ref, [
		...atomCasFields('Who takes the lock (stored in locked_by)'),
		{
			displayName: 'Lease (Minutes)',
			name: 'leaseMinutes',
			type: 'number',
			default: 5,
			description: 'How long the lock lasts; an expired lock counts as free and is cleared by Unlock Expired',
		},
	]),
	async execute(db, raw) {
		const input = parseInput(LockInput, raw, inCollection('atoms'));
		const row = await updateAtomAsUser(db, input, LOCK_AQL, { lease_ms: Math.round(input.lease_minutes * 60_000) });
		return succeeded({
			atom_id: `atoms/${input.atom_id}`,
			locked_by: input.user_id,
			locked_until: row.new_locked_until,
			atom_rev: row.atom_rev,
		});
	},
};
