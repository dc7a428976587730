/**
 * Retrieval for WF51: the `k` chunks nearest to a question vector (or, retrieval `hybrid`, best by cosine combined
 * with the question's full-text rank: RetrievalMode) that everyone who reads the reply may see
 * (seed 003 §0.2, shared/statements/content.ts visibleTo), on the database's vector route (vectorStore.ts: pgvector HNSW, or the exact
 * search without the extension), given the ctx Context Loader (WF00c) built: in a `group`, only that chat's
 * group documents; in a `dm` (the asker's own private chat), the asker's dms and the groups they are a member
 * of (everything of the tenant for an admin). Refuses a ctx that is not allowed or names the wrong chat.
 */
import type { Pool } from 'pg';
import type { AclCtx } from '../../../shared/contracts/ctx';
import { parseExactId, sameId } from '../../../shared/contracts/ids';
import { ContractError } from '../../../shared/errors';
import type { VectorRoute } from '../vectorRoute';
import { searchChunks, vectorError } from '../vectorStore';
import { EMBEDDINGS_TABLE as TABLE } from '../../../shared/statements/content';

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
	/** the name a file document was sent with (tg.files; null for a URL, or a file sent without a name) */
	file_name: string | null;
	/** cosine similarity, 1 = same direction; retrieval `hybrid`: the hybrid score (HYBRID_LEXICAL_WEIGHT) */
	score: number;
	/** retrieval `hybrid` only: the cosine similarity and the full-text rank (0 to about 0.61) the score combines */
	cosine?: number;
	lexical?: number;
}

/**
 * How WF51 scores candidates (the node's Retrieval field, issue 30):
 *  - `vector`: cosine similarity of the question's vector alone (the route of vectorRoute.ts);
 *  - `hybrid`: (1 − HYBRID_LEXICAL_WEIGHT) × cosine + HYBRID_LEXICAL_WEIGHT × PostgreSQL full-text rank of the
 *    question against the chunk ('english': stop words, stemming; content.ts lexicalRank, 0 to about 0.61), on either
 *    vector route (content.ts SEARCH_CHUNKS_HYBRID, VISIBLE_EMBEDDINGS_HYBRID).
 */
export type RetrievalMode = 'vector' | 'hybrid';

/**
 * Default retrieval: `hybrid`. Measured on the issue-30 evaluation set (`EVAL_SWEEP=1 npm run eval:answer`, the
 * offline stand-ins): `vector` meets issue 30's goal at no floors (recall 0.79 at precision 0.48 with 0.25 / 0.7;
 * precision at most 0.77 while recall ≥ 0.3), `hybrid` meets it (precision 0.94, recall 0.83 at the
 * default floors: citations.ts DEFAULT_MIN_SCORE has the table). `vector` stays for real embedding models.
 */
export const DEFAULT_RETRIEVAL: RetrievalMode = 'hybrid';

/**
 * The full-text rank's weight in the hybrid score (0–1). Measured as DEFAULT_RETRIEVAL (EVAL_SWEEP=1 sweeps 0.5,
 * 0.6, 0.7, 0.8 over 9 × 8 floor pairs): at 0.6 the most pairs meet issue 30's goal (12), at 0.7 8, at 0.5 7,
 * at 0.8 2.
 */
export const HYBRID_LEXICAL_WEIGHT = 0.6;

/**
 * The node's Retrieval field as a mode: `vector` or `hybrid`; empty → DEFAULT_RETRIEVAL.
 * @throws RangeError any other value (the node turns it into a 422 naming the field)
 */
export function retrievalMode(value: unknown): RetrievalMode {
	if (value === undefined || value === null || value === '') return DEFAULT_RETRIEVAL;
	if (value === 'vector' || value === 'hybrid') return value;
	throw new RangeError(`retrieval must be "vector" or "hybrid", got ${JSON.stringify(value)}`);
}

