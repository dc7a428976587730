/**
 * Q&A → Answer: WF51 of seed 003. Answers a question from the sources the readers of the reply may see, with citations:
 *  1. ACL: the ctx of Context Loader (WF00c) — 403/404 as there;
 *  2. the session (WF50);
 *  3. the question embedded (first active 1,536-dimension model, task RETRIEVAL_QUERY) and the `k` best
 *     chunks (the node's Retrieval: `hybrid`, cosine combined with PostgreSQL's full-text rank of the question,
 *     or `vector`, cosine alone: retrieve.ts RetrievalMode) everyone who reads the reply may see (retrieve.ts, this tenant only): asked in a `group`, only
 *     that group's documents (never a dm, never another group — an admin's question too, since the whole
 *     group reads the answer and its Sources); asked in the asker's own `dm`, their dms and the groups they
 *     are a current member of (everything of the tenant for an admin);
 *  4. of those k candidates only the relevant ones (citations.ts relevantChunks: score ≥ the node's Minimum
 *     Score and ≥ Minimum Relative Score × the best score; issue 30), grouped one source per document;
 *     none relevant: a plain "I found nothing in this chat's documents about …" answer (nothingFoundText)
 *     and no model call;
 *  5. the model (Contracts LLM API credential, seed-001 retry policy) answers from those numbered sources
 *     only, citing [n]; only the sources its answer references are cited, renumbered 1, 2… in the order of
 *     first reference (citations.ts renumberAnswer) — an answer without markers cites nothing;
 *  6. audit.qa_turns and audit.qa_citations in one statement: one row per chunk of a cited document (rank
 *     1, 2… over the chunks, source_ref.source = the document's number in the reply);
 *  7. the answer sent as a reply with Telegram's sendMessage (Contracts Telegram Bot API credential), then
 *     "Sources:" with one line per cited document (citations.ts sourceLine: title → file name → URL →
 *     `document <id>`), the sent message id stored on the turn. It replies to the question message only when
 *     `question_message_version_id` is a message of this tenant and of the reply's chat (else no reply-to).
 * Idempotent per question message: a retried job finds its turn (unique session/question_message_version_id)
 * and only sends what was not sent — the model is not asked twice.
 * Input `req`: `{ tenant_id, tg_user_id, channel, chat_id, question, question_message_version_id, trace_id }`
 *   (+ k 1–20, default 5; send_reply, default true).
 * Output: `{ session_id, turn_id, answer_text, citations: [{ rank, chunk_id, score, snippet, source_ref }],
 *   sources: [{ n, label, url, document_id, chunk_ids }], retrieval, telegram_message_id, vector_route }`:
 *   citations are the cited chunks (source_ref: document_id, chunk_no, doc_type, title, file_name, url,
 *   file_unique_id, chat_id, message_version_id and `source`, the document's number in the reply); sources
 *   the Sources lines; retrieval `{ candidates, relevant, min_score, relative_score }` (how many of the k
 *   candidates passed the floors; null when a retried job found its turn); vector_route `pgvector_hnsw` |
 *   `exact` — the vector store searched (vectorRoute.ts), null when a retried job found its turn.
 * A non-member's question in a group gets no reply at all (Context Loader's 403 NOT_A_MEMBER, before anything
 *   is read or sent): docs/nodes/knowledge-bot.md "Answers" says why.
 * Ids are exact (shared/contracts/ids.ts): a number beyond 2^53 − 1 is refused 422, send it as a string.
 * The reply goes to the chat Context Loader allowed: a group the asker is a member of, or the asker's own dm
 *   (a dm request naming another chat is refused 403 DM_NOT_OWN_CHAT there, before anything is read or sent).
 * `question`: 1–4000 characters after trimming; a NUL or a lone UTF-16 surrogate (PostgreSQL cannot store
 *   them) is refused 422 `req.question` — Update → Process stores message texts with them replaced by U+FFFD,
 *   so a question it enqueues never has one.
 * Errors: 422 `req.<field>`, 422 `minScore` / `relativeScore` (a node field outside 0–1), 422 `retrieval` (not vector/hybrid); 403/404 ACL; 404 NO_EMBEDDING_MODEL; 502 embeddings/model/Bot API
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
import {
	answerPrompt,
	groupByDocument,
	relevanceRule,
	relevantChunks,
	renumberAnswer,
	sourceLabel,
	sourceLine,
	sourcesOf,
	type RelevanceRule,
} from './citations';
import {
	HYBRID_LEXICAL_WEIGHT,
	retrievalMode,
	retrieveChunks,
	type RetrievalMode,
	type RetrievedChunk,
} from './retrieve';
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

/**
 * The answer when no candidate passes the relevance floors (no model call): says plainly where the bot
 * looked — in a group, that chat's documents; in a dm, every document the asker may see — and quotes the
 * question (blanks collapsed, at most 120 characters).
 */
export function nothingFoundText(channel: 'group' | 'dm', question: string): string {
	const flat = question.replace(/\s+/g, ' ').trim();
	const about = flat.length > 120 ? `${flat.slice(0, 119)}…` : flat;
	return channel === 'group'
		? `I found nothing in this chat's documents about “${about}”.`
		: `I found nothing in the documents you can see (yours and your groups') about “${about}”.`;
}

