/**
 * The n8n floor of the MaaS pipeline chain for `npm run bench:pipeline` (issue 29 P7): the shipped M00,
 * M10, M11, M12, M13, M14 and M16 with every node of this package replaced by a No Op, so a run makes the
 * same executions (1 × M00, 4 × M10, 4 × M16, M11, M12, M13, M14 = 13) and the same hand-offs as ours,
 * through n8n alone. Written to bench/workflows/BENCH_pipeline_floor_*.json by
 * `node --import tsx bench/pipelineFloor.ts` (then `npx prettier --write bench/workflows`); the bench refuses
 * to run when the committed files differ (as data) from what floorWorkflows() makes from the shipped
 * workflows now (regenerate after changing them).
 *
 * How each workflow is turned into its floor:
 *  - a Pipeline Capture node → a No Op of the same name; when its error output is wired (onError
 *    continueErrorOutput), the No Op's error output is wired to the same error branch (never taken: the
 *    branch's cost of being carried stays in the floor, as in P1's floor + error branch);
 *  - M00's Webhook → the same Webhook (JWT Auth, Respond to Webhook) on bench/pipeline-floor/query; the
 *    client sends { request_id, query, trigger, push } (the floor has no table to make an id), Respond
 *    answers { request_id, status } with 201;
 *  - M10's Pipeline Trigger (LISTEN: a NOTIFY per status change) → a Webhook on
 *    bench/pipeline-floor/trigger answering at once (a started execution on main, enqueued in queue mode,
 *    as the trigger's emit is);
 *  - each status change ours makes by SQL (Create Run: NEW; Complete Step: ANALYZED, READY, COMPLETED) →
 *    an HTTP Request node POSTing the run ({ ...run, status }) to that trigger webhook (the hand-off), with
 *    n8n's Retry On Fail (5 tries, 200 ms apart: a webhook can refuse, a NOTIFY cannot);
 *  - the push (M17 listening for COMPLETED) → an HTTP Request node in M13 POSTing
 *    { request_id, status: 'completed', answer } to the bench's push receiver (`push` in the run);
 *  - Switch and If conditions read the run from the webhook body (`$json.body.status` for `$json.status`,
 *    `$json.body.<field>` for `$json.data.<field>`); M14's run carries status COMPLETED and no archived_at /
 *    next_run_id, so it goes Summarise → Archive → Next Run Waiting? (false) as ours does;
 *  - Execute Workflow nodes call the floor copies (WF99 as shipped: only reached on an error, never here).
 * Settings as shipped (n8n's default execution saving, the same errorWorkflow).
 */
import fs from 'node:fs';
import path from 'node:path';

interface Node {
	id: string;
	name: string;
	type: string;
	typeVersion: number;
	position: [number, number];
	parameters: Record<string, unknown>;
	webhookId?: string;
	onError?: string;
	credentials?: Record<string, unknown>;
	[key: string]: unknown;
}

type Connections = Record<string, { main: Array<Array<{ node: string; type: string; index: number }>> }>;

interface Workflow {
	id: string;
	name: string;
	nodes: Node[];
	connections: Connections;
	settings: Record<string, unknown>;
	[key: string]: unknown;
}

const MAAS = path.join(__dirname, '..', 'workflows-json', 'maas');
const OUT = path.join(__dirname, 'workflows');

/** Webhook paths of the floor: the client's submit and the hand-off trigger. */
export const FLOOR_QUERY_HOOK = 'bench/pipeline-floor/query';
export const FLOOR_TRIGGER_HOOK = 'bench/pipeline-floor/trigger';

/** Shipped workflow id → its file, the floor's id and file (bench/workflows/BENCH_pipeline_floor_<Mxx>.json). */
export const FLOOR_OF: Record<string, { shipped: string; id: string; file: string }> = {
	M00RequestHndlr: { shipped: 'M00_request_handler.json', id: 'BenchPFloorM00', file: 'BENCH_pipeline_floor_M00.json' },
	M10Orchestrator: { shipped: 'M10_orchestrator.json', id: 'BenchPFloorM10', file: 'BENCH_pipeline_floor_M10.json' },
	M11Analyzer: { shipped: 'M11_analyzer.json', id: 'BenchPFloorM11', file: 'BENCH_pipeline_floor_M11.json' },
	M12Assembler: { shipped: 'M12_assembler.json', id: 'BenchPFloorM12', file: 'BENCH_pipeline_floor_M12.json' },
	M13FinalResp: { shipped: 'M13_final_responder.json', id: 'BenchPFloorM13', file: 'BENCH_pipeline_floor_M13.json' },
	M14Archivist: { shipped: 'M14_archivist.json', id: 'BenchPFloorM14', file: 'BENCH_pipeline_floor_M14.json' },
	M16Dispatch: { shipped: 'M16_dispatch.json', id: 'BenchPFloorM16', file: 'BENCH_pipeline_floor_M16.json' },
};

