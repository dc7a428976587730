'use strict';
/**
 * Builds n8n workflow JSON for the generators (scripts/gen-knowledge-workflows.js, scripts/gen-maas-workflows.js).
 * Node and assignment ids are name-based UUIDs (v5 layout over sha1 of the workflow id and the node name), so
 * re-running a generator gives the same files. The output is `JSON.stringify(workflow, null, 2)` + newline, the
 * form the generators' tests compare byte for byte with workflows-json/.
 */
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

/** Credentials of the shipped workflows (names a user maps on import). */
const PG = { postgresContractsApi: { id: 'pgContracts01', name: 'Contracts PostgreSQL' } };
const TELEGRAM = { contractsTelegramApi: { id: 'tgContracts01', name: 'Contracts Telegram Bot' } };
const EMBEDDINGS = { contractsEmbeddingsApi: { id: 'embContracts01', name: 'Contracts Embeddings' } };
const LLM = { contractsLlmApi: { id: 'llmContracts01', name: 'Contracts LLM' } };
/** The Error Pipe (seed 002 §2.3) every error branch calls. */
const WF99 = { id: 'WF99ErrorPipe', name: 'WF99 — Global ERR Handler' };
/**
 * The catch-all error workflow (issue 25 §2): every shipped workflow names it in settings.errorWorkflow, so a
 * failure no error branch caught still gets its ops.errors row (workflows-json/WF99e_catch_all.json).
 */
const CATCH_ALL = { id: 'WF99eCatchAll', name: 'WF99e — Catch-All Error Workflow' };

/** A deterministic UUID (version-5 layout) of `parts` joined with "/". */
function uuidOf(...parts) {
	const h = crypto.createHash('sha1').update(parts.join('/')).digest('hex');
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Seed 002 §2.3: the error_context.* + ctx assignments of a "Prepare DB Error" Set node (after an ERR — Source). */
const PREPARE_DB_ERROR = [
	['error_context.node', 'string', '={{ $json._err.node }}'],
	['error_context.operation', 'string', '={{ $json._err.operation }}'],
	['error_context.table', 'string', '={{ $json._err.table }}'],
	['error_context.correlation_id', 'string', '={{ $json._ctx.correlation_id }}'],
	['error_context.error_message', 'string', '={{ $json.error.message }}'],
	['error_context.status_code', 'number', '={{ $json.error.status_code }}'],
	['ctx', 'object', '={{ $json._ctx }}'],
];

/** The parameters of an Execute Workflow node that calls WF99 and waits for its envelope. */
const CALL_WF99_PARAMETERS = {
	source: 'database',
	workflowId: { __rl: true, mode: 'id', value: WF99.id, cachedResultName: WF99.name },
	mode: 'each',
	options: { waitForSubWorkflow: true },
};

/**
 * A workflow under construction: `add(node)` (the id is derived; returns the name), `connect(from, to, output)`,
 * `set(name, position, [[field, type, value]…], { include, notes, executeOnce })` (a Set 3.4 node, dot notation),
 * `errorBranch(source, x, defaultTable, errorOutput, y)` (the knowledge-bot error branch, one shared Prepare DB
 * Error / Call WF99), `toJSON()` and `write(dir, file)`.
 */
function workflowBuilder(id, name) {
	const nodes = [];
	const connections = {};
	const add = (node) => {
		nodes.push({ id: uuidOf(id, node.name), ...node });
		return node.name;
	};
	const connect = (from, to, output = 0) => {
		const main = (connections[from] ??= { main: [] }).main;
		while (main.length <= output) main.push([]);
		main[output].push({ node: to, type: 'main', index: 0 });
	};
	const set = (name, position, assignments, { include = true, notes, executeOnce } = {}) =>
		add({
			name,
			type: 'n8n-nodes-base.set',
			typeVersion: 3.4,
			position,
			parameters: {
				mode: 'manual',
				includeOtherFields: include,
				assignments: {
					assignments: assignments.map(([field, type, value]) => ({
						id: uuidOf(id, name, field),
						name: field,
						type,
						value,
					})),
				},
				options: { dotNotation: true },
			},
			...(executeOnce ? { executeOnce: true } : {}),
			...(notes ? { notes } : {}),
		});
	/**
	 * Seed 002 §2.3: "ERR — Source <node>" → "Prepare DB Error" → WF99 for the error output (index
	 * `errorOutput`) of `source`; several sources share one Prepare DB Error / Call WF99.
	 */
	const errorBranch = (source, x, defaultTable, errorOutput = 1, y = 200) => {
		const err = set(
			`ERR — Source ${source}`,
			[x, y],
			[
				['_err.node', 'string', source],
				['_err.operation', 'string', '={{ $json.error.error_context.operation }}'],
				['_err.table', 'string', `={{ $json.error.error_context.table || "${defaultTable}" }}`],
				['_ctx', 'object', '={{ $json.error.ctx }}'],
			],
			{ notes: 'Seed 002 §2.3: stamps the error source and glues _ctx.' },
		);
		connect(source, err, errorOutput);
		if (nodes.some((n) => n.name === 'Prepare DB Error')) {
			connect(err, 'Prepare DB Error');
			return;
		}
		const prepare = set('Prepare DB Error', [x + 240, 200], PREPARE_DB_ERROR, {
			notes: 'Seed 002 §2.3: error_context.* and ctx (with job_id: WF99 retries or fails the job).',
		});
		const call = add({
			name: 'Call WF99',
			type: 'n8n-nodes-base.executeWorkflow',
			typeVersion: 1.2,
			position: [x + 480, 200],
			parameters: CALL_WF99_PARAMETERS,
			notes: "WF99: ErrorEnvelope + ops.errors row (+ job retry); the envelope is this workflow's answer.",
		});
		connect(err, prepare);
		connect(prepare, call);
	};
	const toJSON = () => ({
		id,
		name,
		nodes,
		connections,
		settings: { executionOrder: 'v1', errorWorkflow: CATCH_ALL.id },
		pinData: {},
		active: false,
		tags: [],
	});
	const write = (dir, file) => fs.writeFileSync(path.join(dir, file), `${JSON.stringify(toJSON(), null, 2)}\n`);
	return { add, connect, set, errorBranch, toJSON, write };
}

/** The output folder of a generator: its first argument, else workflows-json/ (or `sub` under it). */
function outputDir(argv, sub = '') {
	return argv[2] ? path.resolve(argv[2]) : path.join(__dirname, '..', '..', 'workflows-json', sub);
}

module.exports = {
	CALL_WF99_PARAMETERS,
	CATCH_ALL,
	EMBEDDINGS,
	LLM,
	PG,
	PREPARE_DB_ERROR,
	TELEGRAM,
	WF99,
	outputDir,
	uuidOf,
	workflowBuilder,
};
