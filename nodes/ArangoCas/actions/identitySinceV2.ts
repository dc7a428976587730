/**
 * The acting user of the operations that took the Identity fields in node version 2 (Create Baseline,
 * Reject, Load Context, Save Result, Save Error; issue 25). A workflow saved at version 1 has no
 * Identity parameter: n8n hides the fields and the operation gets `user_id: null` (it acts as no one,
 * as before issue 25), so a saved workflow keeps running. From version 2 on `user_id` is the Identity
 * fields' user (the verified token's claim by default; 401/403 kind auth, see shared/node/identity.ts).
 * Operations that always had an identity (Lock, Unlock, Archive, Merge, Create Proposal) use
 * `identityFields` and `UserId` directly.
 */
import { z } from 'zod';
import type { FieldInit } from '../../shared/node/fields';
import { identityFields } from '../../shared/node/identity';
import { UserId } from './inputs';

/** The first node version whose operations of the header have the Identity fields. */
export const IDENTITY_SINCE_VERSION = 2;

/**
 * The input schema of such an operation: its own `fields`, then `user_id` (a UserId, or null on a
 * version-1 node). Issues are reported in that order (the shared `parseInput`, nodes/shared/contracts/input.ts: 422 on the first).
 */
export function withUserIdSinceV2<T extends z.ZodRawShape>(fields: T) {
	return z.object({ ...fields, user_id: UserId.nullable() });
}

/**
 * The Identity fields of such an operation (shown from IDENTITY_SINCE_VERSION on), filling `user_id`.
 * @param who what the user does, e.g. "Who rejects the proposal (stored in rejected_by)"
 */
export function identityFieldsSinceV2(who: string): FieldInit[] {
	return identityFields(who, 'user_id', { sinceVersion: IDENTITY_SINCE_VERSION });
}
