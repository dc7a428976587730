/**
 * Property-based test settings shared by every fast-check test (DEVELOPERS.md: thousands of runs, seed printed).
 *
 * - `PROPERTY_RUNS` sets the number of runs (default 10,000, the CI floor of issue 10);
 * - `PROPERTY_SEED` replays a failure: every test prints the seed it used before it runs, and fast-check
 *   prints the seed and the shrunk counterexample (with its `path`) when a property fails.
 */
import fc from 'fast-check';

/** Runs of each property: PROPERTY_RUNS, else 10,000. */
export const PROPERTY_RUNS = Number(process.env.PROPERTY_RUNS) > 0 ? Number(process.env.PROPERTY_RUNS) : 10_000;

/**
 * fast-check parameters with the seed fixed and printed (`[property] <name>: seed=… runs=…`).
 * @param name shown in the printed line, to find the test
 * @param overrides further fast-check parameters (e.g. a smaller `numRuns` for a property that needs a database round trip per run)
 */
export function propertyParams<T>(name: string, overrides: fc.Parameters<T> = {}): fc.Parameters<T> {
	const seed =
		Number.isInteger(Number(process.env.PROPERTY_SEED)) && process.env.PROPERTY_SEED
			? Number(process.env.PROPERTY_SEED)
			: Date.now() ^ (Math.random() * 0x7fffffff);
	const numRuns = overrides.numRuns ?? PROPERTY_RUNS;
	console.log(`[property] ${name}: seed=${seed} runs=${numRuns} (replay: PROPERTY_SEED=${seed})`);
	return { seed, verbose: 1, ...overrides, numRuns };
}

/**
 * Strings that break naive code: NUL, lone surrogates, control characters, JSON/SQL metacharacters,
 * and ordinary Unicode — mixed with fast-check's full-Unicode strings.
 */
export function hostileString(maxLength = 64): fc.Arbitrary<string> {
	const nasty = fc.constantFrom(
		'\u0000',
		'\ud800',
		'\udfff',
		'\ud83d',
		'\u2028',
		'\\',
		'"',
		"'",
		'\n',
		'\u00e9',
		'😀',
		'\ufeff',
		'%s',
		'${x}',
		'{{ $json }}',
	);
	return fc.oneof(
		fc.string({ unit: 'grapheme', maxLength }),
		fc.string({ unit: 'binary', maxLength }),
		fc
			.array(fc.oneof(nasty, fc.string({ maxLength: 4 })), { maxLength: Math.max(1, Math.floor(maxLength / 4)) })
			.map((parts) => parts.join('')),
	);
}

/** Ids that break naive parsing: beyond 2^53, beyond int8, negative, fractional, huge, non-numeric, non-UUID. */
export function hostileId(): fc.Arbitrary<unknown> {
	return fc.oneof(
		fc.constantFrom(
			2 ** 53 + 1,
			9007199254740993n,
			'9007199254740993',
			'9223372036854775808',
			-1,
			0,
			1.5,
			1e300,
			NaN,
			Infinity,
			'',
			'not-a-uuid',
			'00000000-0000-0000-0000-00000000000g',
			null,
		),
		fc.bigInt(),
		fc.double(),
		fc.integer(),
		fc.uuid(),
		fc.string({ maxLength: 40 }),
	);
}
