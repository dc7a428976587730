/**
 * Q&A → Answer: WF51 of seed 003. Answers a question from the sources the readers of the reply may see, with citations:
 *  1. ACL: the ctx of Context Loader (WF00c) — 403/404 as there;
 *  2. the session (WF50);
 *  3. the question embedded (first active 1,536-dimension model, task RETRIEVAL_QUERY) and the `k` nearest
 *     chunks everyone who reads the reply may see (retrieve.ts, this tenant only): asked in a `group`, only
 *     that group's documents (never a dm, never another group — an admin's question too, since the whole
 *     group reads the answer and its Sources); asked in the asker's own `dm`, their dms and the groups they
 *     are a current member of (everything of the tenant for an admin);
 *  4. the model (Contracts LLM API credential, seed-001 retry policy) answers from the numbered sources
 *     only, citing [n]; with no source found, a fixed "nothing found" answer and no model call;
 *  5. audit.qa_turns and audit.qa_citations (rank, chunk, score, snippet, source_ref) in one statement;
 *  6. the answer sent as a reply with Telegram's sendMessage (Contracts Telegram Bot API credential), the
 *     sent message id stored on the turn. It replies to the question message only when
 *     `question_message_version_id` is a message of this tenant and of the reply's chat (else no reply-to).
 * Idempotent per question message: a retried job finds its turn (unique session/question_message_version_id)
 * and only sends what was not sent — the model is not asked twice.
 * Input `req`: `{ tenant_id, tg_user_id, channel, chat_id, question, question_message_version_id, trace_id }`
 *   (+ k 1–20, default 5; send_reply, default true).
 * Output: `{ session_id, turn_id, answer_text, citations: [{ rank, chunk_id, score, snippet, source_ref }],
 *   telegram_message_id, vector_route }` (vector_route: `pgvector_hnsw` | `exact` — the vector store searched
 *   (vectorRoute.ts); null when a retried job found its turn and nothing was searched).
 * Ids are exact (shared/contracts/ids.ts): a number beyond 2^53 − 1 is refused 422, send it as a string.
 * The reply goes to the chat Context Loader allowed: a group the asker is a member of, or the asker's own dm
 *   (a dm request naming another chat is refused 403 DM_NOT_OWN_CHAT there, before anything is read or sent).
 * `question`: 1–4000 characters after trimming; a NUL or a lone UTF-16 surrogate (PostgreSQL cannot store
 *   them) is refused 422 `req.question` — Update → Process stores message texts with them replaced by U+FFFD,
 *   so a question it enqueues never has one.
 * Errors: 422 `req.<field>`; 403/404 ACL; 404 NO_EMBEDDING_MODEL; 502 embeddings/model/Bot API
 *   (retryable as their classes); 500 VECTOR_STORE_MISSING; 503/500 db.
 */
import type { Pool } from 'pg';
import { z } from 'zod';
import { loadContext } from '../../../shared/acl/loadContext';
import type { AclCtx } from '../../../shared/contracts/ctx';
import { BigIntLike, DbId, parseRequest, TenantId } from '../../../shared/contracts/request';
import { ContractError, fromPgError } from '../../../shared/errors';
import { replaceUnstorable } from '../../../shared/sanitize';
import { DEFAULT_RETRY, generate } from '../../../shared/llm/generate';
import { ACTIVE_EMBEDDING_MODEL } from '../../../shared/statements/content';
import { FIND_TURN, INSERT_TURN, SET_TURN_MESSAGE } from '../../../shared/statements/qa';
import { REPLY_TARGET } from '../../../shared/statements/tg';
import { BotApiError, sendMessage } from '../../transport/botApi';
import { embeddingsFailure } from '../document/embed.operation';
import type { KnowledgeOperation } from '../types';
import { retrieveChunks, type RetrievedChunk } from './retrieve';
import { upsertSession } from './session';

export const AnswerRequest = z.object({
	tenant_id: TenantId,
	tg_user_id: BigIntLike,
	channel: z.enum(['group', 'dm'], { errorMap: () => ({ message: 'must be "group" or "dm"' }) }),
	chat_id: BigIntLike.nullish().transform((v) => v ?? null),
	question: z
		.string({ required_error: 'is required' })
		.trim()
		.min(1, 'must not be empty')
		.max(4000, 'is longer than 4000 characters')
		.refine(
			(q) => !replaceUnstorable(q).replaced,
			'contains a NUL character or a lone UTF-16 surrogate, which cannot be stored',
		),
	question_message_version_id: DbId.nullish().transform((v) => v ?? null),
	trace_id: z.string().nullish(),
	correlation_id: z.string().uuid().nullish(),
	k: z.number().int().min(1).max(20).default(5),
	send_reply: z.boolean().default(true),
});

