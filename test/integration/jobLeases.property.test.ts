/**
 * Issue 26, property-based (fast-check; seed printed, replay with PROPERTY_SEED; runs: 2,000 each, a database
 * round trip per run): the outside data of Claim Jobs' replay and Release Stale's lease fields.
 *  - Any call key (hostile strings: NUL, lone surrogates, quotes, Unicode) replays exactly its own claim: the
 *    retry with the same key and worker gets the same jobs and claim tokens; another key claims others.
 *  - Release Stale's Lease Grace / Lease Max take anything an expression can give: 0 (or "0"), "" or absent
 *    grace → by age (no `reason`); a whole number of seconds (a number, or a string of digits with spaces
 *    around) 10–3600 (grace) / grace–604,800 (max) → the leased path; anything else (true, " ", "1e3", 1.5,
 *    a grace of 1–9, a max below the grace) → 422 naming the field, before any statement.
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

/** A whole number of seconds: a finite integer number, or only ASCII digits with spaces around; else undefined. */
const whole = (v: unknown): number | undefined => {
	if (typeof v === 'number') return Number.isInteger(v) ? v : undefined;
	if (typeof v !== 'string') return undefined;
	const t = v.trim();
	if (t === '' || [...t].some((c) => c < '0' || c > '9')) return undefined;
	return Number(t);
};
const blank = (v: unknown) => v === undefined || v === null || v === '';
/** Lease Grace off: absent, blank or zero. */
const off = (v: unknown) => blank(v) || whole(v) === 0;
const inRange = (v: unknown, min: number, max: number) => {
	const n = whole(v);
	return n !== undefined && n >= min && n <= max;
};
const okGrace = (v: unknown) => off(v) || inRange(v, 10, 3600);

test('Release Stale: any Lease Grace / Lease Max is taken, or refused with 422 naming its field before any statement', async () => {
	const value = fc.oneof(
		fc.constantFrom(
			undefined,
			null,
			'',
			' ',
			0,
			'0',
			9,
			10,
			15,
			'15',
			' 15 ',
			3600,
			3601,
			-1,
			1.5,
			'NaN',
			'1e3',
			'0x10',
			true,
			false,
			[],
			[15],
			{},
			' 7 ',
			-0,
		),
		fc.integer({ min: -10, max: 700_000 }),
		fc.double(),
		hostileString(12),
		fc.anything(),
	);
	await fc.assert(
		fc.asyncProperty(value, value, async (grace, max) => {
			const expectGraceError = !okGrace(grace);
			const leased = !expectGraceError && !off(grace);
			const maxOk = blank(max) || inRange(max, leased ? whole(grace)! : 1, 604_800);
			const expectMaxError = leased && !maxOk;
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
