/**
 * Issue 14's goals (P1–P3), issue 29's P7 and issue 26's R1 as one table at the end of `npm run bench` (bench/all.ts).
 *
 * Each bench that measures a goal calls `recordGoal` with its numbers; when `BENCH_GOALS_FILE` is set (the
 * runner sets it to a fresh file per run) the entry is appended to it as one JSON line, otherwise nothing is
 * written. `goalsTable` turns the entries of one run into the markdown table docs/benchmarks.md carries: the
 * measured value, the baseline measured in the same run, their ratio, the goal and whether it was met.
 */
import fs from 'node:fs';
import { markdownTable } from './report';

/** One measured goal (or one row of context for a goal). */
export interface GoalEntry {
	/**
	 * "P1", "P2" or "P3" (issue 14); "P7": the MaaS pipeline end to end vs the n8n floor of its chain
	 * (issue 29, bench/pipeline.bench.ts); "R1": recovery after a killed worker (issue 26)
	 */
	goal: 'P1' | 'P2' | 'P3' | 'P7' | 'R1';
	/** what was measured, e.g. "WF10 updates/s, saving off" */
	what: string;
	/** the measured value as printed, e.g. "117.4 updates/s" */
	measured: string;
	/** the baseline measured in the same run, as printed, e.g. "floor 131.2 updates/s" */
	baseline: string;
	/** measured ÷ baseline (higher is better); null for a row that has no single ratio (a curve) */
	ratio: number | null;
	/** the goal's lower bound for `ratio`; null for a row shown as context, with no goal of its own */
	atLeast: number | null;
	/** for a goal without a ratio bound (P3's "zero duplicates"): whether its condition held */
	held?: boolean;
	/** the goal column's text when it is not a ratio bound (e.g. P3's "the curve; none lost or doubled") */
	bound?: string;
}

/** The row shown for a goal a bench should have measured but did not (it failed, or was not run). */
export function missingGoal(goal: GoalEntry['goal'], bench: string, reason: string): GoalEntry {
	return {
		goal,
		what: `bench:${bench} ${reason}`,
		measured: 'not measured',
		baseline: '—',
		ratio: null,
		atLeast: null,
		held: false,
		bound: 'measured in this run',
	};
}

/** `entries` ordered P1, P2, P3, P7, R1; within a goal, in the order they were recorded. */
export function orderGoals(entries: GoalEntry[]): GoalEntry[] {
	return [...entries].sort((a, b) => a.goal.localeCompare(b.goal));
}

/** Appends `entry` to BENCH_GOALS_FILE (one JSON line) when that variable is set; otherwise does nothing. */
export function recordGoal(entry: GoalEntry): void {
	const file = process.env.BENCH_GOALS_FILE;
	if (!file) return;
	fs.appendFileSync(file, `${JSON.stringify(entry)}\n`);
}

/** The entries of a goals file, in the order they were recorded ([] when the file does not exist). */
export function readGoals(file: string): GoalEntry[] {
	if (!fs.existsSync(file)) return [];
	return fs
		.readFileSync(file, 'utf8')
		.split('\n')
		.filter((line) => line.trim() !== '')
		.map((line) => JSON.parse(line) as GoalEntry);
}

/** "met", "not met" or "—" (context row) for one entry. */
export function verdict(entry: GoalEntry): string {
	if (entry.atLeast !== null) {
		if (entry.ratio === null) return 'not met';
		// The unrounded ratio decides (0.897 does not meet 0.9); the table prints it with three decimals.
		return entry.ratio >= entry.atLeast ? 'met' : 'not met';
	}
	if (entry.held !== undefined) return entry.held ? 'met' : 'not met';
	return '—';
}

/**
 * The markdown table of `entries`: goal, what, measured, baseline (same run), ratio (three decimals where a bound
 * decides the verdict, two for context), the goal's bound or condition, verdict.
 */
export function goalsTable(entries: GoalEntry[]): string {
	const rows = entries.map((e) => [
		e.goal,
		e.what,
		e.measured,
		e.baseline,
		e.ratio === null ? '—' : `${e.ratio.toFixed(e.atLeast === null ? 2 : 3)}×`,
		e.bound ?? (e.atLeast === null ? 'context' : `≥ ${e.atLeast.toFixed(2)}×`),
		verdict(e),
	]);
	return markdownTable(['goal', 'what', 'measured', 'baseline, same run', 'ratio', 'goal', 'verdict'], rows);
}
