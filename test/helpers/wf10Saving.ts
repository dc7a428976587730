/**
 * The shipped WF10 (workflows-json/WF10_telegram_ingest.json) with successful executions saved: it ships with
 * saveDataSuccessExecution "none" (the raw row is the record); tests that read n8n's execution records (to
 * see which worker ran each delivery) import this copy instead. Same id (WF10TgIngest), nodes and webhook.
 */
import fs from 'node:fs';
import path from 'node:path';
import { WORKFLOWS } from './n8n';

/** The shipped WF10 with settings.saveDataSuccessExecution = 'all' (read from the shipped file on each call). */
export function wf10Saving(): { id: string; settings?: Record<string, unknown> } {
	const workflow = JSON.parse(fs.readFileSync(path.join(WORKFLOWS, 'WF10_telegram_ingest.json'), 'utf8')) as {
		id: string;
		settings?: Record<string, unknown>;
	};
	workflow.settings = { ...workflow.settings, saveDataSuccessExecution: 'all' };
	return workflow;
}
