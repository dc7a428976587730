/**
 * Telegram Ingest's request headers against real PostgreSQL (issue 25 §3): the trace id header
 * (traceparent / X-Trace-Id) and X-Correlation-Id are outside data. A NUL in the trace id was a 500 (the
 * quarantine insert of the ctx failed with SQLSTATE 22P05); it is a 400 `validation` naming the field
 * `traceId`, with nothing written, like other malformed requests. The property: for any header values, the
 * answer is 200 with the trace id kept exactly, or that 400 — never a 5xx.
 * Runs: PROPERTY_RUNS / 10 (1,000 by default: a database round trip each).
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import fc from 'fast-check';
import {
	ingestUpdate,
	MAX_TRACE_ID_LENGTH,
	traceIdProblem,
	type IngestInput,
} from '../../nodes/TelegramIngest/actions/ingest.operation';
import { ContractError } from '../../nodes/shared/errors';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { hostileString, PROPERTY_RUNS, propertyParams } from '../helpers/property';
import { textWithUrls } from '../helpers/updates';

let db: TestDatabase;
let bot: Awaited<ReturnType<typeof seedBot>>;
beforeAll(async () => {
	db = await setupDatabase();
	bot = await seedBot(db.pool);
});
afterAll(async () => {
	await db?.drop();
});

function input(headers: { traceId?: unknown; correlationId?: unknown }): IngestInput {
	return {
		botKey: bot.botKey,
		secretToken: bot.secret,
		update: textWithUrls(),
		jobType: 'telegram_update',
		maxAttempts: 5,
		workflow: 'WF10',
		nodeName: 'Telegram Ingest',
		...headers,
	};
}

async function written(): Promise<number> {
	const { rows } = await db.pool.query(`SELECT
		(SELECT count(*) FROM raw.telegram_updates) + (SELECT count(*) FROM ops.jobs)
		+ (SELECT count(*) FROM raw.telegram_quarantine) + (SELECT count(*) FROM ops.errors) AS n`);
	return Number(rows[0].n);
}

async function outcome(call: IngestInput): Promise<{ status: number; error?: ContractError; jobId?: number }> {
	try {
		const envelope = await ingestUpdate(db.pool, call, {});
		return { status: envelope.status_code, jobId: envelope.data.job_id as number };
	} catch (error) {
		assert.ok(error instanceof ContractError, String(error));
		return { status: error.statusCode, error };
	}
}

test('a NUL in the trace id header → 400 naming traceId, nothing written, the value quoted nowhere (was a 500)', async () => {
	for (const traceId of ['00-abc\u0000def-01', '\u0000', 'x\ud800', 'x'.repeat(MAX_TRACE_ID_LENGTH + 1), 'a\nb']) {
		const before = await written();
		const state: { ctx?: Record<string, unknown> } = {};
		let error: unknown;
		await ingestUpdate(db.pool, input({ traceId }), state).catch((e: unknown) => (error = e));
		assert.ok(error instanceof ContractError, JSON.stringify(traceId));
		assert.equal(error.statusCode, 400);
		assert.equal(error.kind, 'validation');
		assert.deepEqual(error.details, { field: 'traceId' });
		assert.match(error.message, /^invalid trace id header/);
		assert.ok(!JSON.stringify(error).includes(JSON.stringify(traceId).slice(1, -1)) || traceId.length === 1);
		assert.equal(state.ctx?.trace_id, null, 'the ctx (which travels to ops.errors) holds no bad trace id');
		assert.equal(await written(), before, 'nothing written');
	}
	// a trace id of 256 ordinary characters, tabs included, is kept
	const ok = await outcome(input({ traceId: `00-${'a'.repeat(250)}\t-1` }));
	assert.equal(ok.status, 200);
});

test('property: any trace id / correlation id header → 200 with the trace id kept, or 400 traceId; never 5xx', async () => {
	const seen: Record<string, number> = {};
	const header = fc.oneof(
		hostileString(80),
		hostileString(400),
		fc.string({ minLength: MAX_TRACE_ID_LENGTH - 2, maxLength: MAX_TRACE_ID_LENGTH + 2 }),
		fc.constant('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'),
		fc.anything(),
	);
	await fc.assert(
		fc.asyncProperty(header, fc.oneof(hostileString(60), fc.uuid(), fc.anything()), async (traceId, correlationId) => {
			const before = await written();
			const result = await outcome(input({ traceId, correlationId }));
			const problem = traceIdProblem(traceId);
			seen[result.status] = (seen[result.status] ?? 0) + 1;
			if (problem !== null) {
				assert.equal(result.status, 400, `${problem}: got ${result.status} ${result.error?.message}`);
				assert.deepEqual(result.error!.details, { field: 'traceId' });
				assert.equal(await written(), before);
				return;
			}
			assert.equal(result.status, 200, `got ${result.status} ${result.error?.message}`);
			const { rows } = await db.pool.query("SELECT payload->>'trace_id' AS trace_id FROM ops.jobs WHERE id = $1", [
				result.jobId,
			]);
			assert.equal(rows[0].trace_id, typeof traceId === 'string' && traceId !== '' ? traceId : null);
		}),
		propertyParams('telegram ingest headers', { numRuns: Math.max(100, Math.floor(PROPERTY_RUNS / 10)) }),
	);
	console.log(`header property outcomes by status: ${JSON.stringify(seen)}`);
	assert.ok((seen[200] ?? 0) > 0 && (seen[400] ?? 0) > 0, 'both outcomes were exercised');
});
