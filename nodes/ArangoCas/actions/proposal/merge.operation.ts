/**
 * Proposal → Merge (seed 000 §3.2, the critical one): the winner proposal replaces the current active
 * atom in the document, with no lost update and no orphan active atom.
 *
 * Input: `winner_proposal_id`, `current_active_id`, `user_id` (the Identity fields: the verified
 * token's claim by default; 401/403 kind auth, see shared/node/identity.ts; stored as switched_by, archived_by,
 * activated_by, merged_by and each rebased proposal link's `rebased_by`), `structure_edge_id`
 * (structure_links/<key>), `expected_edge_rev` (or If-Match), `allow_outdated` (default false).
 * Output data (the §3.2 RETURN): `{ success: true, new_active_atom_id, archived_atom_id,
 * structure_edge_id, structure_edge_rev, rebased_proposals_count, rebased_proposals: [{ id, outdated }],
 * revision_link_id, removed_proposal_links }`.
 * Errors: 404 NOT_FOUND (`missing`); 423 LOCKED (current atom locked by another user, expired locks are
 * free; an ISO `locked_until` is compared in ms, ../lockTime.ts); 409 INVALID_STATE (current not active or winner not a proposal); 409 EDGE_MISMATCH (the edge
 * no longer points to current); 409 NOT_A_PROPOSAL; 409 PROPOSAL_OUTDATED; 409 REV_CONFLICT (edge `_rev`
 * differs: `current_rev`; or a concurrent write: 1200, see below); 422 invalid input.
 *
 * After a lost race (1200: a concurrent write to the structure edge, to one of the two atoms, or to a
 * proposal link this merge rebases or removes; ArangoDB does not say which) the transaction is aborted
 * and one read-only query (CURRENT_REVS_AQL, ../../transport/conflict.ts) reads the `_rev` of the edge
 * and of both atoms. The 409 REV_CONFLICT then carries (best effort: absent when that read fails):
 *  - `expected_rev`: the caller's `expected_edge_rev`; `current_rev`: the edge's `_rev` now (null: gone);
 *  - `current_revs`: `{ "structure_links/<k>": rev|null, "atoms/<current>": rev|null, "atoms/<winner>": rev|null }`;
 *  - `conflict_on`: the ids whose `_rev` is known to differ from what the caller expected. Only the
 *    edge has a caller-given `_rev`, so this is `["structure_links/<k>"]` or `[]`; `[]` means the
 *    concurrent write hit an atom (or a proposal link) and `current_rev` == `expected_rev`.
 * The message says so: "concurrent write to the structure edge or an atom of this merge; retry with the
 * current revisions" (a retry re-checks every precondition: an atom archived or merged meanwhile
 * answers 409 INVALID_STATE, a moved edge 409 REV_CONFLICT or EDGE_MISMATCH).
 *
 * One stream transaction (4 round trips: begin, 2 queries, commit), because proposal_links is written
 * twice (rebase UPDATE + winner-link REMOVE) and AQL allows one modification per collection per query:
 *  1. MERGE_SWITCH_AQL reads everything, checks every precondition, and only when all pass: CAS-switches
 *     the given structure edge, archives current + activates winner (CAS on the `_rev`s it read),
 *     inserts the `replaces` revision link and rebases the other proposals (outdated: true);
 *  2. MERGE_UNLINK_AQL removes the winner's proposal links;
 *  then commit. Any failed check, conflict or error aborts: the winner becomes active only together
 *  with the switched edge, or not at all.
 */
import { z } from 'zod';
import { ContractError } from '../../../shared/errors';
import { assertOk, type OutcomeRow } from '../outcome';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection, keyIn, Rev, UserId } from '../inputs';
import { expectedRevField, fieldsOf } from '../../../shared/node/fields';
import { identityFields } from '../../../shared/node/identity';
import { onWriteConflict, readCurrentRevs } from '../../transport/conflict';
import { inStreamTransaction } from '../../transport/query';
import { lockedUntilMs } from '../lockTime';
import { succeeded } from '../result';
import type { Operation } from '../types';

