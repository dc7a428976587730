/**
 * Filtered search keeps its k on the pgvector route (issue 12): on PGlite with pgvector (0.8.x, FACTS.md),
 * a user who may see 5 of 10,000 chunks asks for k = 5 and gets those 5, nearest first — with pgvector's
 * iterative scan (the route's default there), and with the fallback of pgvector < 0.8 (the route forced to
 * no iterative scan: a short HNSW result re-run exactly). The plain HNSW scan of the same query is shown to
 * lose them (the ACL filter after the index scan), so these tests can fail.
 * The expected order is computed here in double precision from the vectors the test generated.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { retrieveChunks } from '../../nodes/KnowledgeBot/actions/qa/retrieve';
import { vectorRoute, type VectorRoute } from '../../nodes/KnowledgeBot/actions/vectorRoute';
import { searchChunks, upsertEmbeddings } from '../../nodes/KnowledgeBot/actions/vectorStore';
import { SEARCH_CHUNKS } from '../../nodes/shared/statements/content';
import { vectorDatabase } from '../helpers/pglite';

const TENANT = '00000000-0000-4000-8000-0000000000c1';
const TOTAL = 10_000;
const VISIBLE = 5;
const DIMS = 1536;
let vdb: Awaited<ReturnType<typeof vectorDatabase>>;
let model: number;
const vectors = new Map<number, number[]>();
let visibleIds: number[];

/** a seeded generator (LCG): the corpus is the same on every run */
function random(seed: number) {
	let s = seed >>> 0;
	return () => {
		s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
		return s / 2 ** 32 - 0.5;
	};
}
const next = random(12);
/** components with 3 decimals: the vectors' text (what upsertEmbeddings sends) is a quarter of full floats' */
const vector = () => Array.from({ length: DIMS }, () => Math.round(next() * 1000) / 1000);
const query = vector();

function cosine(a: number[], b: number[]) {
	let dot = 0;
	let na = 0;
	let nb = 0;
	for (let i = 0; i < a.length; i++) {
		dot += a[i] * b[i];
		na += a[i] * a[i];
		nb += b[i] * b[i];
	}
	return dot / Math.sqrt(na * nb);
}

beforeAll(async () => {
	vdb = await vectorDatabase();
	const q = (sql: string, params: unknown[] = []) => vdb.db.query<Record<string, unknown>>(sql, params);
	await q("INSERT INTO core.tenants (tenant_id, name) VALUES ($1, 'C')", [TENANT]);
	model = Number(
		(await q("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'm', 1536) RETURNING id"))
			.rows[0].id,
	);
	// user 2 is a member of -100 only; -100's document holds 5 chunks spread among 10,000
	await q(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status, is_member) VALUES ($1, -100, 2, 'member', true), ($1, -200, 3, 'member', true)",
		[TENANT],
	);
	const docs = await q(
		"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status) VALUES ($1, 'url', 'url:seen', -100, 'group', 'x', 'done'), ($1, 'url', 'url:other', -200, 'group', 'x', 'done') RETURNING id",
		[TENANT],
	);
	const [seen, other] = docs.rows.map((r) => Number(r.id));
	const visibleAt = new Set(Array.from({ length: VISIBLE }, (_, i) => 1_000 + i * 1_999));
	await q(
		"INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) SELECT $1, CASE WHEN i = ANY($4::int[]) THEN $2::bigint ELSE $3::bigint END, i, 'chunk ' || i, 0, 1, 'h' FROM generate_series(0, $5::int - 1) i",
		[TENANT, seen, other, [...visibleAt], TOTAL],
	);
	const chunks = (await q('SELECT id, document_id FROM kg.chunks WHERE tenant_id = $1 ORDER BY id', [TENANT])).rows;
	visibleIds = chunks.filter((c) => Number(c.document_id) === seen).map((c) => Number(c.id));
	assert.equal(visibleIds.length, VISIBLE);
	// the index is built once after the rows are in (far faster than row by row): migration 007's HNSW index on
	// the same column and operator class, with a smaller graph (m = 8, ef_construction = 16 instead of pgvector's
	// 16 / 64) — the build over 10,000 × 1536 in WASM takes a fifth of the time. What is tested is the route's
	// filter over any HNSW graph: the plain scan still loses the visible chunks and the route still finds them.
	await q('DROP INDEX kg.chunk_embeddings_1536_hnsw');
	for (let i = 0; i < chunks.length; i += 500) {
		const batch = chunks.slice(i, i + 500).map((c) => {
			const v = vector();
			vectors.set(Number(c.id), v);
			return { chunk_id: Number(c.id), vector: v, chunk_sha256: 'h' };
		});
		await upsertEmbeddings(vdb.pool, TENANT, model, batch);
	}
	await q(
		'CREATE INDEX chunk_embeddings_1536_hnsw ON kg.chunk_embeddings_1536 USING hnsw (embedding vector_cosine_ops) WITH (m = 8, ef_construction = 16)',
	);
	await q('ANALYZE');
}, 15 * 60_000);
afterAll(async () => vdb?.close());

