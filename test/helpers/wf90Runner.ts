/**
 * Copies of the shipped WF90 Job Runner (workflows-json/WF90_job_runner.json) for queue-mode tests and the
 * queue bench: the same nodes and connections, with Runner Settings narrowed (job types, batch size) and,
 * where the caller decides when runs start, webhooks in place of the schedules. Write one with
 * writeWorkflow (test/helpers/n8nQueue.ts) and import it next to the shipped workflows.
 */
import fs from 'node:fs';
import path from 'node:path';
import { WORKFLOWS } from './n8n';

interface WorkflowNode {
	name: string;
	position: number[];
	parameters: { assignments?: { assignments: Array<{ name: string; value?: unknown }> } } & Record<string, unknown>;
}

export interface Wf90CopyOptions {
	/** The copy's workflow id (its id in n8n's execution records). */
	id: string;
	/** The copy's workflow name. */
	name: string;
	/** Runner Settings' req.job_types: the job types a run claims (comma-separated, e.g. 'document_chunk'). */
	jobTypes: string;
	/** Runner Settings' req.limit: the most jobs one run claims; absent: as shipped. */
	limit?: number;
	/**
	 * Absent: the shipped schedules (Every 10 Seconds, Every 20 Seconds) stay. Given: Every 10 Seconds is
	 * dropped and Run Now becomes a POST webhook at `run` (Runner Settings → Claim Jobs → Run Worker → Finish
	 * Job, answering every Run Summary item, [] when nothing was claimed); with `release`, Every 20 Seconds
	 * becomes a POST webhook at `release` running Release Stale with olderThanSeconds from the body's
	 * `older_than_seconds` and leaseGraceSeconds from its `lease_grace_seconds` (absent: 0, release by age
	 * only, as before issue 26); without it, Every 20 Seconds, Release Stale and its ERR node are dropped.
	 */
	webhooks?: { run: string; release?: string };
}

/** The shipped WF90's schedule of Release Stale (issue 26: every 20 s with a lease grace; before: every 5 min). */
export const RELEASE_SCHEDULE = 'Every 20 Seconds';

/** A POST webhook answering every item of the last node, in place of the trigger named `name`. */
function webhookNode(name: string, webhookPath: string, position: number[], n: number) {
	return {
		id: `9e900000-0000-4000-8000-0000000000b${n}`,
		name,
		type: 'n8n-nodes-base.webhook',
		typeVersion: 2.1,
		position,
		webhookId: `9e900000-0000-4000-8000-0000000000c${n}`,
		parameters: {
			httpMethod: 'POST',
			path: webhookPath,
			responseMode: 'lastNode',
			responseData: 'allEntries',
			options: {},
		},
	};
}

/**
 * The WF90 copy described by `options` (see Wf90CopyOptions), as a workflow object (id, name, nodes,
 * connections, settings as shipped). Reads the shipped file on each call.
 */
export function wf90Copy({ id, name, jobTypes, limit, webhooks }: Wf90CopyOptions) {
	const wf90 = JSON.parse(fs.readFileSync(path.join(WORKFLOWS, 'WF90_job_runner.json'), 'utf8'));
	const dropped = new Set<string>();
	if (webhooks) {
		dropped.add('Every 10 Seconds');
		if (!webhooks.release)
			for (const n of [RELEASE_SCHEDULE, 'Release Stale', 'ERR — Source Release Stale']) dropped.add(n);
	}
	const nodes = (wf90.nodes as WorkflowNode[])
		.filter((n) => !dropped.has(n.name))
		.map((n) => {
			if (webhooks && n.name === 'Run Now') return webhookNode('Run Now', webhooks.run, n.position, 1);
			if (webhooks?.release && n.name === RELEASE_SCHEDULE)
				return webhookNode(RELEASE_SCHEDULE, webhooks.release, n.position, 2);
			if (webhooks?.release && n.name === 'Release Stale')
				return {
					...n,
					parameters: {
						...n.parameters,
						olderThanSeconds: '={{ $json.body.older_than_seconds }}',
						leaseGraceSeconds: '={{ $json.body.lease_grace_seconds || 0 }}',
					},
				};
			if (n.name === 'Runner Settings') {
				const assignments = (n.parameters.assignments?.assignments ?? []).map((a) => {
					if (a.name === 'req.job_types') return { ...a, value: jobTypes };
					if (a.name === 'req.limit' && limit !== undefined) return { ...a, value: limit };
					return a;
				});
				return { ...n, parameters: { ...n.parameters, assignments: { assignments } } };
			}
			return n;
		});
	const connections = Object.fromEntries(
		Object.entries(wf90.connections as Record<string, unknown>).filter(([from]) => !dropped.has(from)),
	);
	return { ...wf90, id, name, nodes, connections };
}
