/**
 * Proposal → Reject (seed 000 §3.5): marks a proposal "rejected", compare-and-swap on `_rev`.
 *
 * Input: `proposal_id`, `expected_proposal_rev`, `user_id` (the Identity fields: the verified token's claim
 * by default; 401/403 kind auth, see shared/node/identity.ts — issue 25: stored as `rejected_by`).
 * Output data: `{ success: true, proposal_id, proposal_rev, rejected_by }`.
 * Errors: 404 NOT_FOUND; 409 INVALID_STATE when the atom is not a proposal; 409 REV_CONFLICT with
 * `current_rev` (after a lost race, 1200, read again, with `current_revs`: ../../transport/conflict.ts);
 * 422 invalid input. One AQL query.
 */
import { casUpdateAtom } from '../casUpdate';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection, keyIn, Rev } from '../inputs';
import { expectedRevField, fieldsOf } from '../../../shared/node/fields';
import { identityFieldsSinceV2, withUserIdSinceV2 } from '../identitySinceV2';
import { succeeded } from '../result';
import type { Operation } from '../types';

export const REJECT_PROPOSAL_AQL = `LET now = DATE_NOW()
LET proposal = DOCUMENT("atoms", @proposal_key)
LET outcome = proposal == null ? "NOT_FOUND"
  : proposal.status != "proposal" ? "INVALID_STATE"
  : proposal._rev != @expected_rev ? "REV_CONFLICT"
  : "OK"
LET updated = FIRST(
  FOR a IN (outcome == "OK" ? [proposal] : [])
    UPDATE a WITH { status: "rejected", rejected_at: now, rejected_by: @user_id } IN atoms OPTIONS { ignoreRevs: false }
    RETURN NEW
)
RETURN { outcome: outcome, status: proposal.status, current_rev: proposal._rev, proposal_rev: updated._rev }`;

export const RejectProposalInput = withUserIdSinceV2({
	proposal_id: keyIn('atoms'),
	expected_proposal_rev: Rev,
});

const ref = { resource: 'proposal', operation: 'reject' };

export const rejectProposal: Operation = {
	value: 'reject',
	name: 'Reject',
	action: 'Reject a proposal',
	description: 'Reject a proposal (§3.5, CAS on _rev)',
	fields: fieldsOf(ref, [
		{ displayName: 'Proposal ID', name: 'proposalId', required: true, description: 'Key of the proposal atom' },
		expectedRevField('Expected Proposal Revision', 'expectedProposalRev', 'expected_proposal_rev', 'proposal'),
		...identityFieldsSinceV2('Who rejects the proposal (stored in rejected_by)'),
	]),
	async execute(db, raw) {
		const input = parseInput(RejectProposalInput, raw, inCollection('atoms'));
		const row = await casUpdateAtom(db, {
			key: input.proposal_id,
			expectedRev: input.expected_proposal_rev,
			query: REJECT_PROPOSAL_AQL,
			bindVars: {
				proposal_key: input.proposal_id,
				expected_rev: input.expected_proposal_rev,
				user_id: input.user_id,
			},
			details: (found) => ({ INVALID_STATE: { status: found?.status ?? null, expected_status: 'proposal' } }),
		});
		return succeeded({
			proposal_id: `atoms/${input.proposal_id}`,
			proposal_rev: row.proposal_rev,
			rejected_by: input.user_id,
		});
	},
};
