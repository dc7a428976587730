/**
 * Property (issue 10 item 3) against real PostgreSQL: for any webhook body, Telegram Ingest never answers
 * 5xx while the database is up, exactly one of {stored, quarantined, duplicate} happens, and what is kept
 * is the body: the quarantined bytes equal it, the stored jsonb equals PostgreSQL's own reading of it.
 * A duplicate (nothing written) is legitimate only when
 *  - the same bytes were kept before (stored, or quarantined with either status) — the answer names that
 *    original (job_id / quarantine_id); or
 *  - the body is an update (answered 200: stored or quarantinable, never a 400 non-update) whose update_id
 *    was kept before AS AN UPDATE (stored, or quarantined with status 200 and that update_id) — the answer
 *    names that original.
 * Any other "duplicate" loses a body.
 * Runs: PROPERTY_RUNS / 10 (1,000 by default: a database round trip each).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import fc from 'fast-check';
import { ingestUpdate, type IngestInput } from '../../nodes/TelegramIngest/actions/ingest.operation';
import { ContractError } from '../../nodes/shared/errors';
import { validateJob } from '../../nodes/shared/jobs';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { PROPERTY_RUNS, propertyParams } from '../helpers/property';
import { anyBody, updateText } from '../helpers/telegramIngest.bodies';

let db: TestDatabase;
let bot: Awaited<ReturnType<typeof seedBot>>;
beforeAll(async () => {
	db = await setupDatabase();
	bot = await seedBot(db.pool);
});
afterAll(async () => {
	await db?.drop();
});

async function counts() {
	const { rows } = await db.pool.query(`SELECT
		(SELECT count(*) FROM raw.telegram_updates)::int AS raw,
		(SELECT count(*) FROM raw.telegram_update_keys)::int AS keys,
		(SELECT count(*) FROM ops.jobs)::int AS jobs,
		(SELECT count(*) FROM raw.telegram_quarantine)::int AS quarantine,
		(SELECT count(*) FROM ops.errors)::int AS errors`);
	return rows[0] as { raw: number; keys: number; jobs: number; quarantine: number; errors: number };
}

test('property: any body → never 5xx, exactly one of stored / quarantined / duplicate, the body kept as received', async () => {
	const outcomes: Record<string, number> = {};
	type Original = { job_id: number | null; quarantine_id: number | null };
	const keptBySha = new Map<string, Original>();
	const keptByUpdateId = new Map<string, Original>();
	await fc.assert(
		fc.asyncProperty(anyBody(), fc.boolean(), async (bytes, deliverTwice) => {
			const call: IngestInput = {
				botKey: bot.botKey,
				secretToken: bot.secret,
				rawBody: bytes,
				update: undefined,
				jobType: 'telegram_update',
				maxAttempts: 5,
				workflow: 'WF10',
				nodeName: 'Telegram Ingest',
			};
			for (let delivery = 0; delivery < (deliverTwice ? 2 : 1); delivery++) {
				const before = await counts();
				let status: number;
				let data: Record<string, any> = {};
				let details: Record<string, any> = {};
				try {
					const envelope = await ingestUpdate(db.pool, call, {});
					status = envelope.status_code;
					data = envelope.data;
				} catch (error) {
					assert.ok(error instanceof ContractError, String(error));
					status = error.statusCode;
					details = error.details;
					assert.equal(status, 400, `only a 400 may be thrown while the database is up: ${error.message}`);
				}
				const now = await counts();
				const delta = {
					raw: now.raw - before.raw,
					keys: now.keys - before.keys,
					jobs: now.jobs - before.jobs,
					quarantine: now.quarantine - before.quarantine,
					errors: now.errors - before.errors,
				};
				const stored =
					delta.raw === 1 && delta.keys === 1 && delta.jobs === 1 && delta.quarantine === 0 && delta.errors === 0;
				const quarantined =
					delta.raw + delta.keys + delta.jobs === 0 &&
					delta.quarantine === 1 &&
					delta.errors === (status === 200 ? 1 : 0);
				const duplicate = Object.values(delta).every((n) => n === 0);
				assert.equal(
					[stored, quarantined, duplicate].filter(Boolean).length,
					1,
					`exactly one outcome: ${JSON.stringify(delta)} status ${status}`,
				);
				const duplicateFlag = status === 400 ? details.duplicate : data.duplicate;
				assert.equal(duplicateFlag, duplicate, 'the answer says duplicate exactly when nothing was written');
				if (stored) {
					const row = await db.pool.query(
						"SELECT update = convert_from($2, 'UTF8')::jsonb AS same FROM raw.telegram_updates WHERE id = $1",
						[data.raw_update_id, bytes],
					);
					assert.equal(row.rows[0].same, true, 'stored jsonb = the body as PostgreSQL reads it');
					assert.equal(data.quarantined, false);
				}
				if (quarantined) {
					const id = status === 400 ? details.quarantine_id : data.quarantine_id;
					const row = await db.pool.query(
						'SELECT body, body_sha256, status_code FROM raw.telegram_quarantine WHERE id = $1',
						[id],
					);
					assert.ok(Buffer.from(row.rows[0].body).equals(bytes), 'quarantined bytes = the body');
					assert.ok(Buffer.from(row.rows[0].body_sha256).equals(createHash('sha256').update(bytes).digest()));
					assert.equal(row.rows[0].status_code, status);
				}
				const sha = createHash('sha256').update(bytes).digest('hex');
				const answered: Original =
					status === 400
						? { job_id: null, quarantine_id: details.quarantine_id ?? null }
						: { job_id: data.job_id ?? null, quarantine_id: data.quarantine_id ?? null };
				if (duplicate) {
					const original = keptBySha.get(sha);
					if (original) {
						assert.deepEqual(answered, original, 'a duplicate of the same bytes names the original');
					} else {
						assert.equal(status, 200, 'a body that is not an update (400) is a duplicate only of the same bytes');
						assert.notEqual(data.update_id, null, 'a duplicate of other bytes needs a readable update_id');
						const byId = keptByUpdateId.get(String(data.update_id));
						assert.ok(byId, `update_id ${data.update_id} was kept before as an update`);
						assert.deepEqual(answered, byId, 'a duplicate by update_id names the original');
					}
				} else {
					keptBySha.set(sha, answered);
					if (status === 200 && data.update_id !== null && data.update_id !== undefined)
						keptByUpdateId.set(String(data.update_id), answered);
				}
				const key = stored ? 'stored' : quarantined ? `quarantined ${status}` : 'duplicate';
				outcomes[key] = (outcomes[key] ?? 0) + 1;
			}
		}),
		propertyParams('telegramIngest against PostgreSQL', { numRuns: Math.max(50, Math.round(PROPERTY_RUNS / 10)) }),
	);
	console.log('[property] outcomes', JSON.stringify(outcomes));
	assert.ok(
		outcomes.stored && outcomes['quarantined 200'] && outcomes['quarantined 400'] && outcomes.duplicate,
		'every outcome was exercised',
	);
}, 600_000);

// Issue 14: the job payload is built in SQL (INGEST_UPDATE), not by enqueue's zod check. Every payload
// stored from Telegram-shaped updates with hostile ids (beyond 2^53, the int8 edges) and any update type
// must be one the registry's schema for its job type accepts, and name its raw row as WF20 reads it.
test('property: every job Telegram Ingest stores has a payload the job-type registry accepts, naming its raw row', async () => {
	let stored = 0;
	await fc.assert(
		fc.asyncProperty(updateText(), async (text) => {
			const call: IngestInput = {
				botKey: bot.botKey,
				secretToken: bot.secret,
				rawBody: Buffer.from(text),
				update: undefined,
				jobType: 'telegram_update',
				maxAttempts: 5,
				workflow: 'WF10',
				nodeName: 'Telegram Ingest',
			};
			let data: Record<string, any>;
			try {
				data = (await ingestUpdate(db.pool, call, {})).data;
			} catch (error) {
				assert.ok(error instanceof ContractError && error.statusCode === 400, String(error));
				return;
			}
			if (data.quarantined || data.duplicate) return;
			stored++;
			const { rows } = await db.pool.query(
				`SELECT j.job_type, j.payload, EXISTS (SELECT 1 FROM raw.telegram_updates r WHERE r.id = (j.payload->>'raw_update_id')::bigint
				   AND r.update_id = (j.payload->>'update_id')::bigint AND r.bot_id = (j.payload->>'bot_id')::uuid AND r.tenant_id = (j.payload->>'tenant_id')::uuid) AS raw_ok
				 FROM ops.jobs j WHERE j.id = $1`,
				[data.job_id],
			);
			assert.doesNotThrow(() => validateJob(rows[0].job_type, rows[0].payload), JSON.stringify(rows[0].payload));
			assert.equal(
				rows[0].raw_ok,
				true,
				`the payload names its raw row, bot, tenant and update_id: ${JSON.stringify(rows[0].payload)}`,
			);
		}),
		propertyParams('telegramIngest job payloads', { numRuns: Math.max(50, Math.round(PROPERTY_RUNS / 20)) }),
	);
	assert.ok(stored >= 10, `the property stored updates (${stored})`);
}, 600_000);