export const ANSWER_SYSTEM_PROMPT = [
	'You answer questions for members of a Telegram group using only the numbered sources given.',
	'Cite every statement with the number of its source in brackets, like [1] or [2][3], and cite only sources you used.',
	'If the sources do not contain the answer, say that you do not know and cite nothing. Answer in the language of the question.',
].join(' ');

/**
 * The model call's whole budget for an answer, ms (60 s: the first attempt's 30 s timeout and the retries
 * that fit; a Retry-After or rate-limit wait longer than what is left fails the answer at once, 504/429
 * retryable): someone is waiting for the reply in the chat (docs/retry-safety.md "LLM calls: retry policy").
 */
export const ANSWER_DEADLINE_MS = 60_000;

const WHERE = { table: 'audit.qa_turns' };

/** A row of audit.qa_citations: one chunk of a cited document. */
interface Citation {
	rank: number;
	chunk_id: number;
	score: number;
	snippet: string;
	source_ref: Record<string, unknown>;
}

/**
 * The citation rows of the cited documents: `cited` are the sources (groupByDocument) in their reply order;
 * every chunk of each is a row (rank 1, 2… over all), source_ref.source = the document's number in the reply.
 */
function citationsOf(cited: RetrievedChunk[][]): Citation[] {
	const rows = cited.flatMap((chunks, i) => chunks.map((c) => ({ c, source: i + 1 })));
	return rows.map(({ c, source }, i) => ({
		rank: i + 1,
		chunk_id: c.chunk_id,
		score: Math.round(c.score * 10_000) / 10_000,
		snippet: c.text.length > 300 ? `${c.text.slice(0, 299)}…` : c.text,
		source_ref: {
			source,
			document_id: c.document_id,
			chunk_no: c.chunk_no,
			doc_type: c.doc_type,
			title: c.title,
			file_name: c.file_name,
			url: c.url,
			file_unique_id: c.file_unique_id,
			chat_id: c.chat_id,
			message_version_id: c.message_version_id,
		},
	}));
}

/** The message sent to Telegram: the answer, then "Sources:" and one line per cited document. */
export function replyText(answer: string, citations: readonly Citation[]): string {
	const sources = sourcesOf(citations);
	if (sources.length === 0) return answer;
	return `${answer}\n\nSources:\n${sources.map((s) => sourceLine(s.n, s.ref)).join('\n')}`;
}

/**
 * The node's two floors and its Retrieval mode (its fields; defaults when empty), a floor outside 0–1 or a mode
 * other than vector/hybrid refused 422 naming the field.
 */
function ruleOf(values: {
	minScore?: unknown;
	relativeScore?: unknown;
	retrieval?: unknown;
}): RelevanceRule & { retrieval: RetrievalMode } {
	try {
		return { ...relevanceRule(values), retrieval: retrievalMode(values.retrieval) };
	} catch (error) {
		const message = String((error as Error).message);
		const field = ['minScore', 'relativeScore', 'retrieval'].find((f) => message.startsWith(f)) ?? 'minScore';
		throw ContractError.validation(
			(error as Error).message,
			{ code: 'VALIDATION', field },
			{ operation: 'validate', table: 'audit.qa_turns' },
		);
	}
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
	async execute({ pool, state, correlationId, embed, llm, telegram, postJson, relevance }, raw) {
		const req = parseRequest(AnswerRequest, raw, WHERE);
		const rule = ruleOf(relevance?.() ?? {});
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
		let retrieval: Record<string, number | string> | null = null;
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
				hybrid: rule.retrieval === 'hybrid' ? { question: req.question, weight: HYBRID_LEXICAL_WEIGHT } : undefined,
			});
			const passed = relevantChunks(chunks, rule);
			retrieval = {
				candidates: chunks.length,
				relevant: passed.length,
				min_score: rule.minScore,
				relative_score: rule.relativeScore,
				mode: rule.retrieval,
			};
			const groups = groupByDocument(passed);
			let modelName: string | null = null;
			if (groups.length === 0) {
				answer = nothingFoundText(ctx.channel as 'group' | 'dm', req.question);
				citations = [];
			} else {
				const { credential, send, signal } = await llm();
				// one numbered source per document: its label (and URL), then its passages, best first
				const result = await generate(
					credential,
					{
						system: ANSWER_SYSTEM_PROMPT,
						input: answerPrompt(groups, req.question),
						expectJson: false,
						temperature: 0.2,
					},
					// an interactive answer: the whole call (attempts and waits) ends within ANSWER_DEADLINE_MS
					{ ...DEFAULT_RETRY, deadlineMs: ANSWER_DEADLINE_MS, signal },
					send,
				);
				const renumbered = renumberAnswer(result.text.trim(), groups.length);
				answer = renumbered.text;
				citations = citationsOf(renumbered.cited.map((n) => groups[n - 1].chunks));
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
			sources: sourcesOf(citations).map((s) => ({
				n: s.n,
				label: sourceLabel(s.ref),
				url: s.ref.url ?? null,
				document_id: s.ref.document_id,
				chunk_ids: s.chunk_ids,
			})),
			retrieval,
			telegram_message_id: sentId,
			vector_route: vectorRoute,
		};
	},
};
