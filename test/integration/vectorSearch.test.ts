/**
 * The vector SQL of both routes (vectorRoute.ts) — pgvector HNSW on PGlite with pgvector (FACTS.md), and the
 * exact route on the real PostgreSQL, the same tests for each: Document → Embed (WF41) against a stand-in
 * embeddings server, and the retrieval of WF51 with its ACL — the privacy property: no query returns a `dm`
 * chunk to anyone but its owner or an admin, nor a chunk of another tenant, nor a group chunk to a
 * non-member; asked in a group, nothing but that group's chunks (the whole group reads the reply); and
 * everything visible is found, nearest first.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { chunkOperation } from '../../nodes/KnowledgeBot/actions/document/chunk.operation';
import { embedOperation } from '../../nodes/KnowledgeBot/actions/document/embed.operation';
import { retrieveChunks } from '../../nodes/KnowledgeBot/actions/qa/retrieve';
import { hashedVector, startEmbeddings, type EmbeddingStandIn } from '../helpers/embeddingStandIn';
import { knowledgeRunner } from '../helpers/knowledgeOps';
import { forEachVectorBackend } from '../helpers/vectorBackends';

let embeddings: EmbeddingStandIn;
let api: 'gemini' | 'openai' = 'gemini';
const TENANT_A = '00000000-0000-4000-8000-00000000000a';
const TENANT_B = '00000000-0000-4000-8000-00000000000b';

beforeAll(async () => {
	embeddings = await startEmbeddings();
});
afterAll(async () => {
	await embeddings.close();
});

forEachVectorBackend((backend) => {
	const vdb = {
		get pool() {
			return backend().pool;
		},
		db: { query: <R = Record<string, unknown>>(sql: string, params?: unknown[]) => backend().query<R>(sql, params) },
	};
	const { run, failure } = knowledgeRunner(() => vdb.pool, '2d3e4f5a-6b7c-4d8e-9fa0-b1c2d3e4f5a6', {
		embeddings: () => ({ api, baseUrl: embeddings.baseUrl, apiKey: 'k' }),
	});
	let model: number;

	beforeAll(async () => {
		await vdb.db.query("INSERT INTO core.tenants (tenant_id, name) VALUES ($1, 'A'), ($2, 'B')", [TENANT_A, TENANT_B]);
		model = Number(
			(
				await vdb.db.query<{ id: number }>(
					"INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536) RETURNING id",
				)
			).rows[0].id,
		);
	});

	let sourceNo = 0;
	async function document(
		tenant: string,
		text: string,
		place: { chat_id: number; visibility: 'group' | 'dm'; owner?: number },
	) {
		const { rows } = await vdb.db.query<{ id: number }>(
			"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, dm_owner_user_id, text, status) VALUES ($1, 'url', $2, $3, $4, $5, $6, 'done') RETURNING id",
			[tenant, `url:${++sourceNo}`, place.chat_id, place.visibility, place.owner ?? null, text],
		);
		return Number(rows[0].id);
	}

	test('Embed: every chunk once, nothing on a re-run, only changed chunks after a re-chunk (Gemini and OpenAI styles)', async () => {
		const text = Array.from({ length: 300 }, (_, i) => `fact ${i} about vector indexes.`).join(' ');
		const id = await document(TENANT_A, text, { chat_id: -1, visibility: 'group' });
		const chunked = (await run(chunkOperation, { tenant_id: TENANT_A, document_id: id })).data;
		const first = (await run(embedOperation, { tenant_id: TENANT_A, document_id: id, model_id: model })).data;
		assert.deepEqual(
			[first.embeddings_upserted, first.chunks_embedded, first.vector_route],
			[chunked.chunks_total, chunked.chunks_total, backend().route],
		);
		assert.equal(embeddings.requests.at(-1)!.path, '/v1beta/models/gemini-embedding-001:batchEmbedContents');
		const again = (await run(embedOperation, { tenant_id: TENANT_A, document_id: id, model_id: model })).data;
		assert.equal(again.embeddings_upserted, 0);
		await vdb.db.query('UPDATE content.documents SET text = $2 WHERE id = $1', [
			id,
			text.replace('fact 299', 'fact two hundred ninety-nine'),
		]);
		await run(chunkOperation, { tenant_id: TENANT_A, document_id: id });
		api = 'openai';
		const changed = (await run(embedOperation, { tenant_id: TENANT_A, document_id: id, model_id: model })).data;
		api = 'gemini';
		assert.equal(changed.embeddings_upserted, 1);
		assert.equal(embeddings.requests.at(-1)!.path, '/v1/embeddings');
		const { rows } = await vdb.db.query<{ stale: number }>(
			`SELECT count(*)::int AS stale FROM ${backend().table} e JOIN kg.chunks c ON c.id = e.chunk_id WHERE e.chunk_sha256 <> c.text_sha256`,
		);
		assert.equal(rows[0].stale, 0);
	});

	test('Embed failures: 429 retryable, wrong dimensions not, a 768-dimension model refused; nothing written', async () => {
		const id = await document(TENANT_A, 'short text for failures', { chat_id: -1, visibility: 'group' });
		await run(chunkOperation, { tenant_id: TENANT_A, document_id: id });
		embeddings.failNext(429);
		const limited = await failure(embedOperation, { tenant_id: TENANT_A, document_id: id, model_id: model });
		assert.deepEqual([limited.statusCode, limited.kind, limited.retryable], [502, 'rate_limit', true]);
		embeddings.wrongDims = true;
		const dims = await failure(embedOperation, { tenant_id: TENANT_A, document_id: id, model_id: model });
		embeddings.wrongDims = false;
		assert.deepEqual([dims.statusCode, dims.retryable], [502, false]);
		assert.match(dims.message, /8 dimensions, the model is declared with 1536/);
		const small = Number(
			(
				await vdb.db.query<{ id: number }>(
					"INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'small', 768) RETURNING id",
				)
			).rows[0].id,
		);
		const refused = await failure(embedOperation, { tenant_id: TENANT_A, document_id: id, model_id: small });
		assert.deepEqual([refused.statusCode, refused.details.code], [422, 'MODEL_DIMS']);
		const { rows } = await vdb.db.query<{ n: number }>(
			`SELECT count(*)::int AS n FROM ${backend().table} e JOIN kg.chunks c ON c.id = e.chunk_id WHERE c.document_id = $1`,
			[id],
		);
		assert.equal(rows[0].n, 0);
		const foreign = await failure(embedOperation, { tenant_id: TENANT_B, document_id: id, model_id: model });
		assert.equal(foreign.details.code, 'DOCUMENT_NOT_FOUND');
	});

	test('privacy property: every query returns exactly the chunks the readers of the reply may see — in a dm: own DMs, chats the user is a member of, all for admins; in a group: that group only (admins too); never another tenant', async () => {
		await vdb.db.query(`DELETE FROM ${backend().table}`); // only this test's corpus
		// tenant A: admin 1; users 2..6; groups -100 (members 2,3; 5 restricted and left), -200 (members 3, 4 restricted; 5 left), -300 (nobody); DMs of 2 and 3
		const users = [1, 2, 3, 4, 5, 6];
		await vdb.db.query(
			"INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) SELECT $1, u, CASE WHEN u = 1 THEN 'admin' ELSE 'user' END FROM unnest($2::bigint[]) u",
			[TENANT_A, users],
		);
		// [chat, user, status, Telegram's is_member]
		const memberships: [number, number, string, boolean][] = [
			[-100, 2, 'member', true],
			[-100, 3, 'administrator', true],
			[-100, 5, 'restricted', false],
			[-200, 3, 'member', true],
			[-200, 4, 'restricted', true],
			[-200, 5, 'left', false],
		];
		for (const [chat, user, status, isMember] of memberships) {
			await vdb.db.query(
				'INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status, is_member) VALUES ($1, $2, $3, $4, $5)',
				[TENANT_A, chat, user, status, isMember],
			);
		}
		await vdb.db.query(
			"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, -100, 6, 'member')",
			[TENANT_B],
		); // membership in the other tenant only
		const places = [
			{ tenant: TENANT_A, chat_id: -100, visibility: 'group' as const },
			{ tenant: TENANT_A, chat_id: -200, visibility: 'group' as const },
			{ tenant: TENANT_A, chat_id: -300, visibility: 'group' as const },
			{ tenant: TENANT_A, chat_id: 2, visibility: 'dm' as const, owner: 2 },
			{ tenant: TENANT_A, chat_id: 3, visibility: 'dm' as const, owner: 3 },
			{ tenant: TENANT_B, chat_id: -100, visibility: 'group' as const },
			{ tenant: TENANT_B, chat_id: 6, visibility: 'dm' as const, owner: 6 },
		];
		const words = ['budget', 'roadmap', 'vector', 'privacy', 'hiring', 'launch', 'index', 'salary'];
		const chunkPlace = new Map<number, (typeof places)[number]>();
		for (const [p, place] of places.entries()) {
			for (let d = 0; d < 3; d++) {
				const text = `${words[(p + d) % words.length]} ${words[(p * 3 + d) % words.length]} note ${p}-${d}`;
				const id = await document(place.tenant, text, place);
				const { rows } = await vdb.db.query<{ id: number }>(
					'INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) VALUES ($1, $2, 0, $3, 0, length($3), md5($3)) RETURNING id',
					[place.tenant, id, text],
				);
				const chunkId = Number(rows[0].id);
				chunkPlace.set(chunkId, place);
				await backend().store({
					chunk_id: chunkId,
					model_id: model,
					tenant_id: place.tenant,
					vector: hashedVector(text, 1536),
					text,
				});
			}
		}
		const member = (user: number, chat: number) =>
			memberships.some(([c, u, , isMember]) => c === chat && u === user && isMember);
		/** what `user` may be shown where the reply goes: `null` = their own dm, else that group (everyone in it reads the reply) */
		const visible = (user: number, where: number | null, place: (typeof places)[number]) =>
			place.tenant === TENANT_A &&
			(where === null
				? user === 1 || (place.visibility === 'dm' ? place.owner === user : member(user, place.chat_id))
				: place.visibility === 'group' && place.chat_id === where && (user === 1 || member(user, where)));
		await backend().exactScan(true); // exact search: the completeness half of the property
		for (const user of users) {
			for (const where of [null, -100, -200, -300]) {
				const ctx = {
					tenant_id: TENANT_A,
					tg_user_id: user,
					role: (user === 1 ? 'admin' : 'user') as 'admin' | 'user',
					is_allowed: true,
					channel: where === null ? ('dm' as const) : ('group' as const),
					chat_id: where ?? user,
				};
				const expected = [...chunkPlace.entries()]
					.filter(([, place]) => visible(user, where, place))
					.map(([id]) => id)
					.sort((a, b) => a - b);
				for (const question of [...words, 'note', 'anything at all']) {
					const got = await retrieveChunks(vdb.pool, ctx, hashedVector(question, 1536), { model_id: model, k: 100 });
					for (const chunk of got)
						assert.ok(
							visible(user, where, chunkPlace.get(chunk.chunk_id)!),
							`user ${user} in ${where ?? 'dm'} got chunk ${chunk.chunk_id} (${JSON.stringify(chunkPlace.get(chunk.chunk_id))})`,
						);
					assert.deepEqual(
						got.map((c) => c.chunk_id).sort((a, b) => a - b),
						expected,
						`user ${user} in ${where ?? 'dm'}, question "${question}"`,
					);
					for (let i = 1; i < got.length; i++) assert.ok(got[i - 1].score >= got[i].score - 1e-9, 'nearest first');
					// hybrid retrieval (issue 30): the same rows, each scored (1 − w) × its cosine + w × its full-text
					// rank, best first — the ACL filter as strict as on the vector route (three questions: a word some
					// chunks hold, one all hold, none — enough for the filter, and PGlite is slow at it)
					if (!['budget', 'note', 'anything at all'].includes(question)) continue;
					const hybrid = await retrieveChunks(vdb.pool, ctx, hashedVector(question, 1536), {
						model_id: model,
						k: 100,
						hybrid: { question, weight: 0.6 },
					});
					assert.deepEqual(
						hybrid.map((c) => c.chunk_id).sort((a, b) => a - b),
						expected,
						`hybrid: user ${user} in ${where ?? 'dm'}, question "${question}"`,
					);
					const cosine = new Map(got.map((c) => [c.chunk_id, c.score]));
					for (const [i, c] of hybrid.entries()) {
						assert.ok(Math.abs(c.cosine! - cosine.get(c.chunk_id)!) < 1e-5, 'the cosine of the vector route');
						const holds = c.text.split(' ').includes(question);
						assert.equal(c.lexical! > 0, holds, `lexical > 0 exactly when "${c.text}" holds "${question}"`);
						assert.ok(Math.abs(c.score - (0.4 * c.cosine! + 0.6 * c.lexical!)) < 1e-5, 'the hybrid score');
						if (i > 0) assert.ok(hybrid[i - 1].score >= c.score - 1e-9, 'best first');
					}
				}
			}
		}
		await backend().exactScan(false);
		const top = await retrieveChunks(
			vdb.pool,
			{ tenant_id: TENANT_A, tg_user_id: 1, role: 'admin', is_allowed: true, channel: 'dm', chat_id: null },
			hashedVector('budget roadmap', 1536),
			{ model_id: model, k: 3 },
		);
		assert.equal(top.length, 3);
		assert.match(top[0].text, /budget|roadmap/);
		await assert.rejects(
			retrieveChunks(
				vdb.pool,
				{ tenant_id: TENANT_A, tg_user_id: 2, role: 'blocked', is_allowed: false, channel: 'dm', chat_id: null },
				hashedVector('x', 1536),
				{ model_id: model, k: 5 },
			),
			(e: { statusCode?: number }) => e.statusCode === 403,
		);
	});
});
