/**
 * `npm run bench:vectors`: the search of WF51 (vectorStore.searchChunks, k = 5) per vector route, same run.
 *  - exact route (no pgvector) on the test PostgreSQL: corpora of 1k / 5k / 10k / 100k chunks of 1536 dims
 *    (BENCH_VECTOR_SIZES, comma-separated), grown in one database; the asker sees all of them (the worst
 *    case: every row is scored) and, second column, a user who sees 1% (the ACL filter runs first);
 *  - pgvector HNSW (iterative scan) on PGlite with pgvector (in-process WASM, single-threaded: slower than a
 *    native server) for the sizes up to BENCH_HNSW_MAX (default 10,000; the index build is ~85 s at 10k).
 * Each cell: the median of BENCH_VECTOR_RUNS (default 7) searches after one warm-up, in ms.
 * Not part of `npm test`. bench/answer.bench.ts imports `searchBench` and `searchTable` (its search part).
 */
import { vectorRoute } from '../nodes/KnowledgeBot/actions/vectorRoute';
import { searchChunks, upsertEmbeddings, type SearchParams } from '../nodes/KnowledgeBot/actions/vectorStore';
import { setupDatabase } from '../test/helpers/db';
import { vectorDatabase } from '../test/helpers/pglite';

export interface SearchBenchOptions {
	/** corpus sizes in chunks, ascending (the exact route grows one database through them) */
	sizes: number[];
	/** PGlite builds one HNSW index per size; sizes above this are not measured there */
	hnswMax: number;
	/** measured searches per cell (after one warm-up); the cell is their median */
	runs: number;
}

/** One cell pair of the table: search ms with every chunk visible and with 1% visible. */
export interface SearchResult {
	route: string;
	size: number;
	all: number;
	onePercent: number;
}

const OPTIONS: SearchBenchOptions = {
	sizes: (process.env.BENCH_VECTOR_SIZES ?? '1000,5000,10000,100000').split(',').map(Number),
	hnswMax: Number(process.env.BENCH_HNSW_MAX ?? 10_000),
	runs: Number(process.env.BENCH_VECTOR_RUNS ?? 7),
};
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
	const model = Number(
		(await db.query("INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('bench', 'm', 1536) RETURNING id"))
			.rows[0].id,
	);
	await db.query(
		"INSERT INTO tg.chat_memberships_current (tenant_id, chat_id, tg_user_id, status, is_member) VALUES ($1, -100, 2, 'member', true), ($1, -200, 2, 'member', true), ($1, -200, 3, 'member', true)",
		[TENANT],
	);
	const docs = await db.query(
		"INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status) VALUES ($1, 'url', 'a', -100, 'group', 'x', 'done'), ($1, 'url', 'b', -200, 'group', 'x', 'done') RETURNING id",
		[TENANT],
	);
	return { model, big: Number(docs.rows[0].id), small: Number(docs.rows[1].id) };
}

/** adds chunks up to `total`, every 100th in the small group's document (1% visible to user 3) */
async function grow(db: Db, ids: { model: number; big: number; small: number }, from: number, total: number) {
	for (let i = from; i < total; i += 1000) {
		const n = Math.min(1000, total - i);
		const { rows } = await db.query(
			"INSERT INTO kg.chunks (tenant_id, document_id, chunk_no, text, char_start, char_end, text_sha256) SELECT $1, CASE WHEN g % 100 = 0 THEN $2::bigint ELSE $3::bigint END, g, 'chunk ' || g, 0, 1, 'h' FROM generate_series($4::int, $5::int) g RETURNING id",
			[TENANT, ids.small, ids.big, i, i + n - 1],
		);
		await upsertEmbeddings(
			db,
			TENANT,
			ids.model,
			rows.map((r) => ({ chunk_id: Number(r.id), vector: vector(), chunk_sha256: 'h' })),
		);
	}
}

async function median(fn: () => Promise<unknown>, runs: number): Promise<number> {
	await fn();
	const times: number[] = [];
	for (let i = 0; i < runs; i++) {
		const t = performance.now();
		await fn();
		times.push(performance.now() - t);
	}
	times.sort((a, b) => a - b);
	return times[Math.floor(times.length / 2)];
}

