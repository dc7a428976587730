/**
 * The corpus and the questions of `npm run bench:answer`, seeded straight into a migrated database (no WF41:
 * the vectors are the embeddings stand-in's own `hashedVector`, so a question embedded by the stand-in finds
 * the chunks that share its words).
 *  - asker: user 2, a member of group -100; user 3, a member of group -200 only;
 *  - documents (each `chunksPerDoc` chunks of ~40 words): 70% in group -100, 10% in group -200, 10% in user 2's
 *    dm, 10% in user 3's dm — user 2 may see group -100 and their own dm, nothing else;
 *  - questions: six words of a chunk user 2 may see, asked alternately in group -100 and in user 2's dm.
 * `allowed(channel)` is the set of chunk ids a reply in that channel may cite (the bench refuses to report a
 * run in which any answer cites another chunk).
 */
import type { Pool } from 'pg';
import { upsertEmbeddings } from '../nodes/KnowledgeBot/actions/vectorStore';
import { hashedVector } from '../test/helpers/embeddingStandIn';

export const ASKER = 2;
export const GROUP = -100;
const OTHER_GROUP = -200;
const OTHER_USER = 3;

export interface Question {
	channel: 'group' | 'dm';
	chat_id: number;
	question: string;
}

let seed = 7;
const random = () => {
	seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
	return seed / 2 ** 32;
};
const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)];

const SYLLABLES = [
	'ka',
	'ro',
	'mi',
	'te',
	'su',
	'lan',
	'vor',
	'del',
	'pi',
	'nex',
	'qua',
	'bri',
	'zo',
	'hul',
	'fen',
	'gat',
];
/** 600 distinct made-up words (deterministic) */
const WORDS = Array.from(
	new Set(Array.from({ length: 2000 }, () => pick(SYLLABLES) + pick(SYLLABLES) + pick(SYLLABLES))),
).slice(0, 600);

export async function seedCorpus(pool: Pool, tenant: string, totalChunks: number, chunksPerDoc = 50) {
	const q = (sql: string, params: unknown[] = []) => pool.query(sql, params);
	await q("INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) VALUES ($1, $2, 'user'), ($1, $3, 'user')", [
		tenant,
		ASKER,
		OTHER_USER,
	]);
	await q('INSERT INTO core.tenant_chats (tenant_id, chat_id) VALUES ($1, $2), ($1, $3)', [tenant, GROUP, OTHER_GROUP]);
	await q(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status) VALUES ($1, $2, $3, 'member'), ($1, $4, $5, 'member')",
		[tenant, GROUP, ASKER, OTHER_GROUP, OTHER_USER],
	);
	const modelId = Number(
		(
			await q(
				"INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536) RETURNING id",
			)
		).rows[0].id,
	);
	const places: [number, 'group' | 'dm', number | null][] = [
		...Array<[number, 'group', null]>(7).fill([GROUP, 'group', null]),
		[OTHER_GROUP, 'group', null],
		[ASKER, 'dm', ASKER],
		[OTHER_USER, 'dm', OTHER_USER],
	];
	const inGroup = new Set<number>();
	const inAskersDm = new Set<number>();
	const visibleTexts: string[] = [];
	for (let d = 0; d * chunksPerDoc < totalChunks; d++) {
		const [chat, visibility, owner] = places[d % places.length];
		const texts = Array.from({ length: Math.min(chunksPerDoc, totalChunks - d * chunksPerDoc) }, () =>
			Array.from({ length: 40 }, () => pick(WORDS)).join(' '),
		);
		const doc = (
			await q(
				"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, dm_owner_user_id, text, status, title) VALUES ($1, 'url', $2, $3, $4, $5, $6, 'done', $2) RETURNING id",
				[tenant, `url:bench-${d}`, chat, visibility, owner, texts.join('\n')],
			)
		).rows[0].id;
		const { rows } = await q(
			'INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) SELECT $1, $2, n - 1, t, 0, length(t), md5(t) FROM unnest($3::text[]) WITH ORDINALITY AS u(t, n) RETURNING id, chunk_no',
			[tenant, doc, texts],
		);
		await upsertEmbeddings(
			pool,
			tenant,
			modelId,
			rows.map((r) => ({
				chunk_id: Number(r.id),
				vector: hashedVector(texts[r.chunk_no], 1536),
				chunk_sha256: 'bench',
			})),
		);
		const ids = rows.map((r) => Number(r.id));
		if (chat === GROUP) ids.forEach((id) => inGroup.add(id));
		if (chat === ASKER) ids.forEach((id) => inAskersDm.add(id));
		if (chat === GROUP || chat === ASKER) visibleTexts.push(...texts);
	}
	await q('VACUUM ANALYZE');
	return {
		modelId,
		/** chunk ids a reply in `channel` may cite: the group's in the group; the group's and the asker's dm in the dm */
		allowed: (channel: 'group' | 'dm') => (channel === 'group' ? inGroup : new Set([...inGroup, ...inAskersDm])),
		questions(n: number): Question[] {
			return Array.from({ length: n }, (_, i) => {
				const words = pick(visibleTexts).split(' ');
				const start = Math.floor(random() * (words.length - 6));
				const channel = i % 2 === 0 ? 'group' : 'dm';
				return {
					channel,
					chat_id: channel === 'group' ? GROUP : ASKER,
					question: `What do we know about ${words.slice(start, start + 6).join(' ')}?`,
				};
			});
		},
	};
}
