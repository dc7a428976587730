/**
 * db:migrate on the test server: every schema of seed 003 is created, and a migration that needs an
 * extension the server lacks (pgvector here) is reported, not recorded, and applied on a later run
 * once the extension is there (simulated with a directory whose requirement the server meets).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { testSkipIf } from '../helpers/skip';
import { Client } from 'pg';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres, createDatabase } = require('../../scripts/lib/postgres');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrate, describeVectorStore } = require('../../scripts/lib/migrate');

let server: { url: string; stop(): Promise<void> };
const dbs: { url: string; drop(): Promise<void> }[] = [];

beforeAll(async () => {
	server = await resolvePostgres();
});
afterAll(async () => {
	for (const db of dbs) await db.drop();
	await server.stop();
});

async function fresh() {
	const db = await createDatabase(server.url);
	dbs.push(db);
	return db.url as string;
}

async function query(url: string, sql: string, params: unknown[] = []) {
	const client = new Client({ connectionString: url });
	await client.connect();
	try {
		return (await client.query(sql, params)).rows;
	} finally {
		await client.end();
	}
}

test('every table of seed 003 exists after one run; a second run applies nothing', async () => {
	const url = await fresh();
	await migrate(url);
	const tables = await query(
		url,
		`SELECT table_schema || '.' || table_name AS t FROM information_schema.tables
		WHERE table_schema IN ('core','tg','content','kg','audit','ops','raw') ORDER BY 1`,
	);
	const names = tables.map((r) => r.t);
	for (const expected of [
		'tg.users',
		'tg.chats',
		'tg.messages',
		'tg.message_versions',
		'tg.message_attachments',
		'tg.files',
		'tg.file_instances',
		'tg.chat_member_events',
		'tg.chat_memberships_current',
		'content.urls',
		'content.url_fetches',
		'content.blob_objects',
		'content.documents',
		'kg.chunks',
		'kg.embedding_models',
		'audit.qa_sessions',
		'audit.qa_turns',
		'audit.qa_citations',
		'core.bot_transport_state',
		'ops.webhook_health_snapshots',
		'ops.bot_transport_events',
	]) {
		assert.ok(names.includes(expected), `${expected} missing`);
	}
	const again = await migrate(url);
	assert.deepEqual(again.applied, []);
});

testSkipIf(
	process.env.CONTRACTS_TEST_PGVECTOR === '1' &&
		'this server has pgvector, so the missing-extension path cannot happen here (probed by test/jest/globalSetup.ts)',
)(
	'pgvector absent: 007 is reported with the reason and left unrecorded, the rest migrates (011 too), and the vector store reported is the exact one',
	async () => {
		const url = await fresh();
		const result = await migrate(url);
		assert.deepEqual(
			result.missing.map((m: { file: string }) => m.file),
			['007_kg_vectors.sql'],
		);
		assert.match(result.missing[0].reason, /extension "vector" is not available/);
		const recorded = await query(url, 'SELECT filename FROM public.contracts_migrations ORDER BY 1');
		assert.ok(!recorded.some((r) => r.filename === '007_kg_vectors.sql'));
		assert.ok(recorded.some((r) => r.filename === '006_knowledge_schema.sql'));
		assert.ok(recorded.some((r) => r.filename === '011_kg_vectors_exact.sql'));
		assert.deepEqual(result.vector_store, {
			route: 'exact',
			table: 'kg.chunk_embeddings_1536_exact',
			pgvector_version: null,
		});
		assert.match(
			describeVectorStore(result.vector_store),
			/^exact search on kg\.chunk_embeddings_1536_exact \(no pgvector here/,
		);
	},
);

test("the vector store reported follows the tables: pgvector HNSW where 007's table exists, none without either", async () => {
	const url = await fresh();
	await migrate(url);
	await query(
		url,
		'DROP TABLE IF EXISTS kg.chunk_embeddings_1536; CREATE TABLE kg.chunk_embeddings_1536 (chunk_id bigint)',
	); // stands for 007's table
	assert.equal((await migrate(url)).vector_store.route, 'pgvector_hnsw');
	await query(url, 'DROP TABLE kg.chunk_embeddings_1536; DROP TABLE kg.chunk_embeddings_1536_exact');
	const none = (await migrate(url)).vector_store;
	assert.equal(none.route, null);
	assert.match(describeVectorStore(none), /^none/);
	assert.match(
		describeVectorStore({ route: 'pgvector_hnsw', table: 'kg.chunk_embeddings_1536', pgvector_version: '0.7.4' }),
		/pgvector < 0\.8: a filtered search that comes back short is re-run exactly/,
	);
	assert.match(
		describeVectorStore({ route: 'pgvector_hnsw', table: 'kg.chunk_embeddings_1536', pgvector_version: '0.8.0' }),
		/iterative scans keep k/,
	);
});

test('a migration whose extension becomes available is applied by the next run', async () => {
	const url = await fresh();
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
	fs.writeFileSync(path.join(dir, '001_base.sql'), 'CREATE TABLE base_t (id int);');
	fs.writeFileSync(path.join(dir, '002_ext.sql'), '-- requires-extension: no_such_ext_x\nCREATE TABLE ext_t (id int);');
	const first = await migrate(url, { dir });
	assert.deepEqual(
		[first.applied, first.missing.map((m: { file: string }) => m.file)],
		[['001_base.sql'], ['002_ext.sql']],
	);
	// the "installed" extension: the server offers plpgsql everywhere
	fs.writeFileSync(path.join(dir, '002_ext.sql'), '-- requires-extension: plpgsql\nCREATE TABLE ext_t (id int);');
	const second = await migrate(url, { dir });
	assert.deepEqual([second.applied, second.missing], [['002_ext.sql'], []]);
	assert.deepEqual(await query(url, 'SELECT count(*)::int AS n FROM ext_t'), [{ n: 0 }]);
	fs.rmSync(dir, { recursive: true });
});
