/**
 * Proposal → Create (seed 000 §3.4, manual proposal): a new atom with status "proposal" and its
 * `alternative` proposal_links edge to the active atom; the document structure does not change.
 *
 * Input: `target_active_id`, `new_content`, `comment`, `author` (by default the verified token's `sub`,
 * see nodes/shared/node/identity.ts; a body `author` naming someone else is a 403), stored as the proposal's
 * `author`, the target's `last_proposal_by` and the proposal_links edge's `created_by`.
 * Output data (201): `{ proposal_id, proposal_rev, status: "proposal", proposal_link_id }`.
 * Errors: 404 NOT_FOUND when the target does not exist; 409 INVALID_STATE when it is not active;
 * 409 REV_CONFLICT when a Merge or Archive of the target runs at the same time (1200); 422 invalid input.
 * That 409 carries `current_rev`: the target atom's `_rev` read once more after the conflict (one
 * read-only query after the abort, ../../transport/conflict.ts; null when it is gone or that read fails),
 * and `current_revs: { "atoms/<target>": rev }`. There is no `expected_rev`: the caller gives no `_rev`
 * of the target (the touch compares the `_rev` it read itself).
 * One stream transaction (begin, 2 queries, commit; any failure aborts, so atom and edge are created
 * together or not at all):
 *  1. PROPOSAL_TOUCH_AQL checks the target (exists, active) and CAS-touches it (`last_proposal_at`,
 *     `last_proposal_by`: the author);
 *  2. CREATE_PROPOSAL_AQL inserts the draft atom and its link (atoms is written again: a second query).
 * Why the touch (issue 13): Merge reads the target's proposal links to rebase them and CAS-updates the
 * target; a proposal created while it runs would be missed by the rebase and stay linked to an archived
 * atom. Both now write the target atom, so one of two concurrent ones fails with 1200 → 409 and, after a
 * merge or archive, the target is no longer active → 409 INVALID_STATE. Cost (a deviation from §3.4,
 * which writes only the draft and its link): the target gets a new `_rev`.
 */
import { z } from 'zod';
import { ContractError } from '../../../shared/errors';
import { assertOk, type OutcomeRow } from '../outcome';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection, keyIn, optionalText, UserId } from '../inputs';
import { fieldsOf } from '../../../shared/node/fields';
import { identityFields } from '../../../shared/node/identity';
import { withCurrentRev } from '../../transport/conflict';
import { inStreamTransaction } from '../../transport/query';
import type { Operation } from '../types';

/** Step 1: check the target and CAS-touch it (`last_proposal_at`), so a concurrent Merge/Archive conflicts. */
export const PROPOSAL_TOUCH_AQL = `LET now = DATE_NOW()
LET target = DOCUMENT("atoms", @target_key)
LET outcome = target == null ? "NOT_FOUND"
  : target.status != "active" ? "INVALID_STATE"
  : "OK"
LET touched = FIRST(
  FOR a IN (outcome == "OK" ? [target] : [])
    UPDATE a WITH { last_proposal_at: now, last_proposal_by: @author } IN atoms OPTIONS { ignoreRevs: false }
    RETURN NEW
)
RETURN { outcome: outcome, status: target.status, target_rev: touched._rev }`;

/** Step 2: the draft atom and its `alternative` link (only after step 1 passed, in the same transaction). */
export const CREATE_PROPOSAL_AQL = `LET now = DATE_NOW()
LET draft = FIRST(
  FOR x IN [1]
    INSERT { content: @new_content, status: "proposal", author: @author, created_at: now } INTO atoms
    RETURN NEW
)
LET link = FIRST(
  FOR d IN [draft]
    INSERT {
      _from: d._id,
      _to: CONCAT("atoms/", @target_key),
      type: "alternative",
      comment: @comment,
      outdated: false,
      rebased_from: null,
      rebased_at: null,
      created_at: now,
      created_by: @author
    } INTO proposal_links
    RETURN NEW
)
RETURN { proposal_id: draft._id, proposal_rev: draft._rev, proposal_link_id: link._id }`;

/** Collections the create transaction writes. */
export const CREATE_PROPOSAL_WRITE_COLLECTIONS = ['atoms', 'proposal_links'];

export const CreateProposalInput = z.object({
	target_active_id: keyIn('atoms'),
	new_content: z
		.string({ required_error: 'is required' })
		.min(1, 'is required')
		.max(1_000_000, 'must be ≤ 1,000,000 characters'),
	comment: optionalText(2000),
	author: UserId,
});

const ref = { resource: 'proposal', operation: 'create' };

export const createProposal: Operation = {
	value: 'create',
	name: 'Create',
	action: 'Create a proposal',
	description: 'Create a manual proposal (alternative text) for an active atom (§3.4)',
	fields: fieldsOf(ref, [
		{
			displayName: 'Target Active Atom ID',
			name: 'targetActiveId',
			required: true,
			description: 'Key of the active atom the proposal changes',
		},
		{
			displayName: 'New Content',
			name: 'newContent',
			required: true,
			typeOptions: { rows: 4 },
			description: 'The proposed text',
		},
		{ displayName: 'Comment', name: 'comment', description: 'Why (stored on the proposal_links edge)' },
		...identityFields("Who proposes (stored as the proposal's author)", 'author'),
	]),
	async execute(db, raw) {
		const input = parseInput(CreateProposalInput, raw, inCollection('atoms'));
		const where = { operation: 'insert', collection: 'atoms' };
		// A lost race (1200) aborts the transaction; the target's _rev is then read again for current_rev.
		return withCurrentRev(db, { ids: [`atoms/${input.target_active_id}`] }, () =>
			inStreamTransaction(db, { write: CREATE_PROPOSAL_WRITE_COLLECTIONS }, async (run) => {
				const checked = await run<OutcomeRow>({
					query: PROPOSAL_TOUCH_AQL,
					bindVars: { target_key: input.target_active_id, author: input.author },
					operation: 'update',
					collection: 'atoms',
				});
				const row = checked.rows[0];
				assertOk(
					row,
					`atoms/${input.target_active_id}`,
					{
						NOT_FOUND: { missing: [`atoms/${input.target_active_id}`] },
						INVALID_STATE: { status: row?.status ?? null, expected_status: 'active' },
					},
					where,
				);
				const created = await run<Record<string, unknown>>({
					query: CREATE_PROPOSAL_AQL,
					bindVars: {
						target_key: input.target_active_id,
						new_content: input.new_content,
						comment: input.comment,
						author: input.author,
					},
					...where,
				});
				const made = created.rows[0];
				if (!made || typeof made.proposal_id !== 'string' || typeof made.proposal_link_id !== 'string') {
					throw ContractError.db(
						'the proposal and its link were not both written; aborted',
						{ code: 'INCOMPLETE_PROPOSAL' },
						where,
					);
				}
				return {
					statusCode: 201 as const,
					data: {
						proposal_id: made.proposal_id,
						proposal_rev: made.proposal_rev,
						status: 'proposal',
						proposal_link_id: made.proposal_link_id,
					},
				};
			}),
		);
	},
};
