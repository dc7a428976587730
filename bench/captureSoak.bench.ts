/**
 * `npm run bench:soak`: issue 26's capture soak, as `npm run bench` reports it. BENCH_SOAK_RUNS (default
 * 500) runs × BENCH_SOAK_WORKERS (default 8) capture workers NEW → COMPLETED on a fresh database, through
 * a forwarder that drops BENCH_SOAK_DROP_RATE (default 0.05) of the Capture / Complete Step replies after
 * COMMIT (test/helpers/captureSoak.ts); workers retry a 503 with the same input. Prints the counts and
 * exits 1 unless double captures, runs stuck and steps whose work ran twice are all 0.
 */
import { Pool } from 'pg';
import { captureSoak, replyDropper, STATE_CHANGE_MARKERS } from '../test/helpers/captureSoak';
import { setupDatabase } from '../test/helpers/db';
import { envInt } from './report';

async function main(): Promise<number> {
	const runs = envInt('BENCH_SOAK_RUNS', 500);
	const workers = envInt('BENCH_SOAK_WORKERS', 8);
	const rate = Number(process.env.BENCH_SOAK_DROP_RATE ?? 0.05);
	const db = await setupDatabase();
	const target = new URL(db.url);
	const dropper = await replyDropper(
		{ host: target.hostname, port: Number(target.port || 5432) },
		rate,
		STATE_CHANGE_MARKERS,
	);
	const pool = new Pool({
		host: '127.0.0.1',
		port: dropper.port,
		database: target.pathname.slice(1),
		user: decodeURIComponent(target.username || 'postgres'),
		password: decodeURIComponent(target.password) || undefined,
		max: workers,
	});
	pool.on('error', () => undefined);
	try {
		const c = await captureSoak({ pool, check: db.pool, runs, workers });
		console.log(
			`capture soak: ${runs} runs × ${workers} workers, ${dropper.dropped()} replies dropped after COMMIT, ${c.retries} retries ` +
				`(${c.replayedCaptures} captures and ${c.replayedSteps} steps answered as replays), ${(c.ms / 1000).toFixed(1)} s\n` +
				`double captures ${c.doubleCaptures} / runs stuck ${c.stuck} / steps whose work ran twice ${c.workedTwice} ` +
				`(409 ${c.refused}, other errors ${c.errors})`,
		);
		return c.doubleCaptures + c.stuck + c.workedTwice + c.refused + c.errors === 0 ? 0 : 1;
	} finally {
		await pool.end();
		await dropper.close();
		await db.drop();
	}
}

main().then(
	(code) => (process.exitCode = code),
	(error: unknown) => {
		console.error(error);
		process.exitCode = 1;
	},
);