export const NOTHING_FOUND = 'I found nothing about this in the sources available to you.';

export const ANSWER_SYSTEM_PROMPT = [
	'You answer questions for members of a Telegram group using only the numbered sources given.',
	'Cite every statement with the number of its source in brackets, like [1] or [2][3].',
	'If the sources do not contain the answer, say that you do not know. Answer in the language of the question.',
].join(' ');

/**
 * The model call's whole budget for an answer, ms (60 s: the first attempt's 30 s timeout and the retries
 * that fit; a Retry-After or rate-limit wait longer than what is left fails the answer at once, 504/429
 * retryable): someone is waiting for the reply in the chat (docs/retry-safety.md "LLM calls: retry policy").
 */
export const ANSWER_DEADLINE_MS = 60_000;

const WHERE = { table: 'audit.qa_turns' };

interface Citation {
	rank: number;
	chunk_id: number;
	score: number;
	snippet: string;
	source_ref: Record<string, unknown>;
}

function citationsOf(chunks: RetrievedChunk[]): Citation[] {
	return chunks.map((c, i) => ({
		rank: i + 1,
		chunk_id: c.chunk_id,
		score: Math.round(c.score * 10_000) / 10_000,
		snippet: c.text.length > 300 ? `${c.text.slice(0, 299)}…` : c.text,
		source_ref: {
			document_id: c.document_id,
			chunk_no: c.chunk_no,
			doc_type: c.doc_type,
			title: c.title,
			url: c.url,
			file_unique_id: c.file_unique_id,
			chat_id: c.chat_id,
			message_version_id: c.message_version_id,
		},
	}));
}

/** The message sent to Telegram: the answer, then one line per source. */
export function replyText(answer: string, citations: Citation[]): string {
	if (citations.length === 0) return answer;
	const lines = citations.map(
		(c) =>
			`[${c.rank}] ${(c.source_ref.title as string | null) || (c.source_ref.url as string | null) || `document ${String(c.source_ref.document_id)}`}${c.source_ref.url && c.source_ref.title ? ` — ${String(c.source_ref.url)}` : ''}`,
	);
	return `${answer}\n\nSources:\n${lines.join('\n')}`;
}

async function query(pool: Pool, sql: string, params: unknown[], where: { operation: string; table: string }) {
	try {
		return (await pool.query(sql, params)).rows;
	} catch (error) {
		throw fromPgError(error, where);
	}
}

