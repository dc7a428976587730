/**
 * Test workflows for the catch-all error workflow (issue 25 §2, workflows-json/WF99e_catch_all.json): each
 * started by a webhook (answered on receipt), each naming WF99e as its error workflow, each failing in one
 * way. Their rows are found by `workflow` (the workflow's name, or the ctx.workflow its error branch sets).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { CATCH_ALL, uuidOf } = require('../../scripts/lib/workflowBuilder');

export const CATCH_ALL_ID: string = CATCH_ALL.id;

interface Node {
	name: string;
	type: string;
	typeVersion: number;
	parameters: Record<string, unknown>;
	onError?: string;
	webhookId?: string;
}

function workflow(id: string, name: string, nodes: Node[], chain: Array<[string, string, number?]>, settings = {}) {
	const connections: Record<string, { main: Array<Array<{ node: string; type: string; index: number }>> }> = {};
	for (const [from, to, output = 0] of chain) {
		const main = (connections[from] ??= { main: [] }).main;
		while (main.length <= output) main.push([]);
		main[output].push({ node: to, type: 'main', index: 0 });
	}
	return {
		id,
		name,
		nodes: nodes.map((n, i) => ({ id: uuidOf(id, n.name), position: [i * 240, 0], ...n })),
		connections,
		settings: { executionOrder: 'v1', errorWorkflow: CATCH_ALL.id, ...settings },
		pinData: {},
		active: false,
	};
}

function webhook(id: string, urlPath: string): Node {
	return {
		name: 'Webhook',
		type: 'n8n-nodes-base.webhook',
		typeVersion: 2.1,
		webhookId: uuidOf(id, 'webhook'),
		parameters: { httpMethod: 'POST', path: urlPath, responseMode: 'onReceived', options: {} },
	};
}

function stopAndError(name: string, message: string): Node {
	return {
		name,
		type: 'n8n-nodes-base.stopAndError',
		typeVersion: 1,
		parameters: { errorType: 'errorMessage', errorMessage: message },
	};
}

/** An HTTP Request to a closed loopback port (connection refused), its error output enabled. */
function refusedRequest(name: string): Node {
	return {
		name,
		type: 'n8n-nodes-base.httpRequest',
		typeVersion: 4.2,
		parameters: { url: 'http://127.0.0.1:1/', options: {} },
		onError: 'continueErrorOutput',
	};
}

function callWorkflow(name: string, workflowId: string): Node {
	return {
		name,
		type: 'n8n-nodes-base.executeWorkflow',
		typeVersion: 1.2,
		parameters: {
			source: 'database',
			workflowId: { __rl: true, mode: 'id', value: workflowId },
			mode: 'each',
			options: { waitForSubWorkflow: true },
		},
	};
}

