/**
 * Reading a Prometheus scrape in tests: the text parsed by parse-prometheus-text-format (a real parser,
 * not ours) and looked up by family name and labels.
 * That parser folds every series of a histogram family into one (it keeps only an unlabelled
 * histogram's buckets, sum and count), so a labelled histogram is read with `line()`: the same parser
 * over the text without its `# TYPE` lines, where every sample line (`name_bucket{…,le=…}`, `name_sum`,
 * `name_count`) keeps its own labels (a name may then head several families: all are searched).
 */
import assert from 'node:assert/strict';
import parsePrometheusTextFormat, { type PromFamily, type PromSample } from 'parse-prometheus-text-format';

export interface Scrape {
	families: PromFamily[];
	/** The family `name`; fails when absent. */
	family(name: string): PromFamily;
	/** The one sample of `name` whose labels include `labels` (exactly one must match). */
	sample(name: string, labels?: Record<string, string>): PromSample;
	/** That sample's value as a number. */
	value(name: string, labels?: Record<string, string>): number;
	/** The value of the one sample line `name` (e.g. `x_bucket`) whose labels include `labels`, types ignored. */
	line(name: string, labels?: Record<string, string>): number;
}

function pick(families: PromFamily[], name: string, labels: Record<string, string>): PromSample {
	const found = families.filter((f) => f.name === name);
	assert.ok(found.length > 0, `metric ${name} is missing from the scrape`);
	const matches = found
		.flatMap((f) => f.metrics)
		.filter((m) => Object.entries(labels).every(([k, v]) => (m.labels ?? {})[k] === v));
	assert.equal(matches.length, 1, `${name}${JSON.stringify(labels)}: ${matches.length} samples match`);
	return matches[0];
}

export function parseScrape(text: string): Scrape {
	const families = parsePrometheusTextFormat(text);
	let untyped: PromFamily[] | undefined;
	const family = (name: string) => {
		const found = families.find((f) => f.name === name);
		assert.ok(found, `metric ${name} is missing from the scrape`);
		return found;
	};
	const sample = (name: string, labels: Record<string, string> = {}) => pick(families, name, labels);
	return {
		families,
		family,
		sample,
		value: (name, labels) => Number(sample(name, labels).value),
		line: (name, labels = {}) => {
			untyped ??= parsePrometheusTextFormat(text.replace(/^# TYPE .*$/gm, ''));
			return Number(pick(untyped, name, labels).value);
		},
	};
}
