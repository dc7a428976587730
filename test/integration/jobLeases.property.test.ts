/**
 * Issue 26, property-based (fast-check; seed printed, replay with PROPERTY_SEED; runs: 2,000 each, a database
 * round trip per run): the outside data of Claim Jobs' replay and Release Stale's lease fields.
 *  - Any call key (hostile strings: NUL, lone surrogates, quotes, Unicode) replays exactly its own claim: the
 *    retry with the same key and worker gets the same jobs and claim tokens; another key claims others.
 *  - Release Stale's Lease Grace / Lease Max take anything an expression can give: 0, "" or absent grace → by
 *    age (no `reason`); an integer 1–3600 (grace) / 1–604,800 (max) → the leased path; anything else → 422
 *    naming the field, before any statement.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import fc from 'fast-check';
import { ContractError } from '../../nodes/shared/errors';
import { claimJobs, releaseStale } from '../../nodes/shared/jobs/queue';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { hostileString, propertyParams } from '../helpers/property';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

const RUNS = 2_000;

test('any call key replays exactly its own claim; another key claims other jobs', async () => {
	await db.pool.query("INSERT INTO ops.jobs (job_type) SELECT 'prop-key' FROM generate_series(1, $1::int)", [
		RUNS * 3 + 10,
	]);
	let n = 0;
	await fc.assert(
		fc.asyncProperty(hostileString(80), hostileString(80), async (key, other) => {
			fc.pre(key !== other);
			const worker = `w-${n++}`;
			const first = await claimJobs(db.pool, { job_type: 'prop-key', batch_size: 1, worker }, { claim_key: key });
			const again = await claimJobs(db.pool, { job_type: 'prop-key', batch_size: 1, worker }, { claim_key: key });
			if (!key) {
				// "" is no key: no replay, the second call takes another job
				assert.ok(again.every((j) => j.replayed === undefined && j.id !== first[0].id));
				return;
			}
			assert.deepEqual(
				again.map((j) => [j.id, j.claim_token, j.replayed]),
				first.map((j) => [j.id, j.claim_token, true]),
			);
			const another = await claimJobs(db.pool, { job_type: 'prop-key', batch_size: 1, worker }, { claim_key: other });
			assert.ok(another.every((j) => j.replayed === undefined && j.id !== first[0].id));
		}),
		propertyParams('claim key replay', { numRuns: RUNS }),
	);
}, 300_000);

/** Number(v) as an n8n expression's value converts, NaN where that throws (a hostile object). */
const num = (v: unknown) => {
	try {
		return Number(v);
	} catch {
		return Number.NaN;
	}
};
/** Lease Grace off: absent, blank or zero. */
const off = (v: unknown) => v === undefined || v === null || v === '' || num(v) === 0;
const okGrace = (v: unknown) => off(v) || inRange(v, 3600);
const inRange = (v: unknown, max: number) => {
	const n = num(v);
	return Number.isInteger(n) && n >= 1 && n <= max;
};

test('Release Stale: any Lease Grace / Lease Max is taken, or refused with 422 naming its field before any statement', async () => {
	const value = fc.oneof(
		fc.constantFrom(undefined, null, '', 0, '0', 15, '15', 3600, 3601, -1, 1.5, 'NaN', '1e3', true, [], {}, ' 7 '),
		fc.integer({ min: -10, max: 700_000 }),
		fc.double(),
		hostileString(12),
		fc.anything(),
	);
	await fc.assert(
		fc.asyncProperty(value, value, async (grace, max) => {
			const expectGraceError = !okGrace(grace);
			const leased =
				!expectGraceError && !(grace === undefined || grace === null || grace === '' || Number(grace) === 0);
			const expectMaxError = leased && !(max === undefined || max === null || max === '' || inRange(max, 604_800));
			try {
				const out = await releaseStale(db.pool, {
					older_than_seconds: 900,
					limit: 10,
					lease_grace_seconds: grace,
					lease_max_seconds: max,
				});
				assert.ok(!expectGraceError && !expectMaxError, `accepted ${fc.stringify(grace)} / ${fc.stringify(max)}`);
				assert.ok(Array.isArray(out));
				assert.ok(out.every((r) => (r.reason !== undefined) === leased));
			} catch (error) {
				assert.ok(error instanceof ContractError, String(error));
				assert.equal(error.statusCode, 422);
				assert.equal(
					(error.details as { field?: string }).field,
					expectGraceError ? 'lease_grace_seconds' : 'lease_max_seconds',
				);
				assert.ok(expectGraceError || expectMaxError, `refused ${fc.stringify(grace)} / ${fc.stringify(max)}`);
			}
		}),
		propertyParams('release stale lease fields', { numRuns: RUNS }),
	);
}, 300_000);