/** The cases: webhook path, the workflow name its rows carry, and the workflow. */
export const CASES = {
	/** A node that throws, no error output. */
	throws: {
		path: 'test/catch-all/throws',
		rowWorkflow: 'TEST catch-all — throws',
		node: 'Throw',
		workflow: workflow(
			'TestCatchAllThrows',
			'TEST catch-all — throws',
			[webhook('TestCatchAllThrows', 'test/catch-all/throws'), stopAndError('Throw', 'thrown with no error output')],
			[['Webhook', 'Throw']],
		),
	},
	/** The workflow's own timeout (settings.executionTimeout, 1 s) hit while a Wait node waits 4 s. */
	timeout: {
		path: 'test/catch-all/timeout',
		rowWorkflow: 'TEST catch-all — timeout',
		node: 'Wait 4 s',
		workflow: workflow(
			'TestCatchAllTimeout',
			'TEST catch-all — timeout',
			[
				webhook('TestCatchAllTimeout', 'test/catch-all/timeout'),
				{
					name: 'Wait 4 s',
					type: 'n8n-nodes-base.wait',
					typeVersion: 1.1,
					parameters: { resume: 'timeInterval', amount: 4, unit: 'seconds' },
				},
				{ name: 'After the Wait', type: 'n8n-nodes-base.noOp', typeVersion: 1, parameters: {} },
			],
			[
				['Webhook', 'Wait 4 s'],
				['Wait 4 s', 'After the Wait'],
			],
			{ executionTimeout: 1 },
		),
	},
	/**
	 * An error branch records a refused request (node Fetch) through WF99, then the execution fails anyway at
	 * another node (Fail After Recording): another failure, so the catch-all writes its row too, linked to
	 * the branch row by details.branch_error_id.
	 */
	branchRecorded: {
		path: 'test/catch-all/branch',
		rowWorkflow: 'TEST catch-all — branch',
		node: 'Fetch',
		failNode: 'Fail After Recording',
		workflow: workflow(
			'TestCatchAllBranch',
			'TEST catch-all — branch',
			[
				webhook('TestCatchAllBranch', 'test/catch-all/branch'),
				refusedRequest('Fetch'),
				{
					name: 'Prepare DB Error',
					type: 'n8n-nodes-base.set',
					typeVersion: 3.4,
					parameters: {
						mode: 'manual',
						includeOtherFields: true,
						assignments: {
							assignments: [
								{ id: 'a1', name: 'error_context.node', type: 'string', value: 'Fetch' },
								{ id: 'a2', name: 'ctx.workflow', type: 'string', value: 'TEST catch-all — branch' },
							],
						},
						options: { dotNotation: true },
					},
				},
				callWorkflow('Call WF99', 'WF99ErrorPipe'),
				stopAndError('Fail After Recording', 'failed after the branch recorded'),
			],
			[
				['Webhook', 'Fetch'],
				['Fetch', 'Prepare DB Error', 1],
				['Prepare DB Error', 'Call WF99'],
				['Call WF99', 'Fail After Recording'],
			],
		),
	},
	/** A 20 s Wait (in-process: under 65 s), long enough to kill the worker that runs it (queue mode). */
	slow: {
		path: 'test/catch-all/slow',
		rowWorkflow: 'TEST catch-all — slow',
		node: null,
		workflow: workflow(
			'TestCatchAllSlow',
			'TEST catch-all — slow',
			[
				webhook('TestCatchAllSlow', 'test/catch-all/slow'),
				{
					name: 'Wait 20 s',
					type: 'n8n-nodes-base.wait',
					typeVersion: 1.1,
					parameters: { resume: 'timeInterval', amount: 20, unit: 'seconds' },
				},
				{ name: 'After the Wait', type: 'n8n-nodes-base.noOp', typeVersion: 1, parameters: {} },
			],
			[
				['Webhook', 'Wait 20 s'],
				['Wait 20 s', 'After the Wait'],
			],
		),
	},
	/**
	 * The error branch's "Call WF99" itself fails (it names a workflow that does not exist). Stop and Error has
	 * no output, so its error output cannot be used: the branches start at a refused HTTP Request. The id is an
	 * expression: n8n refuses to publish a workflow whose Execute Workflow node names an unpublished workflow by a
	 * fixed id (2.4.8's workflow-validation.service.js), and skips that check for expressions, as for any id
	 * known only at run time; the call then fails when it runs, as intended.
	 */
	callWf99Fails: {
		path: 'test/catch-all/call-fails',
		rowWorkflow: 'TEST catch-all — Call WF99 fails',
		node: 'Call WF99',
		workflow: workflow(
			'TestCatchAllCallFails',
			'TEST catch-all — Call WF99 fails',
			[
				webhook('TestCatchAllCallFails', 'test/catch-all/call-fails'),
				refusedRequest('Fetch'),
				callWorkflow('Call WF99', '={{ "WF99DoesNotExist" }}'),
			],
			[
				['Webhook', 'Fetch'],
				['Fetch', 'Call WF99', 1],
			],
		),
	},
};

/** Writes `wf` into a temp folder of its own for import; returns the file (removeTestWorkflows removes it). */
export function writeTestWorkflow(wf: { id: string }): string {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-catch-all-'));
	const file = path.join(dir, `${wf.id}.json`);
	fs.writeFileSync(file, JSON.stringify(wf));
	return file;
}

/** Removes the temp folders of files writeTestWorkflow wrote. */
export function removeTestWorkflows(files: string[]): void {
	for (const file of files) fs.rmSync(path.dirname(file), { recursive: true, force: true });
}

export interface ErrorRow {
	id: string;
	workflow: string | null;
	node: string | null;
	source: string;
	message: string;
	details: Record<string, any>;
}

/** The ops.errors rows of `workflow`, oldest first. */
export async function rowsOfWorkflow(pool: Pool, name: string): Promise<ErrorRow[]> {
	const { rows } = await pool.query(
		'SELECT id::text, workflow, node, source, message, details FROM ops.errors WHERE workflow = $1 ORDER BY id',
		[name],
	);
	return rows;
}

/**
 * Waits until `workflow` has at least one row (up to `timeoutMs`), then `settleMs` more (a second row, if
 * one were coming, would be written by then), and returns its rows.
 */
export async function settledRows(
	pool: Pool,
	name: string,
	{ timeoutMs = 60_000, settleMs = 4_000 } = {},
): Promise<ErrorRow[]> {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline && (await rowsOfWorkflow(pool, name)).length === 0)
		await new Promise((r) => setTimeout(r, 250));
	await new Promise((r) => setTimeout(r, settleMs));
	return rowsOfWorkflow(pool, name);
}

/** The last id ops.errors' sequence gave out (the catch-all takes one up front even when it writes no row). */
export async function errorSequence(pool: Pool): Promise<number> {
	const { rows } = await pool.query(
		'SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM ops.errors_id_seq',
	);
	return Number(rows[0].n);
}