/** A bigint column (pg returns it as a decimal string) as an exact id. */
function exactOf(value: unknown): number | string {
	const parsed = parseExactId(String(value));
	return parsed.ok ? parsed.value : String(value);
}

/**
 * @param ctx the request's ctx: `channel` and `chat_id` say where the reply goes, so what may be cited
 * @param options.k most chunks returned (1–100); options.onRoute is told which vector route answered (vectorRoute.ts);
 *   options.hybrid: the question's text and the full-text rank's weight (0–1) for retrieval `hybrid` (absent: `vector`)
 * @throws ContractError 403 NOT_ALLOWED for a ctx without is_allowed or a blocked role; 403 DM_NOT_OWN_CHAT for
 *   a dm ctx naming a chat other than the asker's own (chat_id null or = tg_user_id); 422 a tg_user_id or a
 *   group's chat_id that is not an exact int8 (ids.ts), or a channel that is neither group nor dm
 *   (`ctx.<field>`); 500 VECTOR_STORE_MISSING; 503/500 db
 */
export async function retrieveChunks(
	pool: Pool,
	ctx: Pick<AclCtx, 'tenant_id' | 'tg_user_id' | 'role' | 'is_allowed' | 'channel' | 'chat_id'>,
	vector: number[],
	options: {
		model_id: number;
		k: number;
		onRoute?: (route: VectorRoute) => void;
		hybrid?: { question: string; weight: number };
	},
): Promise<RetrievedChunk[]> {
	const where = { operation: 'select', table: TABLE };
	const invalid = (field: string, message: string) =>
		ContractError.validation(
			`the ctx's ${field} ${message}`,
			{ code: 'VALIDATION', field: `ctx.${field}` },
			{ operation: 'validate', table: TABLE },
		);
	if (!ctx.is_allowed || ctx.role === 'blocked') {
		throw ContractError.forbidden('the ctx does not allow reading', { code: 'NOT_ALLOWED' }, where);
	}
	const user = parseExactId(ctx.tg_user_id);
	if (!user.ok) throw invalid('tg_user_id', user.message);
	if (ctx.channel !== 'group' && ctx.channel !== 'dm') throw invalid('channel', 'must be "group" or "dm"');
	let chat: string | null = null;
	if (ctx.channel === 'group') {
		const parsed = parseExactId(ctx.chat_id);
		if (!parsed.ok)
			throw invalid(
				'chat_id',
				ctx.chat_id === null || ctx.chat_id === undefined ? 'is required for a group' : parsed.message,
			);
		chat = String(parsed.value);
	} else if (ctx.chat_id !== null && ctx.chat_id !== undefined) {
		// a dm is the asker's own private chat (Context Loader checks it; checked again: the reply goes there)
		const parsed = parseExactId(ctx.chat_id);
		if (!parsed.ok || !sameId(parsed.value, user.value)) {
			throw ContractError.forbidden(
				"a dm ctx must name the asker's own private chat (chat_id = tg_user_id)",
				{ code: 'DM_NOT_OWN_CHAT' },
				where,
			);
		}
	}
	try {
		// the ids go to SQL as their exact decimal strings ($4::bigint, $8::bigint), never through a JS number
		const { route, rows } = await searchChunks(pool, {
			tenant_id: ctx.tenant_id,
			model_id: options.model_id,
			vector,
			user: String(user.value),
			admin: ctx.role === 'admin',
			k: options.k,
			channel: ctx.channel,
			chat,
			hybrid: options.hybrid,
		});
		options.onRoute?.(route);
		return rows.map((r) => ({
			...r,
			chunk_id: Number(r.chunk_id),
			document_id: Number(r.document_id),
			chat_id: exactOf(r.chat_id),
			message_version_id: r.message_version_id === null ? null : Number(r.message_version_id),
			file_name: (r.file_name as string | null | undefined) ?? null,
			score: Number(r.score),
		})) as RetrievedChunk[];
	} catch (error) {
		throw vectorError(pool, error, { operation: 'select', table: TABLE });
	}
}
