/**
 * What Save Result and Save Error share (seed 000 §3.1 steps 5a/5b; each keeps its own query, inputs,
 * checks and output in its operation file): the field naming the analysed atom, and the one AQL query
 * that inserts the analysis' artifacts into `artifacts` with their edges to the target atom and the
 * prompt, every one `created_by` the user.
 */
import type { Database } from 'arangojs';
import type { FieldInit } from '../../../shared/node/fields';
import { runQuery } from '../../transport/query';
import type { OutcomeRow } from '../outcome';

/** The `target_atom_id` field of Save Result and Save Error (a key, or atoms/<key>). */
export const ANALYSED_ATOM_FIELD: FieldInit = {
	displayName: 'Target Atom ID',
	name: 'targetAtomId',
	required: true,
	description: 'Key of the analysed atom',
};

/** error_context of a failed analysis write. */
export const ARTIFACTS_INSERT = { operation: 'insert', collection: 'artifacts' };

/** The parsed inputs every analysis write binds. */
export interface AnalysisTarget {
	/** Key of the analysed atom (`@target_key`). */
	target_atom_id: string;
	/** Key of the prompt used (`@prompt_key`), null when unknown (Save Error). */
	prompt_id: string | null;
	/** The user stored as `created_by` (`@user_id`), null on a version-1 node (../identitySinceV2.ts). */
	user_id: string | null;
}

/**
 * Runs an analysis write: `query` with `@target_key`, `@prompt_key`, `@user_id` from `target` and the
 * operation's own `bindVars`, in one round trip (ARTIFACTS_INSERT).
 * @returns the query's outcome row, undefined when it returned none
 * @throws ContractError when ArangoDB fails (../../transport/errors.ts)
 */
export async function insertArtifacts(
	db: Database,
	query: string,
	target: AnalysisTarget,
	bindVars: Record<string, unknown>,
): Promise<OutcomeRow | undefined> {
	const { rows } = await runQuery<OutcomeRow>(db, {
		query,
		bindVars: { target_key: target.target_atom_id, prompt_key: target.prompt_id, user_id: target.user_id, ...bindVars },
		...ARTIFACTS_INSERT,
	});
	return rows[0];
}
