/**
 * Atom → Unlock Expired (seed 000 §3.8): the every-minute sweep that clears locks whose lease ended.
 *
 * Input: `batch_size` (default 500, at most 1000 atoms per run).
 * Output data: `{ success: true, unlocked: [{ id, atom_rev }], unlocked_count, skipped_conflicts }`.
 * CAS per document: each UPDATE compares the `_rev` read by the same query (`ignoreRevs: false`), and
 * `ignoreErrors: true` skips a document whose lock was renewed meanwhile instead of failing the sweep;
 * those are counted in `skipped_conflicts` (`writesIgnored`). One AQL query; uses the sparse
 * persistent index on atoms.locked_until (two ranges: numbers below now, and every string).
 * `locked_until` in ms (ours) or as the seed's ISO string (DATE_ADD) is compared in ms (../lockTime.ts);
 * an unparsable value is left alone. A cleared lock records `unlocked_by: "system:expired"` (EXPIRED_ACTOR;
 * issue 25: every write names its actor, here no user).
 */
import { z } from 'zod';
import { parseInput } from '../../../shared/contracts/input';
import { inCollection } from '../inputs';
import { fieldsOf } from '../../../shared/node/fields';
import { runQuery } from '../../transport/query';
import { lockedUntilMs } from '../lockTime';
import { succeeded } from '../result';
import type { Operation } from '../types';

export const UNLOCK_EXPIRED_AQL = `LET now = DATE_NOW()
FOR atom IN atoms
  FILTER atom.locked_until != null AND (atom.locked_until < now OR atom.locked_until >= "")
  LET until_ms = ${lockedUntilMs('atom')}
  FILTER until_ms != null AND until_ms < now
  LIMIT @batch_size
  UPDATE atom WITH { locked_by: null, locked_until: null, unlocked_by: @unlocked_by } IN atoms OPTIONS { ignoreRevs: false, ignoreErrors: true, keepNull: true }
  RETURN { id: NEW._id, atom_rev: NEW._rev }`;

/** The `unlocked_by` of a lock cleared because its lease ended (no user released it). */
export const EXPIRED_ACTOR = 'system:expired';

export const UnlockExpiredInput = z.object({
	batch_size: z.coerce
		.number()
		.int('must be an integer')
		.min(1, 'must be ≥ 1')
		.max(1000, 'must be ≤ 1000')
		.default(500),
});

const ref = { resource: 'atom', operation: 'unlockExpired' };

export const unlockExpired: Operation = {
	value: 'unlockExpired',
	name: 'Unlock Expired',
	action: 'Unlock expired atom locks',
	description: 'Clear every lock whose lease has ended (§3.8, run by a cron every minute, CAS per atom)',
	fields: fieldsOf(ref, [
		{
			displayName: 'Batch Size',
			name: 'batchSize',
			type: 'number',
			default: 500,
			description: 'Most atoms unlocked per run (1–1000); the next run takes the rest',
		},
	]),
	async execute(db, raw) {
		const input = parseInput(UnlockExpiredInput, raw, inCollection('atoms'));
		const result = await runQuery<{ id: string; atom_rev: string }>(db, {
			query: UNLOCK_EXPIRED_AQL,
			bindVars: { batch_size: input.batch_size, unlocked_by: EXPIRED_ACTOR },
			operation: 'update',
			collection: 'atoms',
		});
		// A document skipped by ignoreErrors yields no NEW: keep only real rows.
		const unlocked = result.rows.filter((r) => r && typeof r.id === 'string');
		return succeeded({ unlocked, unlocked_count: unlocked.length, skipped_conflicts: result.writesIgnored });
	},
};
