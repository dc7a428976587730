/**
 * Baseline → Create (seed 000 §3.3): freezes the document "as is": a baselines node and one
 * baseline_items edge (type "snapshot_item", with the `order` of the structure edge that reached the
 * atom) per active atom reachable from the doc through structure_links at depth 1..10.
 *
 * Input: `doc_id` (docs/<key> or key), `version_tag`, `title`, `user_id` (the Identity fields: the verified
 * token's claim by default; 401/403 kind auth, see shared/node/identity.ts — issue 25: stored as the
 * baseline's `created_by`, so every baseline names who froze it; also each baseline_items edge's `created_by` and
 * each snapshotted atom's `baselined_by`, beside `baselined_at`. Null on a version-1 node, which has no Identity fields).
 * Output data (201): `{ baseline_id, tag, items_snapshotted, frozen_at (ms), items: [atom ids], created_by }`.
 * Errors: 404 NOT_FOUND (no such doc); 422 ILLEGAL_EDGES with `edges: [{ id, from, to }]` when the doc
 * has direct docs → atoms structure edges (v2.1 constraint: checked before anything is written);
 * 409 UNIQUE_VIOLATION when the doc already has a baseline with that tag; 422 invalid input.
 * One AQL query, declaring the traversal's vertex collections (`WITH docs, atoms`: a cluster refuses
 * an undeclared one, error 1521). The traversal uses `order: "bfs", uniqueVertices: "global"`, so an atom reachable by
 * two paths is snapshotted once (the default `uniqueVertices: "none"` would visit it twice), with the
 * order of the edge on its shortest path. Reads (docs, structure_links, the traversal) come before the
 * writes (atoms, baselines, then baseline_items), as AQL requires.
 * Serialised with Archive (issue 13, write skew): Archive checks baseline_items and writes the atom;
 * Baseline reads the atoms and writes baseline_items, so neither would see the other. Baseline therefore
 * CAS-touches every atom it snapshots (`baselined_at: now`, `ignoreRevs: false` on the `_rev` the
 * traversal read), and Archive CAS-updates the atom: two concurrent ones write the same atom, and the
 * later writer fails with 1200 → 409 REV_CONFLICT, nothing written. Cost (a deviation from §3.3, which
 * writes no atom): a baseline gives its atoms a new `_rev`, so an `expected_rev` read before it answers
 * 409 with the current `_rev`.
 * After a lost race (1200) the aborted query returns nothing, so BASELINE_CURRENT_REVS_AQL re-reads, in
 * one read-only query (the same traversal, `WITH docs, atoms`), the doc's reachable active atoms now,
 * and the 409 REV_CONFLICT carries `current_revs: { "atoms/<k>": _rev }` for them (best effort:
 * absent when that read fails, ../../transport/conflict.ts). An atom archived by the concurrent write is
 * no longer listed (Archive removes its structure edges). `current_rev` stays null: a baseline has no
 * single document whose `_rev` the caller could give.
 */
import type { Database } from 'arangojs';
import { assertOk, type OutcomeRow } from '../outcome';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection, keyIn, optionalText, requiredText } from '../inputs';
import { fieldsOf } from '../../../shared/node/fields';
import { identityFieldsSinceV2, withUserIdSinceV2 } from '../identitySinceV2';
import { onWriteConflict, revPairs } from '../../transport/conflict';
import { runQuery } from '../../transport/query';
import type { Operation } from '../types';

/** The doc's active atoms at depth 1..10 (`v`, reached over edge `e`), each once, by its shortest path. */
const REACHABLE_ACTIVE_ATOMS = `FOR v, e IN 1..10 OUTBOUND doc_id structure_links OPTIONS { order: "bfs", uniqueVertices: "global" }
    FILTER IS_SAME_COLLECTION("atoms", v)
    FILTER v.status == "active"`;

