/**
 * Atom → Archive (seed 000 §3.7): archiving replaces deletion. The atom stays (status "archived",
 * archived_at, archive_reason, archived_by) and every structure edge pointing to it is removed.
 *
 * Input: `atom_id`, `user_id` (the Identity fields: the verified token's claim by default; 401/403
 * kind auth, see shared/node/identity.ts), `expected_rev`, `reason`.
 * Output data: `{ success: true, atom_id, archived_at (ms), atom_rev, structure_edges_removed }`.
 * Errors: 404 NOT_FOUND; 409 PROTECTED_BY_BASELINE with `baselines: [{ id, tag }]`; 423 LOCKED (an
 * expired lock counts as free; an ISO `locked_until` is compared in ms, ../lockTime.ts); 409 INVALID_STATE when already archived; 409 REV_CONFLICT with
 * `current_rev` (also after a lost race, 1200: read again after the conflict, with `current_revs`,
 * ../../transport/conflict.ts); 422 invalid input.
 * One AQL query, declaring the traversal's vertex collections (`WITH atoms, baselines`: a cluster
 * refuses an undeclared one, error 1521); every read (baseline_items traversal, the atom) comes before the two writes, and
 * structure_links is removed before atoms is updated, so no collection is touched after its write
 * (error 1579). A conflicting concurrent write fails the whole query (1200 → 409): nothing is removed.
 * Serialisation (issue 13): the CAS update of the atom is what orders Archive against Create Baseline
 * and Create Proposal, which CAS-touch the same atom (baseline/create.operation.ts,
 * proposal/create.operation.ts): of two concurrent ones, the later writer gets 1200 → 409.
 */
import { AtomCasInput, atomCasFields, updateAtomAsUser } from '../atomCas';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection, optionalText } from '../inputs';
import { fieldsOf } from '../../../shared/node/fields';
import { lockedUntilMs } from '../lockTime';
import { succeeded } from '../result';
import type { Operation } from '../types';

export const ARCHIVE_AQL = `WITH atoms, baselines
LET now = DATE_NOW()
LET atom_id = CONCAT("atoms/", @atom_key)
LET atom = DOCUMENT("atoms", @atom_key)
LET protected_baselines = (
  FOR baseline IN 1..1 INBOUND atom_id baseline_items
    RETURN { id: baseline._id, tag: baseline.tag }
)
LET locked_until = ${lockedUntilMs('atom')}
LET lock_is_active = atom != null AND atom.locked_by != null AND locked_until != null AND locked_until > now
LET outcome = atom == null ? "NOT_FOUND"
  : LENGTH(protected_baselines) > 0 ? "PROTECTED_BY_BASELINE"
  : (lock_is_active AND atom.locked_by != @user_id) ? "LOCKED"
  : atom.status == "archived" ? "INVALID_STATE"
  : atom._rev != @expected_rev ? "REV_CONFLICT"
  : "OK"
LET removed_edges = (
  FOR e IN structure_links
    FILTER outcome == "OK" AND e._to == atom_id
    REMOVE e IN structure_links OPTIONS { ignoreRevs: false }
    RETURN OLD._id
)
LET archived = FIRST(
  FOR a IN (outcome == "OK" ? [atom] : [])
    UPDATE a WITH { status: "archived", archived_at: now, archive_reason: @reason, archived_by: @user_id } IN atoms OPTIONS { ignoreRevs: false }
    RETURN NEW
)
RETURN {
  outcome: outcome,
  current_rev: atom._rev,
  status: atom.status,
  locked_by: atom.locked_by,
  locked_until: locked_until,
  baselines: protected_baselines,
  archived_at: archived.archived_at,
  atom_rev: archived._rev,
  structure_edges_removed: removed_edges
}`;

export const ArchiveInput = AtomCasInput.extend({ reason: optionalText(2000) });

const ref = { resource: 'atom', operation: 'archive' };

export const archive: Operation = {
	value: 'archive',
	name: 'Archive',
	action: 'Archive an atom',
	description: 'Archive an atom and remove it from the document structure (§3.7, baseline protection, CAS on _rev)',
	fields: fieldsOf(ref, [
		...atomCasFields('Who archives (must hold the lock if the atom is locked)'),
		{ displayName: 'Reason', name: 'reason', description: 'Why the atom is archived (stored in archive_reason)' },
	]),
	async execute(db, raw) {
		const input = parseInput(ArchiveInput, raw, inCollection('atoms'));
		const row = await updateAtomAsUser(db, input, ARCHIVE_AQL, { reason: input.reason }, (found) => ({
			PROTECTED_BY_BASELINE: { baselines: found?.baselines ?? [] },
			INVALID_STATE: { status: found?.status ?? null, expected_status: 'not archived' },
		}));
		return succeeded({
			atom_id: `atoms/${input.atom_id}`,
			archived_at: row.archived_at,
			atom_rev: row.atom_rev,
			structure_edges_removed: row.structure_edges_removed,
		});
	},
};
