/**
 * Puts the evaluation corpus (./evalSet.ts) into a migrated database the way the bot gets documents in a chat,
 * in-process through the Knowledge Bot operations (no n8n):
 *  1. the tenant's people (core.tenant_users, role user), its groups (core.tenant_chats) and their members
 *     (tg.chat_memberships_current), and the embedding model (kg.embedding_models, 1,536 dimensions);
 *  2. per document, the Telegram update a person sends: a message linking the page (`delivery: url`, the page
 *     served by a page server on 127.0.0.1) or a document attachment (`delivery: file`, served by the Bot API
 *     stand-in), in the group or in the sharer's private chat with the bot (`shared_in`);
 *  3. Update → Process (WF20) for each update, then every job it and its successors enqueue, in id order, by the
 *     operation its worker runs: url_normalize → URL → Normalize (WF30), url_fetch → URL → Fetch (WF31, allowed to
 *     reach the page server by its Options), file_download → File → Download (WF32), document_extract →
 *     Document → Extract (WF33), document_chunk → Document → Chunk (WF40), document_embed → Document → Embed
 *     (WF41). A DM text is also a question to the bot (qa_answer): those jobs are not run.
 * The jobs are read from ops.jobs and left `queued` there (the bench's database is dropped afterwards).
 * Returns the document map (eval id ↔ content.documents.id) and each chunk's document, and throws when a
 * document was not stored in the chat and visibility it was shared with, or did not end chunked and embedded.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool } from 'pg';
import { chunkOperation } from '../../nodes/KnowledgeBot/actions/document/chunk.operation';
import { embedOperation } from '../../nodes/KnowledgeBot/actions/document/embed.operation';
import { extractOperation } from '../../nodes/KnowledgeBot/actions/document/extract.operation';
import { downloadOperation } from '../../nodes/KnowledgeBot/actions/file/download.operation';
import type { KnowledgeOperation } from '../../nodes/KnowledgeBot/actions/types';
import { processOperation } from '../../nodes/KnowledgeBot/actions/update/process.operation';
import { fetchOperation } from '../../nodes/KnowledgeBot/actions/url/fetch.operation';
import { normalizeOperation } from '../../nodes/KnowledgeBot/actions/url/normalize.operation';
import type { BotApiStandIn } from '../../test/helpers/botApiStandIn';
import type { EvalDocument, EvalSet } from './evalSet';
import { render } from './formats';

type Run = (op: KnowledgeOperation, req: unknown) => Promise<{ data: Record<string, unknown> }>;

/** The operation each ingestion job type's worker runs (workflows-json WF30–WF41). */
const WORKERS: Record<string, KnowledgeOperation> = {
	url_normalize: normalizeOperation,
	url_fetch: fetchOperation,
	file_download: downloadOperation,
	document_extract: extractOperation,
	document_chunk: chunkOperation,
	document_embed: embedOperation,
};
/** Job types the ingestion leaves alone (a DM text is a question to the bot as well). */
const NOT_INGESTION = new Set(['qa_answer']);

export interface PageServer {
	base: string;
	pages: Map<string, { type: string; body: Buffer }>;
	close(): Promise<void>;
}