export const MERGE_SWITCH_AQL = `LET now = DATE_NOW()
LET current_id = CONCAT("atoms/", @current_key)
LET winner_id = CONCAT("atoms/", @winner_key)
LET current_atom = DOCUMENT("atoms", @current_key)
LET winner_atom = DOCUMENT("atoms", @winner_key)
LET edge = DOCUMENT("structure_links", @edge_key)
LET winner_links = (
  FOR pe IN proposal_links
    FILTER pe._from == winner_id AND pe._to == current_id
    RETURN pe
)
LET other_links = (
  FOR pe IN proposal_links
    FILTER pe._to == current_id AND pe._from != winner_id
    RETURN pe
)
LET winner_link = FIRST(winner_links)
LET locked_until = ${lockedUntilMs('current_atom')}
LET lock_is_active = current_atom != null AND current_atom.locked_by != null
  AND locked_until != null AND locked_until > now
LET outcome = (current_atom == null OR winner_atom == null OR edge == null) ? "NOT_FOUND"
  : (lock_is_active AND current_atom.locked_by != @user_id) ? "LOCKED"
  : (current_atom.status != "active" OR winner_atom.status != "proposal") ? "INVALID_STATE"
  : edge._to != current_id ? "EDGE_MISMATCH"
  : winner_link == null ? "NOT_A_PROPOSAL"
  : (winner_link.outdated == true AND @allow_outdated != true) ? "PROPOSAL_OUTDATED"
  : edge._rev != @expected_edge_rev ? "REV_CONFLICT"
  : "OK"
LET switched_edge = FIRST(
  FOR e IN (outcome == "OK" ? [edge] : [])
    UPDATE { _key: e._key, _rev: @expected_edge_rev } WITH { _to: winner_id, switched_at: now, switched_by: @user_id }
      IN structure_links OPTIONS { ignoreRevs: false }
    RETURN NEW
)
LET changed_atoms = (
  FOR change IN (switched_edge == null ? [] : [
      { _key: current_atom._key, _rev: current_atom._rev, patch: { status: "archived", archived_at: now, archived_by: @user_id } },
      { _key: winner_atom._key, _rev: winner_atom._rev, patch: { status: "active", activated_at: now, activated_by: @user_id } }
    ])
    UPDATE { _key: change._key, _rev: change._rev } WITH change.patch IN atoms OPTIONS { ignoreRevs: false }
    RETURN { id: NEW._id, rev: NEW._rev, status: NEW.status }
)
LET revision_link = FIRST(
  FOR x IN (switched_edge == null ? [] : [1])
    INSERT { _from: winner_id, _to: current_id, type: "replaces", created_at: now, merged_by: @user_id } INTO revision_links
    RETURN NEW
)
LET rebased = (
  FOR pe IN (switched_edge == null ? [] : other_links)
    UPDATE pe WITH { _to: winner_id, outdated: true, rebased_from: current_id, rebased_at: now, rebased_by: @user_id }
      IN proposal_links OPTIONS { ignoreRevs: false }
    RETURN { id: pe._from, outdated: true }
)
RETURN {
  outcome: outcome,
  missing: [
    current_atom == null ? current_id : null,
    winner_atom == null ? winner_id : null,
    edge == null ? CONCAT("structure_links/", @edge_key) : null
  ],
  current_status: current_atom.status,
  winner_status: winner_atom.status,
  locked_by: current_atom.locked_by,
  locked_until: locked_until,
  edge_to: edge._to,
  current_rev: edge._rev,
  structure_edge_rev: switched_edge._rev,
  changed_atoms: changed_atoms,
  revision_link_id: revision_link._id,
  rebased_proposals: rebased
}`;

export const MERGE_UNLINK_AQL = `FOR pe IN proposal_links
  FILTER pe._from == @winner_id
  REMOVE pe IN proposal_links OPTIONS { ignoreRevs: false }
  RETURN OLD._id`;

/** The message of a 409 after a lost race (1200): ArangoDB does not say which document was written. */
export const MERGE_CONFLICT_MESSAGE =
	'concurrent write to the structure edge or an atom of this merge; retry with the current revisions';

/** Collections the merge transaction writes (declared at begin, as stream transactions require). */
export const MERGE_WRITE_COLLECTIONS = ['structure_links', 'atoms', 'revision_links', 'proposal_links'];

export const MergeInput = z.object({
	winner_proposal_id: keyIn('atoms'),
	current_active_id: keyIn('atoms'),
	user_id: UserId,
	structure_edge_id: keyIn('structure_links'),
	expected_edge_rev: Rev,
	allow_outdated: z
		.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')], {
			invalid_type_error: 'must be true or false',
		})
		.nullish()
		.transform((v) => v === true),
});

const ref = { resource: 'proposal', operation: 'merge' };

