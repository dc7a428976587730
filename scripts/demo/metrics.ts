/**
 * The metrics part of the demo (M18, Prometheus scrape at GET /webhook/metrics): scrapes it with this run's
 * scrape token and prints the lines that count the demo's query run.
 */
import { SCRAPE_TOKEN } from './settings';

/** The metric families the demo shows from the scrape: runs per status, requests, completions, Generate calls, LLM requests. */
const SHOWN_METRICS =
	/^contracts_(pipeline_finished_runs_total\{status="(COMPLETED|FAILED)"\}|(pipeline_requests_total|pipeline_completion_duration_seconds_count|pipeline_module_calls_total|llm_requests_total)[{ ])/;

/** GET /webhook/metrics (M18) and prints the lines that count the demo's run (and how many lines the scrape had). */
export async function showMetrics(n8nUrl: string) {
	try {
		const res = await fetch(`${n8nUrl}/webhook/metrics`, { headers: { authorization: `Bearer ${SCRAPE_TOKEN}` } });
		const text = await res.text();
		const lines = text.split('\n');
		console.log(
			`\n  GET /webhook/metrics (Authorization: Bearer <the scrape token>) → HTTP ${res.status} ${res.headers.get('content-type') ?? ''}, ${lines.filter((l) => l && !l.startsWith('#')).length} samples; those counting the run:`,
		);
		for (const l of lines.filter((x) => SHOWN_METRICS.test(x))) console.log(`    ${l}`);
	} catch (error) {
		console.log(`  metrics: ${(error as Error).message}`);
	}
}