export const answerOperation: KnowledgeOperation = {
	value: 'answer',
	name: 'Answer',
	action: 'Answer a question with citations',
	description:
		'Answer from the sources the readers of the reply may see (in a group: that group only), cite them, record the turn and reply in Telegram (WF51)',
	workflow: 'WF51',
	async execute({ pool, state, correlationId, embed, llm, telegram, postJson }, raw) {
		const req = parseRequest(AnswerRequest, raw, WHERE);
		const { ctx } = (await loadContext(
			pool,
			{
				tenant_id: req.tenant_id,
				tg_user_id: req.tg_user_id,
				chat_id: req.chat_id,
				channel: req.channel,
				trace_id: req.trace_id ?? null,
				correlation_id: req.correlation_id ?? correlationId,
			},
			state,
		)) as { ctx: AclCtx };
		// from here on the ids are the ctx's: Context Loader checked them (membership; a dm is the asker's own chat)
		const { session_id: sessionId } = await upsertSession(pool, {
			tenant_id: req.tenant_id,
			tg_user_id: ctx.tg_user_id,
			channel: ctx.channel,
			chat_id: ctx.chat_id,
			meta: { last_question_at: new Date().toISOString() },
		});
		const existing =
			req.question_message_version_id === null
				? []
				: await query(pool, FIND_TURN, [sessionId, req.question_message_version_id], { operation: 'select', ...WHERE });
		let turnId: number;
		let answer: string;
		let citations: Citation[];
		let sentId: number | null = null;
		let vectorRoute: string | null = null;
		if (existing.length > 0) {
			turnId = Number(existing[0].id);
			answer = String(existing[0].answer_text);
			citations = existing[0].citations as Citation[];
			sentId = existing[0].telegram_message_id === null ? null : Number(existing[0].telegram_message_id);
		} else {
			const models = await query(pool, ACTIVE_EMBEDDING_MODEL, [], {
				operation: 'select',
				table: 'kg.embedding_models',
			});
			if (models.length === 0)
				throw ContractError.notFound(
					'no active embedding model of 1536 dimensions in kg.embedding_models',
					{ code: 'NO_EMBEDDING_MODEL' },
					{ operation: 'select', table: 'kg.embedding_models' },
				);
			const model = { id: Number(models[0].id), name: String(models[0].name), dims: Number(models[0].dims) };
			let vector: number[];
			try {
				[vector] = await embed(model, [req.question], 'RETRIEVAL_QUERY');
			} catch (error) {
				throw embeddingsFailure(error);
			}
			const chunks = await retrieveChunks(pool, ctx, vector, {
				model_id: model.id,
				k: req.k,
				onRoute: (r) => (vectorRoute = r.route),
			});
			citations = citationsOf(chunks);
			let modelName: string | null = null;
			if (chunks.length === 0) {
				answer = NOTHING_FOUND;
			} else {
				const { credential, send, signal } = await llm();
				const sources = citations
					.map(
						(c) =>
							`[${c.rank}] ${(c.source_ref.title as string | null) ?? ''} ${(c.source_ref.url as string | null) ?? ''}\n${chunks[c.rank - 1].text}`,
					)
					.join('\n\n');
				const result = await generate(
					credential,
					{
						system: ANSWER_SYSTEM_PROMPT,
						input: `Sources:\n${sources}\n\nQuestion: ${req.question}`,
						expectJson: false,
						temperature: 0.2,
					},
					// an interactive answer: the whole call (attempts and waits) ends within ANSWER_DEADLINE_MS
					{ ...DEFAULT_RETRY, deadlineMs: ANSWER_DEADLINE_MS, signal },
					send,
				);
				answer = result.text.trim();
				modelName = result.model;
			}
			const inserted = await query(
				pool,
				INSERT_TURN,
				[
					sessionId,
					req.question,
					req.question_message_version_id,
					answer,
					modelName,
					ctx.correlation_id,
					JSON.stringify(citations),
				],
				{ operation: 'insert', ...WHERE },
			);
			turnId = Number(inserted[0].id);
		}
		if (req.send_reply && sentId === null) {
			// a dm without chat_id is the asker's private chat (Telegram: its id is the user's id). An id beyond
			// 2^53 − 1 stays its exact decimal string: the Bot API takes chat_id as an integer or a string.
			const chatId = (ctx.chat_id ?? ctx.tg_user_id) as number | string; // exact: a number when safe, else its decimal string (Telegram accepts both)
			// the reply-to message must be in this chat of this tenant: a version id of another chat would name
			// whichever message has the same message_id here
			const target =
				req.question_message_version_id === null
					? []
					: await query(pool, REPLY_TARGET, [req.question_message_version_id, ctx.tenant_id, String(chatId)], {
							operation: 'select',
							table: 'tg.messages',
						});
			try {
				sentId = await sendMessage(
					postJson,
					await telegram(),
					chatId,
					replyText(answer, citations),
					target.length ? Number(target[0].message_id) : null,
					15_000,
				);
			} catch (error) {
				const status = error instanceof BotApiError ? error.status : null;
				const retryable = status === null || status >= 500 || status === 429;
				throw ContractError.upstream(
					`reply not sent: ${error instanceof Error ? error.message : String(error)}`,
					502,
					retryable,
					{ code: 'REPLY_FAILED', http_status: status, turn_id: turnId },
					{ operation: 'send', table: 'audit.qa_turns' },
					{ rateLimited: status === 429 },
				);
			}
			await query(pool, SET_TURN_MESSAGE, [turnId, sentId], {
				operation: 'update',
				...WHERE,
			});
		}
		return {
			session_id: sessionId,
			turn_id: turnId,
			answer_text: answer,
			citations,
			telegram_message_id: sentId,
			vector_route: vectorRoute,
		};
	},
};
