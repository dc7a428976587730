/**
 * The precondition outcomes an ArangoCAS query reports in its single result row (`outcome`), and the
 * error each one becomes (seed 000 "Section 2" codes, in `error.details.code`):
 *
 * | outcome               | status | kind       | details                                   |
 * |-----------------------|--------|------------|-------------------------------------------|
 * | NOT_FOUND             | 404    | not_found  | missing: the ids that do not exist        |
 * | LOCKED                | 423    | locked     | locked_by, locked_until (ms since epoch)  |
 * | REV_CONFLICT          | 409    | conflict   | expected_rev, current_rev                 |
 * | PROTECTED_BY_BASELINE | 409    | conflict   | baselines: [{ id, tag }]                  |
 * | INVALID_STATE         | 409    | conflict   | status found vs. expected                 |
 * | EDGE_MISMATCH         | 409    | conflict   | the structure edge no longer points there |
 * | NOT_A_PROPOSAL        | 409    | conflict   | winner is not a proposal of current       |
 * | PROPOSAL_OUTDATED     | 409    | conflict   | winner was rebased; allow_outdated=false  |
 * | ILLEGAL_EDGES         | 422    | validation | edges: the forbidden docs → atoms edges   |
 *
 * A lost race (ArangoDB errorNum 1200, not an outcome row) is also a 409 REV_CONFLICT, with
 * `arango_error_num: 1200` and what one read after the conflict found (../transport/conflict.ts):
 * `current_rev` (the document the caller gave an `expected_rev` for, or Create Proposal's target; null
 * for Create Baseline) and `current_revs` (id → `_rev` of every document read again); Merge adds
 * `conflict_on` (see proposal/merge.operation.ts).
 */
import { ContractError, type ErrorContextInit } from '../../shared/errors';

export const OUTCOMES = {
	NOT_FOUND: { status: 404, kind: 'not_found', message: 'not found' },
	LOCKED: { status: 423, kind: 'locked', message: 'locked by another user' },
	REV_CONFLICT: { status: 409, kind: 'conflict', message: '_rev conflict: the document changed since it was read' },
	PROTECTED_BY_BASELINE: { status: 409, kind: 'conflict', message: 'protected by a baseline' },
	INVALID_STATE: { status: 409, kind: 'conflict', message: 'not in a status that allows this operation' },
	EDGE_MISMATCH: { status: 409, kind: 'conflict', message: 'the structure edge does not point to the current atom' },
	NOT_A_PROPOSAL: { status: 409, kind: 'conflict', message: 'the winner is not a proposal of the current atom' },
	PROPOSAL_OUTDATED: {
		status: 409,
		kind: 'conflict',
		message: 'the proposal is outdated (set allow_outdated to merge it)',
	},
	ILLEGAL_EDGES: { status: 422, kind: 'validation', message: 'docs → atoms structure edges are forbidden' },
} as const;

export type OutcomeCode = keyof typeof OUTCOMES | 'OK';

/** The result row every ArangoCAS query returns: its outcome and the facts behind it. */
export interface OutcomeRow {
	outcome: OutcomeCode;
	[fact: string]: unknown;
}

/** `error.details` (besides `code`) per outcome, as `assertOk` takes them. */
export type OutcomeDetails = Partial<Record<OutcomeCode, Record<string, unknown>>>;

/**
 * The LOCKED details of a row that reports the lock it found (`locked_by`, `locked_until` in ms since
 * epoch, ./lockTime.ts), each null when the row (or the fact) is missing.
 */
export function lockDetails(row: OutcomeRow | undefined): { locked_by: unknown; locked_until: unknown } {
	return { locked_by: row?.locked_by ?? null, locked_until: row?.locked_until ?? null };
}

/**
 * The NOT_FOUND `missing` list of a row that reports what exists as flags (`atom_exists: false`): the
 * id given for each flag that is false, in the order given (`{ atom_exists: "atoms/a1", prompt_exists:
 * "prompts/p1" }`). A flag that is true or absent (no row) adds nothing.
 */
export function missingFrom(row: OutcomeRow | undefined, idsByFlag: Record<string, string>): string[] {
	return Object.entries(idsByFlag)
		.filter(([flag]) => row?.[flag] === false)
		.map(([, id]) => id);
}

/**
 * Throws the ContractError of a failed outcome; returns when it is OK.
 * @param subject what was checked, for the message ("atoms/a1")
 * @param details facts for `error.details` (besides `code`), per outcome
 * @throws ContractError 404 / 409 / 422 / 423 as in the table above
 */
export function assertOk(
	row: OutcomeRow | undefined,
	subject: string,
	details: OutcomeDetails,
	where: ErrorContextInit,
): asserts row is OutcomeRow {
	if (!row) throw ContractError.db(`ArangoDB returned no result for ${subject}`, { code: 'NO_RESULT' }, where);
	if (row.outcome === 'OK') return;
	const known = OUTCOMES[row.outcome];
	if (!known) {
		throw ContractError.db(
			`unexpected outcome ${String(row.outcome)} for ${subject}`,
			{ code: 'UNEXPECTED_OUTCOME' },
			where,
		);
	}
	throw new ContractError(
		`${subject}: ${known.message}`,
		known.status,
		known.kind,
		false,
		{ code: row.outcome, ...(details[row.outcome] ?? {}) },
		where,
	);
}
