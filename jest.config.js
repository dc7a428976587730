'use strict';
/**
 * Jest for `npm test` (scripts/test.js): TypeScript through @swc/jest (no type check here; `npm run typecheck`
 * and the build do that), one file at a time in a fresh process, a default limit of 10 min per test (the
 * e2e tests and hooks state their own where they need more).
 */
module.exports = {
	rootDir: __dirname,
	// Node's own realm: the tests compare with node:assert, whose deep equality checks prototypes, and objects made
	// by Node's APIs (fs, pg) would otherwise come from another realm than the test's own literals.
	testEnvironment: 'jest-environment-node-single-context',
	testMatch: ['<rootDir>/test/**/*.test.ts'],
	transform: {
		'^.+\\.ts$': [
			'@swc/jest',
			{
				jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
				module: { type: 'commonjs' },
				sourceMaps: 'inline',
			},
		],
	},
	// One file at a time by default (`npx jest <file>`); scripts/test.js runs unit + integration on several workers
	// (--maxWorkers: each file has its own database and ports). Each file runs in a fresh worker process: some
	// patch process-wide state (nock's interceptors, fake timers) that must not reach the next file. A worker
	// above this memory after a file is replaced: every one is.
	maxWorkers: 1,
	workerIdleMemoryLimit: '1MB',
	testTimeout: 10 * 60_000,
	globalSetup: '<rootDir>/test/jest/globalSetup.ts',
	testSequencer: '<rootDir>/test/jest/sequencer.js',
	verbose: true,
};