export const CREATE_BASELINE_AQL = `WITH docs, atoms
LET now = DATE_NOW()
LET doc_id = CONCAT("docs/", @doc_key)
LET doc = DOCUMENT("docs", @doc_key)
LET illegal = (
  FOR e IN structure_links
    FILTER e._from == doc_id
    FILTER LIKE(e._to, "atoms/%")
    RETURN { id: e._id, from: e._from, to: e._to }
)
LET reachable = (
  ${REACHABLE_ACTIVE_ATOMS}
    RETURN { id: v._id, key: v._key, rev: v._rev, order: e.order }
)
LET outcome = doc == null ? "NOT_FOUND"
  : LENGTH(illegal) > 0 ? "ILLEGAL_EDGES"
  : "OK"
LET touched = (
  FOR item IN (outcome == "OK" ? reachable : [])
    UPDATE { _key: item.key, _rev: item.rev } WITH { baselined_at: now, baselined_by: @user_id } IN atoms OPTIONS { ignoreRevs: false }
    RETURN NEW._id
)
LET baseline = FIRST(
  FOR x IN (outcome == "OK" ? [1] : [])
    INSERT { doc_id: doc_id, tag: @version_tag, title: @title, frozen_at: now, items_count: LENGTH(reachable), created_by: @user_id } INTO baselines
    RETURN NEW
)
LET snapshotted = (
  FOR item IN (baseline == null ? [] : reachable)
    INSERT { _from: baseline._id, _to: item.id, order: item.order, type: "snapshot_item", snapshotted_at: now, created_by: @user_id } INTO baseline_items
    RETURN NEW._to
)
RETURN {
  outcome: outcome,
  illegal: illegal,
  baseline_id: baseline._id,
  frozen_at: baseline.frozen_at,
  items: snapshotted
}`;

/** After a lost race only (read-only): `[id, _rev]` of each atom CREATE_BASELINE_AQL would snapshot now. */
export const BASELINE_CURRENT_REVS_AQL = `WITH docs, atoms
LET doc_id = CONCAT("docs/", @doc_key)
${REACHABLE_ACTIVE_ATOMS}
    RETURN [v._id, v._rev]`;

export const CreateBaselineInput = withUserIdSinceV2({
	doc_id: keyIn('docs'),
	version_tag: requiredText(128),
	title: optionalText(512),
});

/**
 * The `_rev` of each active atom reachable from `docs/<docKey>` now (BASELINE_CURRENT_REVS_AQL, one query).
 * @returns atom id → `_rev`
 * @throws ContractError when the query fails
 */
async function readReachableRevs(db: Database, docKey: string): Promise<Record<string, string>> {
	const { rows } = await runQuery<unknown>(db, {
		query: BASELINE_CURRENT_REVS_AQL,
		bindVars: { doc_key: docKey },
		operation: 'select',
		collection: 'atoms',
	});
	return Object.fromEntries(revPairs(rows));
}

const ref = { resource: 'baseline', operation: 'create' };

export const createBaseline: Operation = {
	value: 'create',
	name: 'Create',
	action: 'Create a baseline',
	description: 'Snapshot the active atoms of a document (§3.3)',
	fields: fieldsOf(ref, [
		{ displayName: 'Doc ID', name: 'docId', required: true, description: 'The document: docs/&lt;key&gt; or its key' },
		{
			displayName: 'Version Tag',
			name: 'versionTag',
			required: true,
			description: 'Tag of the baseline (unique per document), e.g. v1.0',
		},
		{ displayName: 'Title', name: 'title', description: 'Title of the baseline, e.g. MVP Release' },
		...identityFieldsSinceV2("Who creates the baseline (stored as the baseline's created_by)"),
	]),
	async execute(db, raw) {
		const input = parseInput(CreateBaselineInput, raw, inCollection('baselines'));
		const where = { operation: 'insert', collection: 'baselines' };
		const { rows } = await onWriteConflict(
			() =>
				runQuery<OutcomeRow>(db, {
					query: CREATE_BASELINE_AQL,
					bindVars: {
						doc_key: input.doc_id,
						version_tag: input.version_tag,
						title: input.title,
						user_id: input.user_id,
					},
					...where,
				}),
			{ reread: async () => ({ current_revs: await readReachableRevs(db, input.doc_id) }) },
		);
		const row = rows[0];
		assertOk(
			row,
			`docs/${input.doc_id}`,
			{
				NOT_FOUND: { missing: [`docs/${input.doc_id}`] },
				ILLEGAL_EDGES: { edges: row?.illegal ?? [] },
			},
			where,
		);
		const items = Array.isArray(row.items) ? row.items : [];
		return {
			statusCode: 201,
			data: {
				baseline_id: row.baseline_id,
				tag: input.version_tag,
				items_snapshotted: items.length,
				frozen_at: row.frozen_at,
				items,
				created_by: input.user_id,
			},
		};
	},
};
