/** Minimal types of parse-prometheus-text-format 1.1 (the package ships none): prom2json-shaped families. */
declare module 'parse-prometheus-text-format' {
	export interface PromSample {
		labels?: Record<string, string>;
		/** Counter, gauge, untyped: the value as written. */
		value?: string;
		/** Histogram: cumulative counts by `le`; summary: values by quantile. */
		buckets?: Record<string, string>;
		quantiles?: Record<string, string>;
		count?: string;
		sum?: string;
	}
	export interface PromFamily {
		name: string;
		help: string;
		type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
		metrics: PromSample[];
	}
	export default function parsePrometheusTextFormat(text: string): PromFamily[];
}