const member = {
	tenant_id: TENANT,
	tg_user_id: 2,
	role: 'user' as const,
	is_allowed: true,
	channel: 'group' as const,
	chat_id: -100,
};
const params = (k: number) => ({
	tenant_id: TENANT,
	model_id: model,
	vector: query,
	user: '2',
	admin: false,
	k,
	channel: 'group',
	chat: '-100',
});
/** the 5 visible chunks, nearest first (ties by id) */
const expected = () =>
	[...visibleIds].sort((a, b) => cosine(vectors.get(b)!, query) - cosine(vectors.get(a)!, query) || a - b);

test('the route on PGlite is pgvector HNSW with iterative scans (pgvector ≥ 0.8)', async () => {
	const route = await vectorRoute(vdb.pool);
	assert.equal(route.route, 'pgvector_hnsw');
	assert.ok(route.iterative_scan, `pgvector ${route.pgvector_version}`);
});

test('without iterative scan or fallback, the HNSW scan filtered by the ACL loses visible chunks (what the route must prevent)', async () => {
	const plan = (
		await vdb.db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${SEARCH_CHUNKS}`, [
			TENANT,
			model,
			`[${query.join(',')}]`,
			'2',
			false,
			VISIBLE,
			'group',
			'-100',
		])
	).rows
		.map((r) => r['QUERY PLAN'])
		.join('\n');
	assert.match(plan, /Index Scan using chunk_embeddings_1536_hnsw/);
	const { rows } = await vdb.db.query(SEARCH_CHUNKS, [
		TENANT,
		model,
		`[${query.join(',')}]`,
		'2',
		false,
		VISIBLE,
		'group',
		'-100',
	]);
	assert.ok(rows.length < VISIBLE, `the plain scan found ${rows.length}`);
});

test('a user who may see 5 of 10,000 chunks gets those 5, nearest first (iterative scan, through retrieveChunks)', async () => {
	const got = await retrieveChunks(vdb.pool, member, query, { model_id: model, k: VISIBLE });
	assert.deepEqual(
		got.map((c) => c.chunk_id),
		expected(),
	);
	for (const c of got)
		assert.ok(Math.abs(c.score - cosine(vectors.get(c.chunk_id)!, query)) < 1e-5, `score of ${c.chunk_id}`);
	const wider = await retrieveChunks(vdb.pool, member, query, { model_id: model, k: 20 });
	assert.deepEqual(
		wider.map((c) => c.chunk_id),
		expected(),
		'k = 20: all 5 visible and nothing else',
	);
	const top2 = await retrieveChunks(vdb.pool, member, query, { model_id: model, k: 2 });
	assert.deepEqual(
		top2.map((c) => c.chunk_id),
		expected().slice(0, 2),
	);
});

test('an iterative scan that stops at hnsw.max_scan_tuples (as on a corpus far beyond its 20,000 default) still gets the 5: the short result is re-run exactly', async () => {
	await vdb.db.query('SET hnsw.max_scan_tuples = 300');
	try {
		const route = await vectorRoute(vdb.pool);
		assert.ok(route.iterative_scan);
		const { rows } = await searchChunks(vdb.pool, params(VISIBLE), route);
		assert.deepEqual(
			rows.map((r) => Number(r.chunk_id)),
			expected(),
		);
	} finally {
		await vdb.db.query('RESET hnsw.max_scan_tuples');
	}
});

test('pgvector < 0.8 (route forced without iterative scan): the short HNSW result is re-run exactly and gets the same 5, nearest first', async () => {
	const route: VectorRoute = { ...(await vectorRoute(vdb.pool)), iterative_scan: false };
	for (const k of [VISIBLE, 20]) {
		const { rows } = await searchChunks(vdb.pool, params(k), route);
		assert.deepEqual(
			rows.map((r) => Number(r.chunk_id)),
			expected(),
			`k = ${k}`,
		);
	}
	// a user who sees nothing: no rows, on either path
	for (const r of [route, await vectorRoute(vdb.pool)])
		assert.equal((await searchChunks(vdb.pool, { ...params(5), user: '9' }, r)).rows.length, 0);
});
