/**
 * The Q/A session of a user in a chat (seed 003 WF50): one row per (tenant, user, chat), `last_at`
 * moved and `meta` merged on every question. A DM's chat is the user's own id (Telegram's private chat id).
 */
import type { Pool } from 'pg';
import { sqlId, type ExactId } from '../../../shared/contracts/ids';
import { fromPgError } from '../../../shared/errors';
import { UPSERT_SESSION } from '../../../shared/statements/qa';

/**
 * Ids are exact (ids.ts) and go to SQL as decimal strings.
 * @throws ContractError 503/500 db
 */
export async function upsertSession(
	pool: Pool,
	s: {
		tenant_id: string;
		tg_user_id: ExactId;
		channel: 'group' | 'dm';
		chat_id: ExactId | null;
		meta?: Record<string, unknown>;
	},
): Promise<{ session_id: string; created: boolean }> {
	try {
		const { rows } = await pool.query(UPSERT_SESSION, [
			s.tenant_id,
			sqlId(s.tg_user_id),
			s.channel,
			sqlId(s.chat_id ?? s.tg_user_id),
			JSON.stringify(s.meta ?? {}),
		]);
		return { session_id: rows[0].session_id, created: rows[0].created };
	} catch (error) {
		throw fromPgError(error, { operation: 'upsert', table: 'audit.qa_sessions' });
	}
}
