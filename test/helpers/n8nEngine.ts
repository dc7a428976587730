/**
 * Runs a small workflow IN-PROCESS through n8n's real execution engine (n8n-core 2.4.4, the version
 * n8n 2.4.8 ships): a real n8n-workflow `Workflow`, `WorkflowExecute`, our node types from the TS
 * sources, so n8n itself resolves parameters and expressions, applies onError (continueRegularOutput /
 * continueErrorOutput: the engine moves `{ json: { error } }` items to the error output and merges the
 * paired input item into them), checks the node's credential declarations (declared, set on the node,
 * shown for its parameters) and follows pairedItem (`$('Input').item`; n8n fills a missing pairedItem
 * only for one input item or one output of as many items, so for our multi-output nodes it must be ours).
 *
 * What is not n8n's own here, and why:
 *  - `Input`: a pass-through start node holding the test's items (in n8n's place of a Webhook or Manual
 *    Trigger; the items enter as the trigger's output, as n8n's NodeTestHarness starts an execution), and
 *    a sink (`sinkOf(node, output)`, the same pass-through) after every main output not wired in
 *    `connections`, so what the engine routed where is visible in the run data;
 *  - `EngineCredentials`: the ICredentialsHelper n8n's CLI implements with its database; here a map
 *    type → decrypted data, with the CLI's expression resolution of credential fields (`={{ … }}`);
 *  - `additionalData`: only what WorkflowExecute and the node contexts read (hooks, credentials helper,
 *    execution id, base URLs); executeWorkflow / task runners throw (sub-workflows are not supported).
 * n8n-core's @n8n/di Container provides InstanceSettings, GlobalConfig and Logger themselves; they read
 * N8N_USER_FOLDER, set to a temporary folder (removed by `stopEngine`) before the first run. Call
 * `stopEngine()` in `after`: without it the test process never exits (n8n-core's SSH cleanup interval).
 * Loaded from the TS sources, the nodes share module state (pools, executionPool's cache) with the test.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import {
	ICredentialsHelper,
	NodeConnectionTypes,
	NodeHelpers,
	Workflow,
	createRunExecutionData,
	type ICredentialDataDecryptedObject,
	type ICredentials,
	type ICredentialsExpressionResolveValues,
	type IConnections,
	type IExecuteFunctions,
	type INode,
	type INodeExecutionData,
	type INodeParameters,
	type INodeType,
	type INodeTypeDescription,
	type INodeTypes,
	type IRun,
	type IWorkflowExecuteAdditionalData,
	type WorkflowExecuteMode,
} from 'n8n-workflow';

/** The package prefix of our node types in a workflow (`n8n-nodes-contracts.telegramIngest`). */
export const PACKAGE = 'n8n-nodes-contracts';
/** Type of the pass-through start node (`Input`) and of the sinks. */
export const PASS_THROUGH = 'n8n-nodes-contracts-test.passThrough';

/** Our node types by short name: file under nodes/ (loaded from the TS sources on first use). */
const SOURCES: Record<string, string> = {
	pipelineCapture: 'PipelineCapture/PipelineCapture.node.ts',
	telegramIngest: 'TelegramIngest/TelegramIngest.node.ts',
	errorPipe: 'ErrorPipe/ErrorPipe.node.ts',
	knowledgeBot: 'KnowledgeBot/KnowledgeBot.node.ts',
	arangoCas: 'ArangoCas/ArangoCas.node.ts',
	contextLoader: 'ContextLoader/ContextLoader.node.ts',
};

/** A node that emits its input unchanged (the engine pairs each output item to its input item). */
class PassThrough implements INodeType {
	description = {
		displayName: 'Pass Through',
		name: 'passThrough',
		group: ['transform'],
		version: 1,
		description: 'Test stand-in: emits its input unchanged',
		defaults: { name: 'Pass Through' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [],
	} as INodeType['description'];

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [this.getInputData()];
	}
}

const loaded = new Map<string, INodeType>();

