/**
 * `npm run bench:vectors`: the search of WF51 (vectorStore.searchChunks, k = 5) per vector route, same run.
 *  - exact route (no pgvector) on the test PostgreSQL: corpora of 1k / 5k / 10k / 100k chunks of 1536 dims
 *    (BENCH_VECTOR_SIZES, comma-separated), grown in one database; the asker sees all of them (the worst
 *    case: every row is scored) and, second column, a user who sees 1% (the ACL filter runs first);
 *  - pgvector HNSW (iterative scan) on PGlite with pgvector (in-process WASM, single-threaded: slower than a
 *    native server) for the sizes up to BENCH_HNSW_MAX (default 10,000; the index build is ~85 s at 10k).
 * Each cell: the median of BENCH_VECTOR_RUNS (default 7) searches after one warm-up, in ms.
 * Not part of `npm test`.
 */
import { vectorRoute } from '../nodes/KnowledgeBot/actions/vectorRoute';
import { searchChunks, upsertEmbeddings, type SearchParams } from '../nodes/KnowledgeBot/actions/vectorStore';
import { setupDatabase } from '../test/helpers/db';
import { vectorDatabase } from '../test/helpers/pglite';

const SIZES = (process.env.BENCH_VECTOR_SIZES ?? '1000,5000,10000,100000').split(',').map(Number);
const HNSW_MAX = Number(process.env.BENCH_HNSW_MAX ?? 10_000);
// PGlite builds one index per size (sizes above HNSW_MAX are skipped there)
const RUNS = Number(process.env.BENCH_VECTOR_RUNS ?? 7);
const DIMS = 1536;
const TENANT = '00000000-0000-4000-8000-0000000000d1';
type Db = Parameters<typeof upsertEmbeddings>[0];

let seed = 42;
const next = () => {
	seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
	return seed / 2 ** 32 - 0.5;
};
const vector = () => Array.from({ length: DIMS }, next);
const query = vector();

/** tenant, model, user 2 a member of -100 and -200, user 3 of -200 only; returns the model id and the two document ids */
async function schema(db: Db) {
	await db.query("INSERT INTO core.tenants (tenant_id, name) VALUES ($1, 'bench')", [TENANT]);
	const model = Number((await db.query("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('bench', 'm', 1536) RETURNING id")).rows[0].id);
	await db.query("INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status, is_member) VALUES ($1, -100, 2, 'member', true), ($1, -200, 2, 'member', true), ($1, -200, 3, 'member', true)", [TENANT]);
	const docs = await db.query("INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status) VALUES ($1, 'url', 'a', -100, 'group', 'x', 'done'), ($1, 'url', 'b', -200, 'group', 'x', 'done') RETURNING id", [TENANT]);
	return { model, big: Number(docs.rows[0].id), small: Number(docs.rows[1].id) };
}

/** adds chunks up to `total`, every 100th in the small group's document (1% visible to user 3) */
async function grow(db: Db, ids: { model: number; big: number; small: number }, from: number, total: number) {
	for (let i = from; i < total; i += 1000) {
		const n = Math.min(1000, total - i);
		const { rows } = await db.query("INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) SELECT $1, CASE WHEN g % 100 = 0 THEN $2::bigint ELSE $3::bigint END, g, 'chunk ' || g, 0, 1, 'h' FROM generate_series($4::int, $5::int) g RETURNING id", [TENANT, ids.small, ids.big, i, i + n - 1]);
		await upsertEmbeddings(db, TENANT, ids.model, rows.map((r) => ({ chunk_id: Number(r.id), vector: vector(), chunk_sha256: 'h' })));
	}
}

async function median(fn: () => Promise<unknown>): Promise<number> {
	await fn();
	const times: number[] = [];
	for (let i = 0; i < RUNS; i++) {
		const t = performance.now();
		await fn();
		times.push(performance.now() - t);
	}
	times.sort((a, b) => a - b);
	return times[Math.floor(times.length / 2)];
}

async function measure(db: Db, model: number): Promise<[number, number]> {
	const params = (user: string): SearchParams => ({ tenant_id: TENANT, model_id: model, vector: query, user, admin: false, k: 5, channel: 'dm', chat: null });
	return [await median(() => searchChunks(db, params('2'))), await median(() => searchChunks(db, params('3')))];
}

const results: { route: string; size: number; all: number; onePercent: number }[] = [];

async function exact() {
	const db = await setupDatabase();
	try {
		await db.pool.query('DROP TABLE IF EXISTS kg.chunk_embeddings_1536'); // the exact route, whatever the server
		const ids = await schema(db.pool);
		let have = 0;
		for (const size of SIZES) {
			const t = performance.now();
			await grow(db.pool, ids, have, size);
			have = size;
			await db.pool.query('VACUUM ANALYZE');
			process.stderr.write(`exact: ${size} chunks stored in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
			if ((await vectorRoute(db.pool)).route !== 'exact') throw new Error('not the exact route');
			const [all, onePercent] = await measure(db.pool, ids.model);
			results.push({ route: 'exact (PostgreSQL)', size, all, onePercent });
		}
	} finally {
		await db.drop();
	}
}

async function hnsw() {
	for (const size of SIZES.filter((s) => s <= HNSW_MAX)) {
		const vdb = await vectorDatabase();
		try {
			const ids = await schema(vdb.pool);
			await vdb.db.query('DROP INDEX kg.chunk_embeddings_1536_hnsw');
			await grow(vdb.pool, ids, 0, size);
			const t = performance.now();
			await vdb.db.query('CREATE INDEX chunk_embeddings_1536_hnsw ON kg.chunk_embeddings_1536 USING hnsw (embedding vector_cosine_ops)');
			await vdb.db.query('ANALYZE');
			process.stderr.write(`hnsw: index over ${size} chunks built in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
			const route = await vectorRoute(vdb.pool);
			const [all, onePercent] = await measure(vdb.pool, ids.model);
			results.push({ route: `pgvector ${route.pgvector_version} HNSW, iterative (PGlite)`, size, all, onePercent });
		} finally {
			await vdb.close();
		}
	}
}

async function main() {
	await exact();
	await hnsw();
	console.log(`search ms (median of ${RUNS}), k = 5, 1536 dims`);
	console.log('route | chunks | asker sees all | asker sees 1%');
	for (const r of results) console.log(`${r.route} | ${r.size} | ${r.all.toFixed(1)} | ${r.onePercent.toFixed(1)}`);
	const under = results.filter((r) => r.route.startsWith('exact') && r.all < 200).map((r) => r.size);
	console.log(`exact route under 200 ms with every chunk visible: up to ${under.length ? Math.max(...under) : 'none'} of the sizes measured`);
}

main().then(
	() => process.exit(0),
	(error) => {
		console.error(error);
		process.exit(1);
	},
);
