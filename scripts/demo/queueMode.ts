/**
 * The demo's queue mode (`npm run demo -- --queue [--workers N]`, scripts/lib/n8nQueue.js): the command-line
 * argument, the WF10 copy that saves its successful executions, and the closing report of which worker ran what.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { ROOT, STAGE } from './settings';

/**
 * Parses `--queue [--workers N]` (also `--workers=N`): N workers (default 2), or null without --queue.
 * Exits with code 2 and a message for a bad N or --workers without --queue.
 */
export function queueArgument(args: string[]): number | null {
	const at = args.findIndex((a) => a === '--workers' || a.startsWith('--workers='));
	const raw = at < 0 ? undefined : args[at].includes('=') ? args[at].slice('--workers='.length) : args[at + 1];
	const usage = (why: string) => {
		console.error(`${why}\nusage: npm run demo -- [--once] [--queue [--workers N]]   (N from 1 to 8, default 2)`);
		process.exit(2);
	};
	if (!args.includes('--queue')) {
		if (at >= 0) usage('--workers needs --queue');
		return null;
	}
	if (at < 0) return 2;
	const n = Number(raw);
	if (!Number.isInteger(n) || n < 1 || n > 8)
		usage(`--workers must be a whole number from 1 to 8, got ${raw ?? 'nothing'}`);
	return n;
}

/** The shipped WF10 with its successful executions saved (it ships with saving off), in a temp folder; returns the file. */
export function wf10SavingCopy(): string {
	const workflow = JSON.parse(fs.readFileSync(path.join(ROOT, 'workflows-json', 'WF10_telegram_ingest.json'), 'utf8'));
	workflow.settings = { ...workflow.settings, saveDataSuccessExecution: 'all' };
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-demo-wf10-'));
	const file = path.join(dir, 'WF10_telegram_ingest.json');
	fs.writeFileSync(file, JSON.stringify(workflow));
	return file;
}

interface QueueRole {
	role: string;
	startedExecutions(): string[];
}

/**
 * Queue mode: prints, per worker, the executions it started (its log) by workflow (n8n's execution_entity)
 * and the jobs its WF90 runs finished by job type (ops.job_runs), then the executions no worker started
 * (sub-workflows: they run inside their caller's execution on the caller's worker) and what main ran itself.
 */
export async function whichWorkerRanWhat(
	cluster: {
		main: { transcript(): string };
		workers: QueueRole[];
		n8nDatabaseUrl: string;
		workerOfExecutions(): Map<string, string[]>;
	},
	db: Client,
) {
	const n8nDb = new Client({ connectionString: cluster.n8nDatabaseUrl });
	await n8nDb.connect();
	let executions: { id: string; workflow: string; mode: string }[];
	try {
		executions = (
			await n8nDb.query(`SELECT e.id::text, coalesce(w.name, e."workflowId") AS workflow, e.mode FROM execution_entity e
			LEFT JOIN workflow_entity w ON w.id = e."workflowId" ORDER BY e.id`)
		).rows;
	} finally {
		await n8nDb.end();
	}
	const workflowOf = new Map(executions.map((e) => [e.id, e.workflow]));
	const started = cluster.workerOfExecutions();
	const runs = (
		await db.query(`SELECT r.worker, j.job_type, count(*)::int AS n FROM ops.job_runs r JOIN ops.jobs j ON j.id = r.job_id
		WHERE r.worker LIKE 'wf90-%' GROUP BY 1, 2`)
	).rows as { worker: string; job_type: string; n: number }[];
	const tally = (counts: Map<string, number>) =>
		[...counts]
			.sort((a, b) => b[1] - a[1])
			.map(([k, n]) => `${k} ×${n}`)
			.join(', ') || 'none';
	console.log(
		"\nWhich worker ran what (queue mode; main received the webhooks and fired WF90's schedule, workers ran the executions):",
	);
	for (const worker of cluster.workers) {
		const ids = worker.startedExecutions();
		const byWorkflow = new Map<string, number>();
		for (const id of ids)
			byWorkflow.set(
				workflowOf.get(id) ?? `execution ${id} (no record)`,
				(byWorkflow.get(workflowOf.get(id) ?? `execution ${id} (no record)`) ?? 0) + 1,
			);
		const mine = new Set(ids.map((id) => `wf90-${id}`));
		const byJobType = new Map<string, number>();
		for (const r of runs)
			if (mine.has(r.worker))
				byJobType.set(STAGE[r.job_type] ?? r.job_type, (byJobType.get(STAGE[r.job_type] ?? r.job_type) ?? 0) + r.n);
		console.log(`  ${worker.role}: ${ids.length} executions — ${tally(byWorkflow)}`);
		console.log(`  ${' '.repeat(worker.role.length)}  job runs in its WF90 executions — ${tally(byJobType)}`);
	}
	const twice = [...started].filter(([, by]) => by.length > 1).map(([id]) => id);
	if (twice.length) console.log(`  started by more than one worker: executions ${twice.join(', ')}`);
	const inline = new Map<string, number>();
	for (const e of executions) if (!started.has(e.id)) inline.set(e.workflow, (inline.get(e.workflow) ?? 0) + 1);
	console.log(`  not queued (sub-workflows, run inside their caller on the caller's worker): ${tally(inline)}`);
	console.log(
		`  main ran ${(cluster.main.transcript().match(/Worker started execution/g) ?? []).length} executions itself`,
	);
}
