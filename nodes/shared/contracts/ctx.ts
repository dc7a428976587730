/**
 * The `ctx` contract (seed 003 §0.4, seed 002 §1.2 and §5.1).
 *
 * `Ctx` is what travels between workflows: every field optional, unknown fields kept, so a partial
 * ctx (WF10 before the bot is known, an error before a job exists) is still valid. `AclCtx` is the
 * complete, normalised ctx that ContextLoader (WF00c) produces.
 */
import { z } from 'zod';
import { parseExactId, type ExactId } from './ids';

/** Contract versions carried in ctx (seed 002 §1.6): `ctx.contracts.errorpipe = 1`. */
export const ContractVersions = z.object({ errorpipe: z.number().int().positive() }).passthrough();

export const ERRORPIPE_CONTRACT_VERSION = 1;

/**
 * A Telegram id as the ctx carries it (seed 003 §0.1: an int8): a JS number when it is a safe integer
 * (|n| ≤ 2^53 − 1, every id the Bot API sends: message_id fits in a signed 32-bit integer), else the
 * canonical decimal string (no sign but "-", no leading zeros) of an int8 beyond it, as Telegram Ingest
 * keeps such ids exactly (migration 015). One value, one form: 42 is never "42", and 2^53 is never a
 * number (it was rounded). It is what `ctxIdOf` returns, and `parseExactId` (./ids) with its value unchanged.
 */
export const CtxId = z.union([z.number(), z.string()]).refine(
	(value) => {
		const parsed = parseExactId(value);
		return parsed.ok && Object.is(parsed.value, value); // Object.is: -0 is not 0's form
	},
	{ message: 'must be a safe integer, or beyond 2^53 - 1 an int8 as its canonical decimal string' },
);
export type CtxId = z.infer<typeof CtxId>;

/**
 * The ctx form (`CtxId`) of an int8 in decimal text, e.g. the update keys Telegram Ingest reads from the
 * raw body: the number when it is a safe integer, else the text itself. Cheap (no parse beyond `Number`):
 * it runs once per id on Telegram Ingest's benchmarked path.
 * @param text an int8 as canonical decimal text (BigInt's `toString`, as body.ts's `ExactKeys` holds it), or null
 * @returns null for null, else a `CtxId`; never throws
 */
export function ctxIdOf(text: string | null): ExactId | null {
	if (text === null) return null;
	const value = Number(text);
	return Number.isSafeInteger(value) ? value : text;
}

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
		/** The update's message (Telegram Ingest, Knowledge Bot Process): a `CtxId`. */
		message_id: CtxId.nullable().optional(),
		contracts: ContractVersions.optional(),
	})
	.passthrough();
export type Ctx = z.infer<typeof Ctx>;

/**
 * What a node builds an item's ctx from: any Ctx fields (a travelling ctx spread first keeps its keys
 * and their order), the correlation id required.
 */
export type CtxInit = Ctx & { correlation_id: string };

/** The ctx `newCtx` returns: a Ctx whose correlation id and contract versions are always set. */
export type NewCtx = Ctx & { correlation_id: string; contracts: ContractVersions };
export type ContractVersions = z.infer<typeof ContractVersions>;

/**
 * The one builder of the seed's travelling ctx (seed 003 §0.4): `init`'s fields in `init`'s order,
 * then `contracts: { errorpipe: ERRORPIPE_CONTRACT_VERSION }` (a `contracts` the init carried is
 * replaced in its place). A new object; `init` is not changed.
 *
 * No zod parse here: Telegram Ingest builds one per update on its benchmarked path. The `Ctx` schema
 * holds for every output by its type, and test/unit/ctx.test.ts parses the output of every field
 * combination the callers use (router, Telegram Ingest, Context Loader).
 * @param init the item's fields, e.g. `{ ...incoming, correlation_id, workflow, node }`
 * @returns the item's ctx, ready for `state.ctx` (never throws)
 */
export function newCtx(init: CtxInit): NewCtx {
	const contracts = { errorpipe: ERRORPIPE_CONTRACT_VERSION };
	// Means `{ ...init, contracts }`, but V8 (Node 20) gives such an object slow properties: ~1–10 µs per ctx
	// with the fields Telegram Ingest adds after, against ~0.2 µs for this copy (measured). Object.assign
	// differs from a spread only for an own `__proto__` key (it would set the prototype): that init is spread.
	if (Object.hasOwn(init, '__proto__')) return { ...init, contracts };
	const ctx = Object.assign({}, init) as NewCtx;
	ctx.contracts = contracts;
	return ctx;
}

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