export const mergeProposal: Operation = {
	value: 'merge',
	name: 'Merge',
	action: 'Merge a proposal',
	description: 'Make a proposal the active atom: CAS switch of the structure edge, archive, rebase (§3.2)',
	fields: fieldsOf(ref, [
		{
			displayName: 'Winner Proposal ID',
			name: 'winnerProposalId',
			required: true,
			description: 'Key of the proposal atom that wins',
		},
		{
			displayName: 'Current Active ID',
			name: 'currentActiveId',
			required: true,
			description: 'Key of the atom it replaces',
		},
		...identityFields('Who merges (must hold the lock if the current atom is locked)'),
		{
			displayName: 'Structure Edge ID',
			name: 'structureEdgeId',
			required: true,
			description: 'The structure_links/&lt;key&gt; edge that places the current atom in the document',
		},
		expectedRevField('Expected Edge Revision', 'expectedEdgeRev', 'expected_edge_rev', 'structure edge'),
		{
			displayName: 'Allow Outdated',
			name: 'allowOutdated',
			type: 'boolean',
			default: false,
			description:
				'Whether a proposal that was rebased (outdated: true) may still be merged. To take it from the webhook body, set the field to an expression reading body.allow_outdated.',
		},
	]),
	async execute(db, raw) {
		const input = parseInput(MergeInput, raw, inCollection('atoms'));
		const winnerId = `atoms/${input.winner_proposal_id}`;
		const currentId = `atoms/${input.current_active_id}`;
		const edgeId = `structure_links/${input.structure_edge_id}`;
		const where = { operation: 'merge', collection: 'structure_links' };
		// A lost race (1200) aborts the transaction; the edge and both atoms are then read again (see the header).
		return onWriteConflict(
			() =>
				inStreamTransaction(db, { write: MERGE_WRITE_COLLECTIONS }, async (run) => {
					const switched = await run<OutcomeRow>({
						query: MERGE_SWITCH_AQL,
						bindVars: {
							current_key: input.current_active_id,
							winner_key: input.winner_proposal_id,
							edge_key: input.structure_edge_id,
							expected_edge_rev: input.expected_edge_rev,
							user_id: input.user_id,
							allow_outdated: input.allow_outdated,
						},
						...where,
					});
					const row = switched.rows[0];
					assertOk(
						row,
						`merge of ${winnerId} into ${currentId}`,
						{
							NOT_FOUND: { missing: Array.isArray(row?.missing) ? row.missing.filter((m) => m !== null) : [] },
							LOCKED: { locked_by: row?.locked_by ?? null, locked_until: row?.locked_until ?? null },
							INVALID_STATE: {
								current_status: row?.current_status ?? null,
								winner_status: row?.winner_status ?? null,
								expected: { current: 'active', winner: 'proposal' },
							},
							EDGE_MISMATCH: { structure_edge_id: edgeId, edge_to: row?.edge_to ?? null, expected_to: currentId },
							NOT_A_PROPOSAL: { winner_proposal_id: winnerId, current_active_id: currentId },
							PROPOSAL_OUTDATED: { winner_proposal_id: winnerId, allow_outdated: false },
							REV_CONFLICT: {
								structure_edge_id: edgeId,
								expected_rev: input.expected_edge_rev,
								current_rev: row?.current_rev ?? null,
							},
						},
						where,
					);
					const changed = Array.isArray(row.changed_atoms) ? row.changed_atoms : [];
					if (typeof row.structure_edge_rev !== 'string' || changed.length !== 2) {
						// Never commit a half merge (an active winner without its edge): abort.
						throw ContractError.db(
							'merge did not switch the edge and both atoms; aborted',
							{ code: 'INCOMPLETE_MERGE' },
							where,
						);
					}
					const unlinked = await run<string>({
						query: MERGE_UNLINK_AQL,
						bindVars: { winner_id: winnerId },
						operation: 'remove',
						collection: 'proposal_links',
					});
					const rebased = Array.isArray(row.rebased_proposals) ? row.rebased_proposals : [];
					return succeeded({
						new_active_atom_id: winnerId,
						archived_atom_id: currentId,
						structure_edge_id: edgeId,
						structure_edge_rev: row.structure_edge_rev,
						rebased_proposals_count: rebased.length,
						rebased_proposals: rebased,
						revision_link_id: row.revision_link_id ?? null,
						removed_proposal_links: unlinked.rows,
					});
				}),
			{
				known: { expected_rev: input.expected_edge_rev },
				message: MERGE_CONFLICT_MESSAGE,
				reread: async () => {
					const revs = await readCurrentRevs(db, [edgeId, currentId, winnerId]);
					return {
						current_rev: revs[edgeId],
						current_revs: revs,
						conflict_on: revs[edgeId] === input.expected_edge_rev ? [] : [edgeId],
					};
				},
			},
		);
	},
};