async function measure(db: Db, model: number, runs: number): Promise<[number, number]> {
	const params = (user: string): SearchParams => ({
		tenant_id: TENANT,
		model_id: model,
		vector: query,
		user,
		admin: false,
		k: 5,
		channel: 'dm',
		chat: null,
	});
	return [
		await median(() => searchChunks(db, params('2')), runs),
		await median(() => searchChunks(db, params('3')), runs),
	];
}

async function exact({ sizes, runs }: SearchBenchOptions, results: SearchResult[]) {
	const db = await setupDatabase();
	try {
		await db.pool.query('DROP TABLE IF EXISTS kg.chunk_embeddings_1536'); // the exact route, whatever the server
		const ids = await schema(db.pool);
		let have = 0;
		for (const size of sizes) {
			const t = performance.now();
			await grow(db.pool, ids, have, size);
			have = size;
			await db.pool.query('VACUUM ANALYZE');
			process.stderr.write(`exact: ${size} chunks stored in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
			if ((await vectorRoute(db.pool)).route !== 'exact') throw new Error('not the exact route');
			const [all, onePercent] = await measure(db.pool, ids.model, runs);
			const version = (await db.pool.query("SELECT current_setting('server_version') AS v")).rows[0].v as string;
			results.push({ route: `exact (PostgreSQL ${version.split(' ')[0]})`, size, all, onePercent });
		}
	} finally {
		await db.drop();
	}
}

async function hnsw({ sizes, hnswMax, runs }: SearchBenchOptions, results: SearchResult[]) {
	for (const size of sizes.filter((s) => s <= hnswMax)) {
		const vdb = await vectorDatabase();
		try {
			const ids = await schema(vdb.pool);
			await vdb.db.query('DROP INDEX kg.chunk_embeddings_1536_hnsw');
			await grow(vdb.pool, ids, 0, size);
			const t = performance.now();
			await vdb.db.query(
				'CREATE INDEX chunk_embeddings_1536_hnsw ON kg.chunk_embeddings_1536 USING hnsw (embedding vector_cosine_ops)',
			);
			await vdb.db.query('ANALYZE');
			process.stderr.write(
				`hnsw: index over ${size} chunks built in ${((performance.now() - t) / 1000).toFixed(1)} s\n`,
			);
			const route = await vectorRoute(vdb.pool);
			const [all, onePercent] = await measure(vdb.pool, ids.model, runs);
			results.push({ route: `pgvector ${route.pgvector_version} HNSW, iterative (PGlite)`, size, all, onePercent });
		} finally {
			await vdb.close();
		}
	}
}

/** Both routes over `options.sizes` (exact on the test PostgreSQL, HNSW on PGlite up to `hnswMax`); progress on stderr. */
export async function searchBench(options: SearchBenchOptions): Promise<SearchResult[]> {
	const results: SearchResult[] = [];
	await exact(options, results);
	await hnsw(options, results);
	return results;
}

/** The printed table (one line per route and size) and the largest size the exact route searched under 200 ms. */
export function searchTable(results: SearchResult[], { sizes, hnswMax, runs }: SearchBenchOptions): string[] {
	const lines = [`search ms (median of ${runs}), k = 5, 1536 dims`, 'route | chunks | asker sees all | asker sees 1%'];
	for (const r of results) lines.push(`${r.route} | ${r.size} | ${r.all.toFixed(1)} | ${r.onePercent.toFixed(1)}`);
	const skipped = sizes.filter((s) => s > hnswMax);
	if (skipped.length)
		lines.push(
			`pgvector HNSW (PGlite) | ${skipped.join(', ')} | not measured: the index build in PGlite's WASM takes about a minute per 10k rows (BENCH_HNSW_MAX=${hnswMax})`,
		);
	const under = results.filter((r) => r.route.startsWith('exact') && r.all < 200).map((r) => r.size);
	lines.push(
		`exact route under 200 ms with every chunk visible: up to ${under.length ? Math.max(...under) : 'none'} of the sizes measured`,
	);
	return lines;
}

async function main() {
	const results = await searchBench(OPTIONS);
	for (const line of searchTable(results, OPTIONS)) console.log(line);
}

if (require.main === module) {
	main().then(
		() => process.exit(0),
		(error) => {
			console.error(error);
			process.exit(1);
		},
	);
}
