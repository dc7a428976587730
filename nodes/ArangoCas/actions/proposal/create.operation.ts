/**
 * Proposal → Create (seed 000 §3.4, manual proposal): a new atom with status "proposal" and its
 * `alternative` proposal_links edge to the active atom; the document structure does not change.
 *
 * Input: `target_active_id`, `new_content`, `comment`, `author` (by default the verified token's `sub`,
 * see nodes/shared/node/identity.ts; a body `author` naming someone else is a 403).
 * Output data (201): `{ proposal_id, proposal_rev, status: "proposal", proposal_link_id }`.
 * Errors: 404 NOT_FOUND when the target does not exist; 409 INVALID_STATE when it is not active;
 * 422 invalid input. One AQL query (atom and edge are created together or not at all).
 */
import { z } from 'zod';
import { assertOk, type OutcomeRow } from '../outcome';
import { keyIn, parseInput, UserId } from '../inputs';
import { fieldsOf } from '../../../shared/node/fields';
import { identityFields } from '../../../shared/node/identity';
import { runQuery } from '../../transport/query';
import type { Operation } from '../types';

export const CREATE_PROPOSAL_AQL = `LET now = DATE_NOW()
LET target = DOCUMENT("atoms", @target_key)
LET outcome = target == null ? "NOT_FOUND"
  : target.status != "active" ? "INVALID_STATE"
  : "OK"
LET draft = FIRST(
  FOR x IN (outcome == "OK" ? [1] : [])
    INSERT { content: @new_content, status: "proposal", author: @author, created_at: now } INTO atoms
    RETURN NEW
)
LET link = FIRST(
  FOR d IN (draft == null ? [] : [draft])
    INSERT {
      _from: d._id,
      _to: target._id,
      type: "alternative",
      comment: @comment,
      outdated: false,
      rebased_from: null,
      rebased_at: null,
      created_at: now
    } INTO proposal_links
    RETURN NEW
)
RETURN {
  outcome: outcome,
  status: target.status,
  proposal_id: draft._id,
  proposal_rev: draft._rev,
  proposal_link_id: link._id
}`;

export const CreateProposalInput = z.object({
	target_active_id: keyIn('atoms'),
	new_content: z.string({ required_error: 'is required' }).min(1, 'is required').max(1_000_000, 'must be ≤ 1,000,000 characters'),
	comment: z.string().max(2000, 'must be ≤ 2000 characters').nullish().transform((v) => v ?? null),
	author: UserId,
});

const ref = { resource: 'proposal', operation: 'create' };

export const createProposal: Operation = {
	value: 'create',
	name: 'Create',
	action: 'Create a proposal',
	description: 'Create a manual proposal (alternative text) for an active atom (§3.4)',
	fields: fieldsOf(ref, [
		{ displayName: 'Target Active Atom ID', name: 'targetActiveId', required: true, description: 'Key of the active atom the proposal changes' },
		{ displayName: 'New Content', name: 'newContent', required: true, typeOptions: { rows: 4 }, description: 'The proposed text' },
		{ displayName: 'Comment', name: 'comment', description: 'Why (stored on the proposal_links edge)' },
		...identityFields('Who proposes (stored as the proposal\'s author)', 'author'),
	]),
	async execute(db, raw) {
		const input = parseInput(CreateProposalInput, raw, 'atoms');
		const where = { operation: 'insert', collection: 'atoms' };
		const { rows } = await runQuery<OutcomeRow>(db, {
			query: CREATE_PROPOSAL_AQL,
			bindVars: { target_key: input.target_active_id, new_content: input.new_content, comment: input.comment, author: input.author },
			...where,
		});
		const row = rows[0];
		assertOk(row, `atoms/${input.target_active_id}`, {
			NOT_FOUND: { missing: [`atoms/${input.target_active_id}`] },
			INVALID_STATE: { status: row?.status ?? null, expected_status: 'active' },
		}, where);
		return {
			statusCode: 201,
			data: { proposal_id: row.proposal_id, proposal_rev: row.proposal_rev, status: 'proposal', proposal_link_id: row.proposal_link_id },
		};
	},
};
