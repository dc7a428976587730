/**
 * The exact vector route refuses a question vector it cannot compare (a component beyond float32, which
 * would score every visible row NaN and cite chunks in id order): 502 EMBEDDINGS_FAILED, as pgvector refuses
 * the same vector. Real PostgreSQL (the exact route: migration 011, no pgvector needed).
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { ContractError } from '../../nodes/shared/errors';
import { searchChunks } from '../../nodes/KnowledgeBot/actions/vectorStore';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => db?.drop());

test('a question vector with a component beyond float32 → 502 EMBEDDINGS_FAILED on the exact route, before any row is scored', async () => {
	const vector = Array.from({ length: 1536 }, (_, i) => (i === 7 ? 1e39 : 0.01));
	const params = {
		tenant_id: '00000000-0000-4000-8000-0000000000d1',
		model_id: 1,
		vector,
		user: '2',
		admin: false,
		k: 5,
		channel: 'dm',
		chat: '2',
	};
	const exact = {
		route: 'exact' as const,
		table: 'kg.chunk_embeddings_1536_exact',
		pgvector_version: null,
		iterative_scan: false,
	};
	await assert.rejects(searchChunks(db.pool, params, exact as never), (error: unknown) => {
		assert.ok(error instanceof ContractError);
		assert.deepEqual([error.statusCode, error.details.code], [502, 'EMBEDDINGS_FAILED']);
		return true;
	});
	// a float32-representable vector runs (nothing visible here: no rows)
	const ok = await searchChunks(db.pool, { ...params, vector: vector.map(() => 0.01) }, exact as never);
	assert.deepEqual(ok.rows, []);
});