/** A web server on 127.0.0.1 serving `pages` (path → type and body), 404 otherwise. */
export async function startPages(): Promise<PageServer> {
	const pages = new Map<string, { type: string; body: Buffer }>();
	const server = http.createServer((req, res) => {
		const page = pages.get(new URL(req.url ?? '/', 'http://x').pathname);
		if (!page) res.writeHead(404).end();
		else res.writeHead(200, { 'content-type': page.type, 'content-length': page.body.length }).end(page.body);
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	return {
		base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		pages,
		close: async () => {
			server.closeAllConnections();
			await new Promise((r) => server.close(r));
		},
	};
}

export interface IngestedCorpus {
	/** eval document id → content.documents.id */
	documentIds: Map<string, number>;
	/** content.documents.id → eval document id */
	evalIds: Map<number, string>;
	/** kg.chunks.id → content.documents.id */
	chunkDocuments: Map<number, number>;
	/** chunks per eval document */
	chunks: Map<string, number>;
	/** jobs run, by type */
	jobs: Record<string, number>;
	/** the chat id a question in `group` is asked in (the group's), or the asker's private chat */
	chatOf(group: string | undefined, asker: string): number;
	userOf(person: string): number;
}

/**
 * @param set the evaluation set (loadEvalSet)
 * @param run the Knowledge Bot runner (test/helpers/knowledgeOps.ts) whose URL → Fetch may reach `pages`
 * @param embedding the model chunks are embedded with (`provider`, `name`; 1,536 dimensions)
 * @throws Error when an operation fails or a document does not end extracted, chunked and embedded
 */
export async function ingestCorpus(options: {
	pool: Pool;
	tenantId: string;
	botId: string;
	set: EvalSet;
	run: Run;
	pages: PageServer;
	botApi: BotApiStandIn;
	embedding: { provider: string; name: string };
}): Promise<IngestedCorpus> {
	const { pool, tenantId, set, run, pages, botApi } = options;
	const { corpus } = set;
	const person = new Map(corpus.people.map((p) => [p.id, p]));
	const group = new Map(corpus.groups.map((g) => [g.id, g]));
	const q = (sql: string, params: unknown[]) => pool.query(sql, params);
	await q(
		"INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) SELECT $1, u, 'user' FROM unnest($2::bigint[]) u",
		[tenantId, corpus.people.map((p) => p.tg_user_id)],
	);
	await q('INSERT INTO core.tenant_chats (tenant_id, chat_id) SELECT $1, c FROM unnest($2::bigint[]) c', [
		tenantId,
		corpus.groups.map((g) => g.chat_id),
	]);
	const members = corpus.groups.flatMap((g) => g.members.map((m) => [g.chat_id, person.get(m)!.tg_user_id]));
	await q(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) SELECT $1, m[1], m[2], 'member' FROM jsonb_array_elements($2::jsonb) j, LATERAL (SELECT ARRAY[(j->>0)::bigint, (j->>1)::bigint] AS m) x",
		[tenantId, JSON.stringify(members)],
	);
	await q('INSERT INTO kg.embedding_models (provider, name, dims) VALUES ($1, $2, 1536)', [
		options.embedding.provider,
		options.embedding.name,
	]);

	// the updates: who shares each document, where
	const byUrl = new Map<string, string>();
	const byFile = new Map<string, string>();
	let updateId = 610_000_000;
	let messageId = 5000;
	const updates: Record<string, unknown>[] = [];
	for (const [i, d] of corpus.documents.entries()) {
		const { bytes, mimeType, fileName } = await render(d.id, set.texts.get(d.id)!, d.format);
		const sharer = sharerOf(d, i, group);
		const from = { id: person.get(sharer)!.tg_user_id, is_bot: false, first_name: person.get(sharer)!.first_name };
		const chat =
			'group' in d.shared_in
				? { id: group.get(d.shared_in.group)!.chat_id, title: group.get(d.shared_in.group)!.title, type: 'supergroup' }
				: { id: from.id, first_name: from.first_name, type: 'private' };
		const message: Record<string, unknown> = { message_id: messageId++, from, chat, date: 1_780_000_000 + i * 60 };
		if (d.delivery === 'url') {
			const pathname = `/kb/${fileName}`;
			pages.pages.set(pathname, { type: mimeType, body: bytes });
			const url = `${pages.base}${pathname}`;
			byUrl.set(url, d.id);
			const text = `${d.title}: ${url}`;
			Object.assign(message, { text, entities: [{ type: 'url', offset: text.indexOf(url), length: url.length }] });
		} else {
			const uniqueId = `AgADev${i.toString().padStart(3, '0')}`;
			const fileId = `BQACAgIAAxkBAAEv${uniqueId}`;
			botApi.files.set(fileId, {
				path: `documents/file_${i}.${d.format}`,
				body: bytes,
				type: 'application/octet-stream',
			});
			byFile.set(uniqueId, d.id);
			Object.assign(message, {
				document: {
					file_id: fileId,
					file_unique_id: uniqueId,
					file_name: fileName,
					mime_type: mimeType.split(';')[0],
					file_size: bytes.length,
				},
				caption: d.title,
			});
		}
		updates.push({ update_id: updateId++, message });
	}
	for (const update of updates) await run(processOperation, { tenant_id: tenantId, update, bot_id: options.botId });

	// the jobs, in id order, until none is left
	const documentIds = new Map<string, number>();
	const urlIds = new Map<number, string>();
	const done = new Set<number>();
	const jobs: Record<string, number> = {};
	/** content.documents.id → chunks embedded by Document → Embed */
	const embedded = new Map<number, number>();
	for (;;) {
		const { rows } = await q(
			"SELECT id, job_type, payload FROM ops.jobs WHERE tenant_id = $1 AND status = 'queued' AND NOT (id = ANY($2::bigint[])) ORDER BY id",
			[tenantId, [...done]],
		);
		const todo = rows.filter((r) => !NOT_INGESTION.has(r.job_type));
		rows.filter((r) => NOT_INGESTION.has(r.job_type)).forEach((r) => done.add(Number(r.id)));
		if (todo.length === 0) break;
		for (const job of todo) {
			done.add(Number(job.id));
			const worker = WORKERS[job.job_type];
			if (!worker) throw new Error(`ingestion: no worker for job ${job.id} of type ${job.job_type}`);
			let data: Record<string, unknown>;
			try {
				data = (await run(worker, job.payload)).data;
			} catch (error) {
				throw new Error(`ingestion: ${job.job_type} job ${job.id} failed: ${(error as Error).message}`, {
					cause: error,
				});
			}
			jobs[job.job_type] = (jobs[job.job_type] ?? 0) + 1;
			if (job.job_type === 'url_normalize') {
				const id = byUrl.get(job.payload.url);
				if (id) urlIds.set(Number(data.url_id), id);
			} else if (job.job_type === 'url_fetch') {
				const id = urlIds.get(Number(job.payload.url_id));
				if (id) documentIds.set(id, Number(data.document_id));
			} else if (job.job_type === 'document_embed') {
				const document = Number(data.document_id);
				embedded.set(document, (embedded.get(document) ?? 0) + Number(data.chunks_embedded));
			} else if (job.job_type === 'file_download') {
				const id = byFile.get(job.payload.file_unique_id);
				if (id) documentIds.set(id, Number(data.document_id));
			}
		}
	}

	const missing = corpus.documents.filter((d) => !documentIds.has(d.id)).map((d) => d.id);
	if (missing.length) throw new Error(`ingestion: no document was stored for ${missing.join(', ')}`);
	// each document where it was shared: the group's chat, or the sharer's private chat as a dm of theirs
	const { rows: placed } = await q(
		'SELECT id, chat_id::text AS chat, visibility, dm_owner_user_id::text AS owner FROM content.documents WHERE tenant_id = $1',
		[tenantId],
	);
	for (const d of corpus.documents) {
		const row = placed.find((r) => Number(r.id) === documentIds.get(d.id));
		const want =
			'group' in d.shared_in
				? [String(group.get(d.shared_in.group)!.chat_id), 'group', null]
				: [String(person.get(d.shared_in.dm)!.tg_user_id), 'dm', String(person.get(d.shared_in.dm)!.tg_user_id)];
		if (!row || JSON.stringify([row.chat, row.visibility, row.owner]) !== JSON.stringify(want))
			throw new Error(`ingestion: document ${d.id} stored as ${JSON.stringify(row)}, expected ${JSON.stringify(want)}`);
	}
	const { rows: chunkRows } = await q('SELECT c.id, c.document_id FROM kg.chunks c WHERE c.tenant_id = $1', [tenantId]);
	const evalIds = new Map([...documentIds].map(([e, d]) => [d, e]));
	const chunkDocuments = new Map<number, number>();
	const chunks = new Map<string, number>();
	const unembedded: string[] = [];
	for (const r of chunkRows) {
		const document = Number(r.document_id);
		chunkDocuments.set(Number(r.id), document);
		const id = evalIds.get(document);
		if (!id) continue;
		chunks.set(id, (chunks.get(id) ?? 0) + 1);
	}
	for (const [id, n] of chunks)
		if ((embedded.get(documentIds.get(id)!) ?? 0) !== n)
			unembedded.push(`${id}: ${embedded.get(documentIds.get(id)!) ?? 0} of ${n} chunks embedded`);
	const unchunked = corpus.documents.filter((d) => !chunks.get(d.id)).map((d) => d.id);
	if (unchunked.length) throw new Error(`ingestion: no chunks for ${unchunked.join(', ')}`);
	if (unembedded.length) throw new Error(`ingestion: chunks without a vector: ${unembedded.join('; ')}`);
	return {
		documentIds,
		evalIds,
		chunkDocuments,
		chunks,
		jobs,
		chatOf: (g, asker) => (g === undefined ? person.get(asker)!.tg_user_id : group.get(g)!.chat_id),
		userOf: (p) => person.get(p)!.tg_user_id,
	};
}

/** Who shares document `i`: the dm's owner; in a group, its members in turn. */
function sharerOf(d: EvalDocument, i: number, groups: Map<string, { members: string[] }>): string {
	if ('dm' in d.shared_in) return d.shared_in.dm;
	const members = groups.get(d.shared_in.group)!.members;
	return members[i % members.length];
}
