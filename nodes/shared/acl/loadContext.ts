/**
 * Context Loader — WF00c of seed 003: validates `req`, applies the ACL of §0.2 and returns the normalised
 * `ctx` of §0.4 plus `chat_policy`, in one round trip to PostgreSQL.
 *
 * Input `req`: `{ tenant_id (uuid), tg_user_id (bigint), chat_id (bigint|null), channel ("group"|"dm"),
 * trace_id (string|null), correlation_id (uuid|null) }`. Ids are exact int8 (shared/contracts/ids.ts): a JSON
 * number only up to 2^53 − 1 (beyond, it was already rounded: 422 asking for a decimal string), a decimal
 * string or a bigint up to ±2^63; they reach SQL as strings (`::bigint`), and come back in ctx as numbers
 * when safe, else as their decimal strings.
 * Output: `{ ctx }` with `tenant_id, tg_user_id, chat_id, channel, visibility, dm_owner_user_id, role,
 * is_allowed: true, trace_id, correlation_id` (kept, or generated once), `contracts.errorpipe = 1` and
 * `chat_policy` (defaults when no row).
 * ACL: the user must be in core.tenant_users of an enabled tenant and not blocked (else 403); a group chat
 * must be registered and enabled for the tenant (else 404) and the user a current member of it
 * (tg.chat_memberships_current.is_member: Telegram's own flag, so a `restricted` user who left is not a
 * member; tenant admins excepted) (else 403 NOT_A_MEMBER); `dm` must name the user's own private chat —
 * Telegram's private chat id is the user's id, so `chat_id` is null or equal to `tg_user_id` (else 403
 * DM_NOT_OWN_CHAT, checked before any read) — and makes the user the owner (`dm_owner_user_id`): dm data is
 * visible to its owner and to admins only.
 * Errors: 422 validation (field named), 403 auth (NOT_ALLOWED, BLOCKED, NOT_A_MEMBER, DM_NOT_OWN_CHAT),
 * 404 not_found (CHAT_NOT_REGISTERED), 503 db retryable, 500 db.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { AclCtx, ERRORPIPE_CONTRACT_VERSION, newCtx } from '../contracts/ctx';
import { Int8Id, isUuid, sameId, sqlId } from '../contracts/ids';
import { parseRequest, safeJson, TenantId } from '../contracts/request';
import { newCorrelationId } from '../envelopeBuilders';
import { ContractError, fromPgError } from '../errors';
import type { ItemState } from '../node/runItems';
import { LOAD_CONTEXT } from '../statements/core';
import { DEFAULT_CHAT_POLICY } from './chatPolicy';

export const ContextRequest = z
	.object({
		tenant_id: TenantId,
		tg_user_id: Int8Id,
		chat_id: Int8Id.nullish().transform((v) => v ?? null),
		channel: z.enum(['group', 'dm'], { errorMap: () => ({ message: 'must be "group" or "dm"' }) }),
		trace_id: z
			.string()
			.nullish()
			.transform((v) => (v ? v : null)),
		correlation_id: z
			.string()
			.uuid('must be a UUID')
			.nullish()
			.transform((v) => v ?? null),
	})
	.superRefine((req, refinement) => {
		if (req.channel === 'group' && req.chat_id === null)
			refinement.addIssue({ code: z.ZodIssueCode.custom, path: ['chat_id'], message: 'is required for a group' });
	});

const WHERE = (table: string) => ({ operation: 'select', table });

/** Loads the ctx of one request. `state.ctx` carries what is known, so a failure keeps its context. */
export async function loadContext(pool: Pool, input: unknown, state: ItemState): Promise<Record<string, unknown>> {
	const raw = typeof input === 'string' ? safeJson(input) : input;
	const incoming = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
	const correlationId = isUuid(incoming.correlation_id) ? incoming.correlation_id : newCorrelationId();
	// keep what the caller's ctx carries (job_id, workflow…): a failure here must still name its job
	state.ctx = newCtx({
		...state.ctx,
		correlation_id: correlationId,
		trace_id: typeof incoming.trace_id === 'string' ? incoming.trace_id : null,
		tenant_id: isUuid(incoming.tenant_id) ? incoming.tenant_id : null,
		workflow: (state.ctx?.workflow as string | undefined) ?? 'WF00c',
	});
	const req = parseRequest(ContextRequest, raw, { table: 'core.tenant_users' });
	if (req.channel === 'dm' && req.chat_id !== null && !sameId(req.chat_id, req.tg_user_id)) {
		// a dm is the user's own private chat (chat.id == from.id): another user's dm or a group is not theirs
		throw ContractError.forbidden(
			"a dm request must name the user's own private chat (chat_id = tg_user_id)",
			{ code: 'DM_NOT_OWN_CHAT', tg_user_id: req.tg_user_id, chat_id: req.chat_id },
			WHERE('core.tenant_users'),
		);
	}
	let row: Record<string, unknown>;
	try {
		row = (await pool.query(LOAD_CONTEXT, [req.tenant_id, sqlId(req.tg_user_id), sqlId(req.chat_id)])).rows[0];
	} catch (error) {
		throw fromPgError(error, WHERE('core.tenant_users'));
	}
	const role = row.role as string | null;
	if (!row.tenant_exists || !row.tenant_enabled || role === null) {
		throw ContractError.forbidden(
			'user is not allowed in this tenant',
			{ code: 'NOT_ALLOWED', tenant_id: req.tenant_id, tg_user_id: req.tg_user_id },
			WHERE('core.tenant_users'),
		);
	}
	if (role === 'blocked') {
		throw ContractError.forbidden(
			'user is blocked',
			{ code: 'BLOCKED', tenant_id: req.tenant_id, tg_user_id: req.tg_user_id },
			WHERE('core.tenant_users'),
		);
	}
	if (req.channel === 'group') {
		if (!row.chat_registered || !row.chat_enabled) {
			throw ContractError.notFound(
				'chat is not registered or disabled for the tenant',
				{ code: 'CHAT_NOT_REGISTERED', chat_id: req.chat_id },
				WHERE('core.tenant_chats'),
			);
		}
		if (!row.is_member && role !== 'admin') {
			throw ContractError.forbidden(
				'user is not a current member of the chat',
				{ code: 'NOT_A_MEMBER', chat_id: req.chat_id },
				WHERE('tg.chat_memberships_current'),
			);
		}
	}
	const ctx = AclCtx.parse({
		tenant_id: req.tenant_id,
		tg_user_id: req.tg_user_id,
		chat_id: req.chat_id,
		channel: req.channel,
		visibility: req.channel,
		dm_owner_user_id: req.channel === 'dm' ? req.tg_user_id : null,
		role,
		is_allowed: true,
		trace_id: req.trace_id,
		correlation_id: correlationId,
		contracts: { errorpipe: ERRORPIPE_CONTRACT_VERSION },
		chat_policy: (row.chat_policy as Record<string, unknown> | null) ?? { ...DEFAULT_CHAT_POLICY },
	});
	state.ctx = { ...state.ctx, ...ctx };
	return { ctx };
}
