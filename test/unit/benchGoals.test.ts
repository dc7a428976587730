/**
 * The goals table of `npm run bench` (bench/goals.ts): entries reach the run's file only when the runner
 * set BENCH_GOALS_FILE, come back in order, and the verdict agrees with the ratio as printed.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, test } from '@jest/globals';
import { goalsTable, missingGoal, orderGoals, readGoals, recordGoal, verdict, type GoalEntry } from '../../bench/goals';

const saved = process.env.BENCH_GOALS_FILE;
afterEach(() => {
	if (saved === undefined) delete process.env.BENCH_GOALS_FILE;
	else process.env.BENCH_GOALS_FILE = saved;
});

const p1 = (ratio: number): GoalEntry => ({
	goal: 'P1',
	what: 'WF10 vs floor',
	measured: '90.0 updates/s',
	baseline: 'floor 100.0 updates/s',
	ratio,
	atLeast: 0.9,
});

test('recordGoal writes nothing without BENCH_GOALS_FILE, and appends one line per entry with it', () => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-goals-'));
	try {
		const file = path.join(dir, 'goals.jsonl');
		delete process.env.BENCH_GOALS_FILE;
		recordGoal(p1(0.95));
		assert.equal(fs.existsSync(file), false);
		assert.deepEqual(readGoals(file), []);

		process.env.BENCH_GOALS_FILE = file;
		const curve: GoalEntry = {
			goal: 'P3',
			what: 'captures/s at 1 / 2 workers',
			measured: '1,000 / 900',
			baseline: 'bare 2,000 / 1,800',
			ratio: null,
			atLeast: null,
			held: true,
		};
		recordGoal(p1(0.95));
		recordGoal(curve);
		assert.equal(fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length, 2);
		assert.deepEqual(readGoals(file), [p1(0.95), curve]);
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

test('verdict: the unrounded ratio decides; context rows have none; a failed condition or a missing ratio is not met', () => {
	assert.equal(verdict(p1(0.9)), 'met');
	assert.equal(verdict(p1(0.8999)), 'not met');
	assert.equal(verdict(p1(0.897)), 'not met'); // would print 0.90× with two decimals
	assert.equal(verdict(p1(1.4)), 'met');
	assert.equal(verdict({ ...p1(0.5), ratio: null }), 'not met');
	assert.equal(verdict({ ...p1(0.5), atLeast: null }), '—');
	assert.equal(verdict({ ...p1(0.5), ratio: null, atLeast: null, held: false }), 'not met');
	assert.equal(verdict({ ...p1(0.5), ratio: null, atLeast: null, held: true }), 'met');
});

test('goalsTable: a markdown row per entry with its ratio, bound or condition, and verdict', () => {
	const table = goalsTable([
		p1(0.8974),
		{ ...p1(1.126), what: 'WF10 vs floor + errors', atLeast: null },
		{ ...p1(1.2849), goal: 'P2', what: 'jobs', atLeast: 1 },
		{ ...p1(0), goal: 'P3', what: 'curve', ratio: null, atLeast: null, held: true, bound: 'the curve' },
		missingGoal('P3', 'captures', 'failed (exit 1)'),
	]).split('\n');
	assert.equal(table.length, 7);
	assert.match(table[0], /^\| goal \| what \| measured \| baseline, same run \| ratio \| goal \| verdict \|$/);
	assert.match(table[1], /^(\| --- )+\|$/);
	assert.equal(
		table[2],
		'| P1 | WF10 vs floor | 90.0 updates/s | floor 100.0 updates/s | 0.897× | ≥ 0.90× | not met |',
	);
	assert.equal(
		table[3],
		'| P1 | WF10 vs floor + errors | 90.0 updates/s | floor 100.0 updates/s | 1.13× | context | — |',
	);
	assert.equal(table[4], '| P2 | jobs | 90.0 updates/s | floor 100.0 updates/s | 1.285× | ≥ 1.00× | met |');
	assert.equal(table[5], '| P3 | curve | 90.0 updates/s | floor 100.0 updates/s | — | the curve | met |');
	assert.equal(
		table[6],
		'| P3 | bench:captures failed (exit 1) | not measured | — | — | measured in this run | not met |',
	);
});

test('orderGoals: P1, P2, P3, each in the order recorded, without changing its input', () => {
	const entries: GoalEntry[] = [
		{ ...p1(1), goal: 'P3', what: 'a' },
		{ ...p1(1), goal: 'P2', what: 'b' },
		{ ...p1(1), goal: 'P1', what: 'c' },
		{ ...p1(1), goal: 'P3', what: 'd' },
		{ ...p1(1), goal: 'P1', what: 'e' },
	];
	assert.deepEqual(
		orderGoals(entries).map((e) => e.what),
		['c', 'e', 'b', 'a', 'd'],
	);
	assert.deepEqual(
		entries.map((e) => e.what),
		['a', 'b', 'c', 'd', 'e'],
	);
});
