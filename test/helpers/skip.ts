/**
 * Conditional skips, decided when the file is loaded (jest cannot skip from inside a running test).
 * `testSkipIf(reason)('name', fn, timeoutMs)` is `test.skip` when `reason` is a non-empty string or `true`,
 * else `test`; the reason is printed once per file, so a skipped test always says why (as vitest's
 * `test.skipIf` does). Conditions that need I/O (is Redis up? is chromium installed?) are probed before
 * the files load, by test/jest/globalSetup.ts, and read here from the environment.
 */
import { describe, test } from '@jest/globals';

const said = new Set<string>();

function say(reason: string | true): void {
	const text = reason === true ? 'condition not met' : reason;
	if (said.has(text)) return;
	said.add(text);
	console.log(`SKIP: ${text}`);
}

/** `test`, or `test.skip` with the reason printed. */
export function testSkipIf(reason: string | boolean | null | undefined): typeof test {
	if (!reason) return test;
	say(reason);
	return test.skip as typeof test;
}

/** `describe`, or `describe.skip` with the reason printed. */
export function describeSkipIf(reason: string | boolean | null | undefined): typeof describe {
	if (!reason) return describe;
	say(reason);
	return describe.skip as typeof describe;
}
