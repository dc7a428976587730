/**
 * Retrieval for WF51: the `k` chunks nearest to a question vector that the asking user may see (seed 003
 * §0.2, SEARCH_CHUNKS), given the ctx Context Loader (WF00c) built. Refuses a ctx that is not allowed.
 */
import type { Pool } from 'pg';
import type { AclCtx } from '../../../shared/contracts/ctx';
import { parseExactId } from '../../../shared/contracts/ids';
import { ContractError } from '../../../shared/errors';
import { vectorLiteral } from '../../transport/embeddings';
import { EMBEDDINGS_TABLE, SEARCH_CHUNKS, vectorError } from '../vectorSql';

export interface RetrievedChunk {
	chunk_id: number;
	document_id: number;
	chunk_no: number;
	text: string;
	title: string | null;
	doc_type: 'url' | 'file';
	/** exact: a number when safe, else the decimal string (ids.ts) */
	chat_id: number | string;
	visibility: 'group' | 'dm';
	message_version_id: number | null;
	file_unique_id: string | null;
	url: string | null;
	/** cosine similarity, 1 = same direction */
	score: number;
}

/** A bigint column (pg returns it as a decimal string) as an exact id. */
function exactOf(value: unknown): number | string {
	const parsed = parseExactId(String(value));
	return parsed.ok ? parsed.value : String(value);
}

/**
 * @param k most chunks returned (1–100)
 * @throws ContractError 403 NOT_ALLOWED for a ctx without is_allowed or a blocked role; 422 a tg_user_id that is
 *   not an exact int8 (ids.ts); 500 PGVECTOR_MISSING; 503/500 db
 */
export async function retrieveChunks(pool: Pool, ctx: Pick<AclCtx, 'tenant_id' | 'tg_user_id' | 'role' | 'is_allowed'>, vector: number[], options: { model_id: number; k: number }): Promise<RetrievedChunk[]> {
	if (!ctx.is_allowed || ctx.role === 'blocked') {
		throw new ContractError('the ctx does not allow reading', 403, 'auth', false, { code: 'NOT_ALLOWED' }, { operation: 'select', table: EMBEDDINGS_TABLE });
	}
	const user = parseExactId(ctx.tg_user_id);
	if (!user.ok) {
		throw new ContractError(`the ctx's tg_user_id ${user.message}`, 422, 'validation', false, { code: 'VALIDATION', field: 'ctx.tg_user_id' }, { operation: 'validate', table: EMBEDDINGS_TABLE });
	}
	try {
		// the user id goes to SQL as its exact decimal string ($4::bigint), never through a JS number
		const { rows } = await pool.query(SEARCH_CHUNKS, [ctx.tenant_id, options.model_id, vectorLiteral(vector), String(user.value), ctx.role === 'admin', options.k]);
		return rows.map((r) => ({
			...r,
			chunk_id: Number(r.chunk_id),
			document_id: Number(r.document_id),
			chat_id: exactOf(r.chat_id),
			message_version_id: r.message_version_id === null ? null : Number(r.message_version_id),
			score: Number(r.score),
		})) as RetrievedChunk[];
	} catch (error) {
		throw vectorError(error, { operation: 'select', table: EMBEDDINGS_TABLE });
	}
}
