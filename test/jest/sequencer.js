'use strict';
/**
 * Order of the test files for jest's parallel run (scripts/test.js): jest's own order (files that failed last
 * time, then the slowest by its timing cache, then the largest), except that the files known to take
 * minutes start first — on a clean machine jest has no timings, and a long file started last would run alone
 * at the end while the other worker idles.
 */
const Sequencer = require('@jest/test-sequencer').default;

/** Files that take minutes (seconds measured with 3 (unit, integration) or 2 (e2e) workers on 2 cores, Nov 2026), slowest first. */
const SLOW_FIRST = [
	'test/integration/vectorSearchSelective.test.ts', // ~120 s: HNSW index over 10,000 × 1536 in PGlite (WASM)
	'test/integration/errorPipe.property.test.ts', // ~80 s
	'test/integration/jobLeases.test.ts', // ~50 s
	'test/e2e/queue_mode_job_leases.test.ts', // ~350 s (e2e run, 2 workers)
	'test/e2e/canvas.test.ts', // ~125 s
	'test/e2e/knowledge_answer.test.ts', // ~120 s
	'test/e2e/knowledge_chain.test.ts', // ~120 s
	'test/e2e/queue_mode.test.ts', // ~115 s
];

class SlowFirstSequencer extends Sequencer {
	sort(tests) {
		const sorted = super.sort(tests);
		const rank = (t) => {
			const i = SLOW_FIRST.findIndex((f) => t.path.endsWith(f));
			return i === -1 ? SLOW_FIRST.length : i;
		};
		// Array.prototype.sort is stable: the rest keep jest's order
		return [...sorted].sort((a, b) => rank(a) - rank(b));
	}
}

module.exports = SlowFirstSequencer;
