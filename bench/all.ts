/**
 * `npm run bench`: runs every benchmark one after another (each in its own process, output as it comes),
 * then prints the goals from this run (issue 14's P1–P3, issue 29's P7, issue 26's R1) as one markdown table
 * (bench/goals.ts), followed by the versions of every anchor (n8n, pg-boss, graphile-worker) and of Node: the table
 * docs/benchmarks.md carries (the README points there). Stops at the first bench that fails or refuses to report (exit code 1), after printing
 * the goals recorded until then; a goal that a failed, skipped or unrun bench should have measured gets a
 * "not measured" row, verdict "not met". BENCH_ONLY=wf10,jobs runs some of the benches, in this order.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { goalsTable, missingGoal, orderGoals, readGoals, type GoalEntry } from './goals';

const BENCHES = ['arango', 'jobs', 'wf10', 'answer', 'captures', 'queue', 'pipeline', 'captureSoak', 'recovery'];
/** The goals each bench records (bench/goals.ts recordGoal calls). */
const MEASURES: Record<string, GoalEntry['goal'][]> = {
	jobs: ['P2', 'P3'],
	wf10: ['P1'],
	captures: ['P3'],
	pipeline: ['P7'],
	recovery: ['R1'],
};

/**
 * "n8n 2.4.8, pg-boss 12.38.0, graphile-worker 0.18.0, Node 24.1.0": the anchors as installed (their
 * package.json; "not installed" when absent) and the Node that ran the benches (bench:jobs names the Node
 * its anchors ran on in its own rows: on a Node older than 22.18 it runs itself on Node 24).
 */
function versions(): string {
	const installed = (pkg: string) => {
		try {
			return JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'node_modules', pkg, 'package.json'), 'utf8'))
				.version as string;
		} catch {
			return 'not installed';
		}
	};
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const n8n = require('../scripts/lib/n8n').N8N_VERSION as string;
	return `n8n ${n8n}, pg-boss ${installed('pg-boss')}, graphile-worker ${installed('graphile-worker')}, Node ${process.versions.node}`;
}

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
	const missing: GoalEntry[] = [];
	let failed: string | null = null;
	try {
		for (const name of BENCHES) {
			const expected = MEASURES[name] ?? [];
			const leftOut = only !== undefined && !only.includes(name);
			if (failed || leftOut) {
				const reason = leftOut ? 'not run (BENCH_ONLY)' : `not run (bench:${failed} failed first)`;
				for (const goal of expected) missing.push(missingGoal(goal, name, reason));
				continue;
			}
			console.log(`\n=== bench:${name} ===`);
			const t0 = Date.now();
			const before = readGoals(goalsFile).length;
			const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, `${name}.bench.ts`)], {
				stdio: 'inherit',
				env: { ...process.env, BENCH_GOALS_FILE: goalsFile },
			});
			const status = run.error ? `could not start: ${run.error.message}` : `exit ${run.status ?? run.signal}`;
			console.log(`=== bench:${name}: ${((Date.now() - t0) / 1000).toFixed(0)} s, ${status}`);
			const recorded = new Set(
				readGoals(goalsFile)
					.slice(before)
					.map((g) => g.goal),
			);
			const reason = run.status === 0 ? 'recorded no result' : `failed (${status})`;
			for (const goal of expected) if (!recorded.has(goal)) missing.push(missingGoal(goal, name, reason));
			if (run.status !== 0) failed = name;
		}
		const goals = orderGoals([...readGoals(goalsFile), ...missing]);
		console.log(
			`\nGoals (issue 14 P1–P3, issue 29 P7, issue 26 R1), this run (${((Date.now() - started) / 60000).toFixed(1)} min):\n`,
		);
		console.log(goalsTable(goals));
		console.log(`\nAnchors and runtime: ${versions()}`);
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