function nodeType(type: string): INodeType {
	const known = loaded.get(type);
	if (known) return known;
	let created: INodeType;
	if (type === PASS_THROUGH) created = new PassThrough();
	else {
		const short = type.startsWith(`${PACKAGE}.`) ? type.slice(PACKAGE.length + 1) : '';
		const file = SOURCES[short];
		if (!file) throw new Error(`n8nEngine: unknown node type ${type}`);
		// "X.node" without the extension would resolve to the codex .json beside it
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const module = require(path.join(__dirname, '..', '..', 'nodes', file)) as Record<string, new () => INodeType>;
		const Class = Object.values(module).find((v) => typeof v === 'function' && v.prototype?.execute);
		if (!Class) throw new Error(`n8nEngine: ${file} exports no node type`);
		created = new Class();
	}
	loaded.set(type, created);
	return created;
}

/** n8n's INodeTypes over our node types and the pass-through. */
const NODE_TYPES: INodeTypes = {
	getByName: (type: string) => nodeType(type),
	getByNameAndVersion: (type: string) => nodeType(type),
	getKnownTypes: () => ({}),
};

/**
 * The credentials n8n would decrypt from its database, by credential type. Like n8n's CLI
 * CredentialsHelper, a field holding an expression (`={{ … }}`) is resolved against the item the node
 * is reading it for.
 */
class EngineCredentials extends ICredentialsHelper {
	/** Credential types read, in order (to assert n8n asked for the declared one). */
	readonly requested: string[] = [];

	constructor(private readonly byType: Record<string, ICredentialDataDecryptedObject>) {
		super();
	}

	getParentTypes(): string[] {
		return [];
	}

	async authenticate(_c: ICredentialDataDecryptedObject, _t: string, requestOptions: object) {
		return requestOptions as never;
	}

	async preAuthentication() {
		return undefined;
	}

	async getCredentials(): Promise<ICredentials> {
		throw new Error('n8nEngine: getCredentials (encrypted credentials) is not supported');
	}

	async getDecrypted(
		_additionalData: IWorkflowExecuteAdditionalData,
		_nodeCredentials: unknown,
		type: string,
		mode: WorkflowExecuteMode,
		_executeData?: unknown,
		_raw?: boolean,
		resolve?: ICredentialsExpressionResolveValues,
	): Promise<ICredentialDataDecryptedObject> {
		this.requested.push(type);
		const data = this.byType[type];
		if (!data) throw new Error(`n8nEngine: no ${type} credential given`);
		if (!resolve) return { ...data };
		const fields = data as INodeParameters;
		return resolve.workflow.expression.getParameterValue(
			fields,
			resolve.runExecutionData,
			resolve.runIndex,
			resolve.itemIndex,
			resolve.node.name,
			resolve.connectionInputData,
			mode,
			{},
			undefined,
			false,
			fields,
		) as ICredentialDataDecryptedObject;
	}

	async updateCredentials(): Promise<void> {}

	async updateCredentialsOauthTokenData(): Promise<void> {}

	getCredentialsProperties() {
		return [];
	}
}

let userFolder: string | undefined;

/** Loads n8n-core once N8N_USER_FOLDER points at a temporary folder (its InstanceSettings write there). */
function core(): typeof import('n8n-core') {
	if (!userFolder) {
		userFolder = fs.mkdtempSync(path.join(os.tmpdir(), 'n8n-engine-'));
		process.env.N8N_USER_FOLDER = userFolder;
	}
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	return require('n8n-core') as typeof import('n8n-core');
}

/**
 * Ends what n8n-core started in this process, as n8n's shutdown does (call in `after`): the SSH clients
 * manager every node context creates holds a 60 s cleanup interval that keeps the process alive. Removes
 * the temporary n8n user folder.
 */