/** The status each step's Complete Step sets (its hand-off), by shipped workflow id. */
const NEXT_STATUS: Record<string, string> = {
	M11Analyzer: 'ANALYZED',
	M12Assembler: 'READY',
	M13FinalResp: 'COMPLETED',
};

/** A deterministic UUID-shaped id (webhook ids and the added nodes' ids). */
function fixedId(workflow: number, n: number): string {
	return `f7000000-0000-4000-8000-${String(workflow).padStart(4, '0')}${String(n).padStart(8, '0')}`;
}

/** An HTTP Request node POSTing `body` (an expression) to `url` (an expression); the response is not used. */
function httpPost(
	id: string,
	name: string,
	position: [number, number],
	url: string,
	body: string,
	notes: string,
): Node {
	return {
		id,
		name,
		type: 'n8n-nodes-base.httpRequest',
		typeVersion: 4.2,
		position,
		parameters: { method: 'POST', url, sendBody: true, specifyBody: 'json', jsonBody: body, options: {} },
		// a NOTIFY cannot be refused, a webhook can (n8n 2.4.8's main answers 503 "Database is not ready!"
		// under 200 clients): n8n's own retry keeps the floor from losing runs; never taken when all is well
		retryOnFail: true,
		maxTries: 5,
		waitBetweenTries: 200,
		notes,
	};
}

/** The hand-off of one status change: the run with its new status, to the floor's trigger webhook. */
function handOff(id: string, status: string, position: [number, number]): Node {
	return httpPost(
		id,
		`Hand-off ${status}`,
		position,
		'={{ $json.body.trigger }}',
		`={{ JSON.stringify(Object.assign({}, $json.body, { status: '${status}' })) }}`,
		`Stands for the NOTIFY of the ${status} status change (ours: pipeline_runs UPDATE → Pipeline Trigger).`,
	);
}

/** Rewrites Switch / If conditions to read the run from the trigger webhook's body. */
function readBody(parameters: Record<string, unknown>): Record<string, unknown> {
	return JSON.parse(
		JSON.stringify(parameters)
			.replace(/\$json\.status\b/g, '$json.body.status')
			.replace(/\$json\.data\./g, '$json.body.'),
	);
}

