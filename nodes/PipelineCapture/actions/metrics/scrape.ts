/**
 * Metrics → Pipeline Metrics' read of the database: PIPELINE_METRICS (shared/statements/metrics.ts, seed
 * 001 §9) for the tables of SIZED_TABLES, in one read-only transaction.
 */
import type { Pool } from 'pg';
import { inTransaction } from '../../../shared/postgres/transaction';
import { PIPELINE_METRICS, SIZED_TABLES } from '../../../shared/statements/metrics';
import type { PipelineFigures } from './exposition';

/**
 * Runs PIPELINE_METRICS in a read-only transaction with JIT off (`SET LOCAL jit = off`: a scrape is a
 * short query; compiling it cost more than running it).
 * @returns the row (PipelineFigures of ./exposition.ts) @throws the pg error
 */
export async function scrapeFigures(pool: Pool): Promise<PipelineFigures> {
	// inTransaction: the checked-out client's 'error' event (connection terminated mid-scrape) is handled
	return inTransaction(pool, async (client) => {
		await client.query('SET TRANSACTION READ ONLY');
		await client.query('SET LOCAL jit = off');
		const { rows } = await client.query(PIPELINE_METRICS, [SIZED_TABLES]);
		return rows[0] as PipelineFigures;
	});
}
