/**
 * Q&A → Upsert Session: WF50 of seed 003. Opens or touches the session of a user in a chat.
 * Input `req`: `{ tenant_id, tg_user_id, channel "group"|"dm", chat_id (null for dm: the user's id), meta {} }`.
 * `meta`: a JSON object merged into the session's; a NUL or a lone UTF-16 surrogate in any key or string of it
 *   (PostgreSQL's jsonb cannot store them) is refused 422 `req.meta`.
 * Output: `{ session_id, created }`. Errors: 422 `req.<field>`; 503/500 db.
 */
import { z } from 'zod';
import { BigIntLike, parseRequest, TenantId } from '../../../shared/contracts/request';
import type { KnowledgeOperation } from '../types';
import { storableUpdate } from '../update/storable';
import { upsertSession } from './session';

export const SessionRequest = z.object({
	tenant_id: TenantId,
	tg_user_id: BigIntLike,
	channel: z.enum(['group', 'dm'], { errorMap: () => ({ message: 'must be "group" or "dm"' }) }),
	chat_id: BigIntLike.nullish().transform((v) => v ?? null),
	meta: z
		.record(z.unknown())
		.default({})
		.refine(
			(meta) => !storableUpdate(meta).replaced,
			'holds a NUL character or a lone UTF-16 surrogate (in a key or a string), which cannot be stored',
		),
});

export const upsertSessionOperation: KnowledgeOperation = {
	value: 'upsertSession',
	name: 'Upsert Session',
	action: 'Open or touch a Q&A session',
	description: 'Open or update the question-answer session of a user in a chat (WF50)',
	workflow: 'WF50',
	async execute({ pool, state }, raw) {
		const req = parseRequest(SessionRequest, raw, { table: 'audit.qa_sessions' });
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, chat_id: req.chat_id });
		return upsertSession(pool, req);
	},
};
