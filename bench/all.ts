/**
 * `npm run bench`: runs every benchmark one after another (each in its own process, output as it comes),
 * then prints issue 14's goals P1–P3 from this run as one markdown table (bench/goals.ts), the table the
 * README carries. Stops at the first bench that fails or refuses to report (exit code 1), after printing
 * the goals recorded until then. BENCH_ONLY=wf10,jobs runs a subset, in this order.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { goalsTable, readGoals } from './goals';

const BENCHES = ['arango', 'jobs', 'wf10', 'answer', 'captures', 'queue'];

function main(): number {
	const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
	const unknown = only?.filter((name) => !BENCHES.includes(name)) ?? [];
	if (unknown.length) {
		console.error(`BENCH_ONLY: unknown bench ${unknown.join(', ')} (known: ${BENCHES.join(', ')})`);
		return 1;
	}
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-bench-'));
	const goalsFile = path.join(dir, 'goals.jsonl');
	const started = Date.now();
	let failed: string | null = null;
	try {
		for (const name of BENCHES.filter((b) => !only || only.includes(b))) {
			console.log(`\n=== bench:${name} ===`);
			const t0 = Date.now();
			const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, `${name}.bench.ts`)], {
				stdio: 'inherit',
				env: { ...process.env, BENCH_GOALS_FILE: goalsFile },
			});
			console.log(`=== bench:${name}: ${((Date.now() - t0) / 1000).toFixed(0)} s, exit ${run.status ?? run.signal}`);
			if (run.status !== 0) {
				failed = name;
				break;
			}
		}
		// P1, P2, P3 in that order; within a goal, as the benches recorded them.
		const goals = readGoals(goalsFile).sort((a, b) => a.goal.localeCompare(b.goal));
		console.log(`\nIssue 14 goals, this run (${((Date.now() - started) / 60000).toFixed(1)} min):\n`);
		console.log(goals.length ? goalsTable(goals) : '(no goal measured)');
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
	if (failed) {
		console.error(`\nbench:${failed} failed or refused to report; the benches after it did not run`);
		return 1;
	}
	return 0;
}

process.exitCode = main();
