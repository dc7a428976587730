/**
 * Shared by the queue benches (jobs.bench.ts, captures.bench.ts): env knobs, the refusal to report a rate
 * that lost or doubled work, and the markdown table printed for docs/benchmarks.md.
 */

/** A positive integer from the environment variable `name`, else `fallback`. @throws when not one */
export function envInt(name: string, fallback: number): number {
	const raw = process.env[name];
	if (raw === undefined || raw === '') return fallback;
	const n = Number(raw);
	if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${raw}`);
	return n;
}

/** Worker counts from `BENCH_WORKER_COUNTS` ("1,2,4,8" by default). */
export function workerCounts(): number[] {
	const raw = process.env.BENCH_WORKER_COUNTS ?? '1,2,4,8';
	const counts = raw.split(',').map((s) => Number(s.trim()));
	if (counts.length === 0 || counts.some((n) => !Number.isInteger(n) || n < 1))
		throw new Error(`BENCH_WORKER_COUNTS must list positive integers, got ${raw}`);
	return counts;
}

/** Thrown when a rate must not be reported (a job lost or done twice, a run captured twice or never). */
export class Refused extends Error {}

/** @throws Refused with `what` unless `ok` */
export function refuseUnless(ok: boolean, what: string): void {
	if (!ok) throw new Refused(`refusing to report: ${what}`);
}

/** Ids seen more than once in `ids`. */
export function duplicates<T>(ids: Iterable<T>): T[] {
	const seen = new Set<T>();
	const twice = new Set<T>();
	for (const id of ids) (seen.has(id) ? twice : seen).add(id);
	return [...twice];
}

/** A markdown table: header row, separator, rows (cells as given). */
export function markdownTable(header: string[], rows: Array<Array<string | number>>): string {
	const line = (cells: Array<string | number>) => `| ${cells.join(' | ')} |`;
	return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** Seconds since `start` (a performance.now() reading). */
export function secondsSince(start: number): number {
	return (performance.now() - start) / 1000;
}

/** `n` as a rate with no decimals and thin grouping (e.g. 2,431). */
export function rate(n: number): string {
	return Math.round(n).toLocaleString('en-US');
}

/** The median of `values` (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	const mid = Math.floor(sorted.length / 2);
	return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Medians of `rounds` measurements of two sides at each worker count, alternating which side runs first
 * (so drift of the machine's load does not favour one side). `measure(side, workers, round)` returns a rate.
 */
export async function alternatingMedians(
	counts: number[],
	rounds: number,
	measure: (side: 'ours' | 'baseline', workers: number, round: number) => Promise<number>,
): Promise<Array<{ workers: number; ours: number; baseline: number }>> {
	const rows: Array<{ workers: number; ours: number; baseline: number }> = [];
	let k = 0;
	for (const workers of counts) {
		const samples = { ours: [] as number[], baseline: [] as number[] };
		for (let round = 0; round < rounds; round += 1, k += 1) {
			const order = k % 2 === 0 ? (['ours', 'baseline'] as const) : (['baseline', 'ours'] as const);
			for (const side of order) samples[side].push(await measure(side, workers, round));
		}
		rows.push({ workers, ours: median(samples.ours), baseline: median(samples.baseline) });
	}
	return rows;
}