export function stopEngine(): void {
	if (!userFolder) return;
	// n8n-core's own copies of @n8n/di and its SSH clients manager (not part of n8n-core's public index)
	const fromCore = createRequire(require.resolve('n8n-core'));
	const { Container } = fromCore('@n8n/di') as typeof import('@n8n/di');
	const { SSHClientsManager } = fromCore(
		'./execution-engine/ssh-clients-manager',
	) as typeof import('n8n-core/dist/execution-engine/ssh-clients-manager');
	Container.get(SSHClientsManager).onShutdown();
	fs.rmSync(userFolder, { recursive: true, force: true });
	userFolder = undefined;
}

/** A node of the workflow; `type` is a short name of ours (`pipelineCapture`) or a full type. */
export interface EngineNode {
	name: string;
	type: string;
	/** As stored in the workflow (strings starting with `=` are expressions). */
	parameters?: Record<string, unknown>;
	onError?: INode['onError'];
	/** n8n's Retry On Fail settings of the node (as saved in the workflow). */
	retry?: Pick<INode, 'retryOnFail' | 'maxTries' | 'waitBetweenTries'>;
	/** The node's typeVersion as saved in the workflow (default 1). */
	typeVersion?: number;
	/** Credential type → the credential's name (its data comes from `RunOptions.credentials`). */
	credentials?: Record<string, string>;
}

export interface RunOptions {
	/** The nodes after `Input`; the first is connected to `Input`. */
	nodes: EngineNode[];
	/** Main connections `from → [[to…] per output]` besides Input → first node; default: every output of each node to a Sink. */
	connections?: Record<string, string[][]>;
	/** The items Input emits. */
	items: INodeExecutionData[];
	/** Decrypted credential data by credential type. */
	credentials?: Record<string, ICredentialDataDecryptedObject>;
	/** n8n's execution id (getExecutionId). */
	executionId?: string;
	/** Execution mode (default 'manual'; 'webhook' / 'trigger' / 'integrated'…). */
	mode?: WorkflowExecuteMode;
	/** Workflow id (getWorkflow().id). */
	workflowId?: string;
}

export interface EngineRun {
	run: IRun;
	/** Items on main output `output` of node `name` (its last run); [] when none. */
	output(name: string, output?: number): INodeExecutionData[];
	/** Number of main outputs the node produced (the engine adds one for continueErrorOutput). */
	outputCount(name: string): number;
	/** The error the execution stopped with, if any (stop mode). */
	error: IRun['data']['resultData']['error'];
	/** What nodes sent as the webhook answer (sendResponse), in order. */
	responses: unknown[];
	/** Credential types n8n asked the credentials helper for, in order. */
	credentialsRead: string[];
	/** Node names in the order the engine ran them. */
	order: string[];
}

/** Name of the sink after output `output` of `node` in the default connections. */
export const sinkOf = (node: string, output = 0) => `${node} → ${output}`;

/**
 * Runs Input → nodes through n8n's WorkflowExecute and resolves with the finished run.
 * @throws only when the engine itself fails (a node's failure in stop mode is `error` of the result)
 */