/** The floor of one shipped workflow (see the file header). */
function floorOf(shippedId: string, index: number): Workflow {
	const entry = FLOOR_OF[shippedId];
	const shipped = JSON.parse(fs.readFileSync(path.join(MAAS, entry.shipped), 'utf8')) as Workflow;
	if (shipped.id !== shippedId) throw new Error(`${entry.shipped}: id ${shipped.id}, expected ${shippedId}`);
	const connections: Connections = JSON.parse(JSON.stringify(shipped.connections));
	let added = 0;
	const nodes: Node[] = shipped.nodes.map((node) => {
		if (node.type === 'n8n-nodes-contracts.pipelineTrigger')
			return {
				id: node.id,
				name: node.name,
				type: 'n8n-nodes-base.webhook',
				typeVersion: 2.1,
				position: node.position,
				webhookId: fixedId(index, ++added),
				parameters: { httpMethod: 'POST', path: FLOOR_TRIGGER_HOOK, responseMode: 'onReceived', options: {} },
				notes: 'Stands for the Pipeline Trigger: one execution per status change, started on main.',
			};
		if (node.type.startsWith('n8n-nodes-contracts.')) {
			const outputs = connections[node.name]?.main ?? [];
			const errorWired = node.onError === 'continueErrorOutput' && outputs.length > 1;
			if (errorWired) {
				const error = outputs[outputs.length - 1];
				if (!error.every((t) => t.node.startsWith('ERR — Source')))
					throw new Error(`${entry.shipped} ${node.name}: its last output does not lead to an ERR — Source node`);
				connections[node.name] = { main: [outputs[0] ?? [], error] };
			} else if (outputs.length) connections[node.name] = { main: [outputs[0]] };
			return {
				id: node.id,
				name: node.name,
				type: 'n8n-nodes-base.noOp',
				typeVersion: 1,
				position: node.position,
				parameters: {},
				...(errorWired ? { onError: 'continueErrorOutput' } : {}),
				notes: `Stands where ${node.type.replace('n8n-nodes-contracts.', '')} stands: n8n's cost of one node.`,
			};
		}
		const copy: Node = JSON.parse(JSON.stringify(node));
		if (copy.type === 'n8n-nodes-base.webhook') {
			copy.parameters.path = FLOOR_QUERY_HOOK;
			copy.webhookId = fixedId(index, ++added);
		}
		if (copy.type === 'n8n-nodes-base.switch' || copy.type === 'n8n-nodes-base.if')
			copy.parameters = readBody(copy.parameters);
		if (copy.type === 'n8n-nodes-base.respondToWebhook' && copy.name === 'Respond')
			copy.parameters.responseBody =
				"={{ JSON.stringify({ request_id: $json.body.request_id, status: 'processing' }) }}";
		if (copy.type === 'n8n-nodes-base.executeWorkflow') {
			const target = copy.parameters.workflowId as { value: string; cachedResultName?: string };
			const floor = FLOOR_OF[target.value];
			if (floor) copy.parameters.workflowId = { ...target, value: floor.id, cachedResultName: floor.id };
		}
		return copy;
	});
	const wire = (from: string, to: string) => {
		const outputs = (connections[from] ??= { main: [[]] }).main;
		outputs[0] = [...(outputs[0] ?? []), { node: to, type: 'main', index: 0 }];
	};
	const beside = (name: string, dy: number): [number, number] => {
		const p = nodes.find((n) => n.name === name)!.position;
		return [p[0] + 240, p[1] + dy];
	};
	if (shippedId === 'M00RequestHndlr') {
		nodes.push(handOff(fixedId(index, ++added), 'NEW', beside('Create Run', 200)));
		wire('Create Run', 'Hand-off NEW');
	}
	const next = NEXT_STATUS[shippedId];
	if (next === 'COMPLETED') {
		// the push first (as M17 answers on the COMPLETED notification), then the Orchestrator's hand-off
		nodes.push(
			httpPost(
				fixedId(index, ++added),
				'Push Answer',
				beside('Complete Step', -200),
				'={{ $json.body.push }}',
				"={{ JSON.stringify({ request_id: $json.body.request_id, status: 'completed', answer: 'Answer to: ' + $json.body.query }) }}",
				'Stands for Pipeline Push (M17): the answer to the client, here through the bench receiver.',
			),
		);
		wire('Complete Step', 'Push Answer');
	}
	if (next) {
		nodes.push(handOff(fixedId(index, ++added), next, beside('Complete Step', 200)));
		wire('Complete Step', `Hand-off ${next}`);
	}
	return {
		id: entry.id,
		name: `BENCH — pipeline floor: ${shipped.name}`,
		nodes,
		connections,
		settings: shipped.settings,
		active: false,
		pinData: {},
		tags: [],
	};
}

/** Every floor workflow, keyed by its file name under bench/workflows/. */
export function floorWorkflows(): Record<string, Workflow> {
	return Object.fromEntries(Object.keys(FLOOR_OF).map((id, i) => [FLOOR_OF[id].file, floorOf(id, i + 1)]));
}

/**
 * The floor files to import.
 * @throws when one is missing or differs (as data) from floorWorkflows(): regenerate them
 */
export function floorFiles(): string[] {
	return Object.entries(floorWorkflows()).map(([file, workflow]) => {
		const full = path.join(OUT, file);
		// compared as data: the committed files are formatted by prettier
		const same =
			fs.existsSync(full) && JSON.stringify(JSON.parse(fs.readFileSync(full, 'utf8'))) === JSON.stringify(workflow);
		if (!same)
			throw new Error(
				`${full} is missing or not what the shipped workflows make now: run node --import tsx bench/pipelineFloor.ts`,
			);
		return full;
	});
}

if (require.main === module) {
	for (const [file, workflow] of Object.entries(floorWorkflows())) {
		fs.writeFileSync(path.join(OUT, file), `${JSON.stringify(workflow, null, 2)}\n`);
		console.log(`wrote bench/workflows/${file} (${workflow.nodes.length} nodes)`);
	}
}
