/**
 * The `ctx` contract (seed 003 §0.4, seed 002 §1.2 and §5.1).
 *
 * `Ctx` is what travels between workflows: every field optional, unknown fields kept, so a partial
 * ctx (WF10 before the bot is known, an error before a job exists) is still valid. `AclCtx` is the
 * complete, normalised ctx that ContextLoader (WF00c) produces.
 */
import { z } from 'zod';

/** Contract versions carried in ctx (seed 002 §1.6): `ctx.contracts.errorpipe = 1`. */
export const ContractVersions = z.object({ errorpipe: z.number().int().positive() }).passthrough();

export const ERRORPIPE_CONTRACT_VERSION = 1;

/** ctx as it travels: partial, passthrough. `job_id` is `ops.jobs.id`, never the correlation id. */
export const Ctx = z
	.object({
		correlation_id: z.string().uuid().optional(),
		trace_id: z.string().nullable().optional(),
		tenant_id: z.string().uuid().nullable().optional(),
		job_id: z.number().int().nullable().optional(),
		/** ops.jobs.claim_token of the attempt (Claim Jobs): WF99 touches the job only while this attempt is open. */
		job_claim_token: z.string().uuid().nullable().optional(),
		workflow: z.string().nullable().optional(),
		node: z.string().nullable().optional(),
		chat_id: z.union([z.number(), z.string()]).nullable().optional(),
		message_id: z.number().nullable().optional(),
		contracts: ContractVersions.optional(),
	})
	.passthrough();
export type Ctx = z.infer<typeof Ctx>;

/** The full ACL ctx of seed 003 §0.4, as WF00c returns it. */
export const AclCtx = z
	.object({
		tenant_id: z.string().uuid(),
		tg_user_id: z.union([z.number(), z.string()]),
		chat_id: z.union([z.number(), z.string()]).nullable(),
		channel: z.enum(['group', 'dm']),
		visibility: z.enum(['group', 'dm']),
		dm_owner_user_id: z.union([z.number(), z.string()]).nullable(),
		role: z.enum(['admin', 'user', 'blocked']),
		is_allowed: z.boolean(),
		trace_id: z.string().nullable(),
		correlation_id: z.string().uuid(),
		contracts: ContractVersions,
	})
	.passthrough();
export type AclCtx = z.infer<typeof AclCtx>;