export async function runWorkflow(options: RunOptions): Promise<EngineRun> {
	const { WorkflowExecute, ExecutionLifecycleHooks } = core();
	const mode = options.mode ?? 'manual';
	const executionId = options.executionId ?? '1';
	const nodes: INode[] = [
		{ id: 'input', name: 'Input', type: PASS_THROUGH, typeVersion: 1, position: [0, 0], parameters: {} },
	];
	const connections: IConnections = {};
	const connect = (from: string, to: string[][]) => {
		connections[from] = {
			main: to.map((targets) => targets.map((node) => ({ node, type: NodeConnectionTypes.Main, index: 0 }))),
		};
	};
	options.nodes.forEach((n, k) => {
		const type = n.type.includes('.') ? n.type : `${PACKAGE}.${n.type}`;
		nodes.push({
			id: `node-${k}`,
			name: n.name,
			type,
			typeVersion: n.typeVersion ?? 1,
			position: [200 * (k + 1), 0],
			parameters: (n.parameters ?? {}) as INode['parameters'],
			...(n.onError ? { onError: n.onError } : {}),
			...(n.retry ?? {}),
			...(n.credentials
				? {
						credentials: Object.fromEntries(
							Object.entries(n.credentials).map(([t, name]) => [t, { id: `cred-${t}`, name }]),
						),
					}
				: {}),
		});
	});
	connect('Input', [[options.nodes[0].name]]);
	const explicit = options.connections ?? {};
	for (const n of nodes.slice(1)) {
		if (explicit[n.name]) {
			connect(n.name, explicit[n.name]);
			continue;
		}
		// every main output of the node (n8n's own count, with the error output) to a Sink
		const probe = new Workflow({ id: 'probe', nodes, connections: {}, nodeTypes: NODE_TYPES, active: false });
		const outputs = NodeHelpers.getNodeOutputs(probe, n, nodeType(n.type).description as INodeTypeDescription);
		const main = NodeHelpers.getConnectionTypes(outputs).filter((t) => t === NodeConnectionTypes.Main);
		const sinks = main.map((_t, output) => sinkOf(n.name, output));
		sinks.forEach((name, k) =>
			nodes.push({
				id: `sink-${n.name}-${k}`,
				name,
				type: PASS_THROUGH,
				typeVersion: 1,
				position: [0, 0],
				parameters: {},
			}),
		);
		connect(
			n.name,
			sinks.map((s) => [s]),
		);
	}
	const workflow = new Workflow({
		id: options.workflowId ?? 'engine-test',
		name: 'engine test',
		nodes,
		connections,
		nodeTypes: NODE_TYPES,
		active: false,
		settings: { executionOrder: 'v1' },
	});
	const hooks = new ExecutionLifecycleHooks(mode, executionId, {
		id: workflow.id,
		name: 'engine test',
		active: false,
		isArchived: false,
		nodes,
		connections,
		createdAt: new Date(),
		updatedAt: new Date(),
		activeVersionId: null,
	});
	const responses: unknown[] = [];
	const order: string[] = [];
	hooks.addHandler('sendResponse', (response) => void responses.push(response));
	hooks.addHandler('nodeExecuteAfter', (name) => void order.push(name));
	const credentialsHelper = new EngineCredentials(options.credentials ?? {});
	const unsupported = (what: string) => async () => {
		throw new Error(`n8nEngine: ${what} is not supported`);
	};
	const additionalData = {
		hooks,
		credentialsHelper,
		executionId,
		currentNodeExecutionIndex: 0,
		restApiUrl: 'http://127.0.0.1:5678/rest',
		instanceBaseUrl: 'http://127.0.0.1:5678/',
		formWaitingBaseUrl: 'http://127.0.0.1:5678/form-waiting',
		webhookBaseUrl: 'http://127.0.0.1:5678/webhook',
		webhookWaitingBaseUrl: 'http://127.0.0.1:5678/webhook-waiting',
		webhookTestBaseUrl: 'http://127.0.0.1:5678/webhook-test',
		variables: {},
		executeWorkflow: unsupported('executeWorkflow (sub-workflows)'),
		getRunExecutionData: async () => undefined,
		logAiEvent: () => undefined,
		startRunnerTask: unsupported('startRunnerTask (task runners)'),
	} as unknown as IWorkflowExecuteAdditionalData;
	const runExecutionData = createRunExecutionData({
		executionData: { nodeExecutionStack: [{ node: nodes[0], data: { main: [options.items] }, source: null }] },
	});
	const run = await new WorkflowExecute(additionalData, mode, runExecutionData).processRunExecutionData(workflow);
	const runData = run.data.resultData.runData;
	const last = (name: string) => runData[name]?.[runData[name].length - 1];
	return {
		run,
		output: (name, output = 0) => last(name)?.data?.main?.[output] ?? [],
		outputCount: (name) => last(name)?.data?.main?.length ?? 0,
		error: run.data.resultData.error,
		responses,
		credentialsRead: credentialsHelper.requested,
		order,
	};
}
