/** The shape every Knowledge Bot operation module exports (one file per operation). */
import type { Pool } from 'pg';
import type { ItemState } from '../../shared/node/runItems';
import type { Operation as RouterOperation } from '../../shared/node/router';
import type { EmbeddingModel } from '../transport/embeddings';
import type { HttpGet, HttpPostJson, HttpResponse } from '../transport/http';
import type { OutboundPolicy } from '../transport/outbound';
import type { LlmCredential, Sender } from '../../shared/llm/generate';
import type { TelegramCredential } from '../transport/botApi';

/**
 * What one item's operation receives (`deps`): its dependencies and the item's state. Not the seed's
 * travelling ctx itself (that is `state.ctx`, built by nodes/shared/contracts/ctx.ts newCtx).
 */
export interface KnowledgeContext {
	pool: Pool;
	/** The item's ctx so far; an operation adds what it learns (tenant_id, chat_id…) before DB work. */
	state: ItemState;
	/** correlation_id of the item (kept from req/ctx, else generated once). */
	correlationId: string;
	/** GET with time and size limits, unguarded: admin-configured URLs only (the Bot API of File → Download). */
	http: HttpGet;
	/**
	 * GET of a URL that came from outside (URL → Fetch) through the outbound-request guard
	 * (../transport/outbound.ts guardedGet): `timeoutMs` for the whole fetch (ms), `maxBytes` of the body.
	 * @throws BlockedAddressError, RedirectError, TooLargeError, a timeout or network error
	 */
	fetchUrl: (
		url: string,
		options: { timeoutMs: number; maxBytes: number; policy: OutboundPolicy },
	) => Promise<HttpResponse>;
	/** The node's Options → Allowed Private Addresses and Allowed Ports, as entered (URL → Fetch). */
	outbound: { allowedAddresses?: string; allowedPorts?: string };
	/** The Contracts Telegram Bot API credential of the node (File → Download only). */
	telegram: () => Promise<TelegramCredential>;
	/** JSON POST with a time limit (Bot API sendMessage). */
	postJson: HttpPostJson;
	/**
	 * The Contracts LLM API credential, a sender and n8n's execution cancel signal when the running n8n
	 * offers one (getExecutionCancelSignal; it ends a retry wait) (Answer only).
	 */
	llm: () => Promise<{ credential: LlmCredential; send: Sender; signal?: AbortSignal }>;
	/**
	 * The node's Minimum Score, Minimum Relative Score and Retrieval fields as entered (Answer only; absent or
	 * empty: the defaults of qa/citations.ts and qa/retrieve.ts). Optional: callers without a node (tests,
	 * benches) get the defaults.
	 */
	relevance?: () => { minScore?: unknown; relativeScore?: unknown; retrieval?: unknown };
	/** Vectors for texts through the Contracts Embeddings API credential (Embed, Answer). @throws EmbeddingsError */
	embed: (
		model: EmbeddingModel,
		texts: string[],
		task: 'RETRIEVAL_DOCUMENT' | 'RETRIEVAL_QUERY',
	) => Promise<number[][]>;
}

/** A Knowledge Bot operation: the router's Operation (../../shared/node/router.ts) with its seed workflow. */
export interface KnowledgeOperation
	extends RouterOperation<
		/**
		 * @param req the workflow's `req` (seed 003 §1), validated by the operation's zod schema
		 * @returns `data` of the SuccessEnvelope
		 * @throws ContractError (422 validation naming `req.<field>`, 404/409 as documented, 503/500 db)
		 */
		(deps: KnowledgeContext, req: unknown) => Promise<Record<string, unknown>>
	> {
	/** The seed-003 workflow this operation is the core of (meta.source, ctx.workflow). */
	workflow: string;
}
