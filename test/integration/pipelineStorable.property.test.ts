/**
 * Property-based (fast-check, seed printed): what Complete Step lets reach PostgreSQL (issue 13).
 *  1. `unstorablePath` (shared/sanitize.ts) agrees with PostgreSQL itself: a hostile JSON value (NUL, lone
 *     surrogates, odd keys, deep nesting) is found unstorable exactly when `$1::jsonb` refuses its JSON.
 *  2. Complete Step with any hostile result and draft: either the run moves on and the stored
 *     analysis_result is the value as sent, or a 422 names a field under `result` / `draft_context` and the
 *     worker keeps its capture token — never a 5xx, never a run held under a token nobody knows.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import fc from 'fast-check';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { ContractError } from '../../nodes/shared/errors';
import { unstorablePath } from '../../nodes/shared/sanitize';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { hostileString, propertyParams } from '../helpers/property';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

/** JSON values built from hostile strings (keys too), nested up to 8 levels. */
const hostileJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
	value: fc.oneof(
		{ depthSize: 'small', maxDepth: 8 },
		hostileString(24),
		fc.integer(),
		fc.boolean(),
		fc.constant(null),
		fc.array(tie('value'), { maxLength: 4 }),
		fc.dictionary(hostileString(8), tie('value'), { maxKeys: 4 }),
	),
})).value;

test('property: unstorablePath finds a value unstorable exactly when PostgreSQL refuses it as jsonb', async () => {
	await fc.assert(
		fc.asyncProperty(hostileJson, async (value) => {
			const json = JSON.stringify(value);
			const refused = await db.pool.query('SELECT $1::jsonb AS v', [json]).then(
				() => false,
				(e: { code?: string }) => {
					if (e.code !== '22P05' && e.code !== '22P02') throw e;
					return true;
				},
			);
			assert.equal(unstorablePath(value) !== null, refused, json);
		}),
		propertyParams('unstorablePath vs jsonb', { numRuns: 3000 }),
	);
});

test('property: Complete Step with a hostile result and draft stores it as sent or answers 422 naming the field; the worker keeps its capture', async () => {
	const def = shippedDefinition();
	await fc.assert(
		fc.asyncProperty(hostileJson, fc.option(hostileString(32), { nil: undefined }), async (result, draft) => {
			const { request_id } = await createRun(db.pool, { user_id: `prop-${Math.random()}`, query: 'q' }); // one user per run: the seed-001 blocking rule holds a user's next run back;
			const token = (await capture(db.pool, def, { run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: 'w' }))
				.run.capture_token as string;
			try {
				const done = await completeStep(db.pool, def, {
					run_id: request_id,
					transition: 'ANALYSIS_DONE',
					capture_token: token,
					result,
					draft_context: draft,
				});
				assert.equal(done.status, 'ANALYZED');
				const stored = (
					await db.pool.query('SELECT analysis_result, draft_context FROM maas.pipeline_runs WHERE id = $1', [
						request_id,
					])
				).rows[0];
				assert.deepEqual(stored.analysis_result, JSON.parse(JSON.stringify(result ?? null)));
				if (draft !== undefined) assert.equal(stored.draft_context, draft);
			} catch (error) {
				assert.ok(error instanceof ContractError, String(error));
				assert.equal(error.statusCode, 422, error.message);
				assert.match(String(error.details.field), /^(result|draft_context)/);
				const kept = (
					await db.pool.query('SELECT status, capture_token FROM maas.pipeline_runs WHERE id = $1', [request_id])
				).rows[0];
				assert.deepEqual([kept.status, kept.capture_token], ['ANALYZING', token]);
			}
		}),
		propertyParams('Complete Step hostile result', { numRuns: 500 }),
	);
});
