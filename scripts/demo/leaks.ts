/**
 * The demo's secret-leak check: whether a secret of this run (SECRETS, scripts/demo/settings.ts) appears in the
 * lines the demo printed (scripts/demo/state.ts records them) or in n8n's log and transcripts.
 */
import { SECRETS } from './settings';
import { printed } from './state';

/** Where a secret of this run appears: the demo's own output, n8n's log (names only, never the secret). */
export function leakedSecrets(n8nLog: string): string[] {
	const where: string[] = [];
	const out = printed.join('\n');
	if (SECRETS.some((s) => out.includes(s))) where.push("the demo's output");
	if (SECRETS.some((s) => n8nLog.includes(s))) where.push("n8n's log");
	return where;
}
