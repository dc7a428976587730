/**
 * Every resource/operation node's operation registry against the operation files on disk (issue 28). A
 * node is a resource/operation node when its nodes/<Node>/actions/index.ts exports a resources array
 * (ArangoCAS `RESOURCES`, Knowledge Bot `KNOWLEDGE_RESOURCES`, Pipeline Capture `PIPELINE_RESOURCES`, and
 * any node added later); the files are read from disk, none is listed here. For each such node:
 *  - every nodes/<Node>/actions/<resource>/<name>.operation.ts exports exactly one operation object, and
 *    that object is registered under the resource its folder names (a missing registration names the file);
 *  - every registered operation is the object of such a file of its resource's folder (object identity);
 *  - operation values are unique within a resource, resource values (with their former values) within the
 *    node, and each resource has its folder;
 *  - a resource's former values (`formerValues`, nodes/shared/node/resources.ts) still route to its
 *    operations: Knowledge Bot's 'transport' (now 'botTransport') through the node's own router.
 * No operation file lies in a resource folder of a node without a registry. The check itself is tested on
 * a registry with one registration removed, and on one case per rule.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { test } from '@jest/globals';
import type { IExecuteFunctions, INodeType } from 'n8n-workflow';
import { isRecord } from '../../nodes/shared/json';
import { withFormerValues } from '../../nodes/shared/node/resources';
import { findOperation } from '../../nodes/shared/node/router';

const ROOT = resolve(__dirname, '../..');
const NODES = join(ROOT, 'nodes');

/** An operation object as the router sees it (nodes/shared/node/router.ts `Operation`). */
interface OperationObject {
	value: string;
	name: string;
	action: string;
	description: string;
	execute: (...args: never[]) => Promise<unknown>;
	workflow?: string;
}

/** A resource of a registry, as read from the node's actions/index.ts. */
interface RegisteredResource {
	value: string;
	name: string;
	formerValues?: string[];
	operations: unknown[];
}

/** One node's registry and what lies on disk beside it. */
interface NodeRegistry {
	/** The node's folder under nodes/ (e.g. "ArangoCas"). */
	node: string;
	/** The export of actions/index.ts that holds the resources (e.g. "RESOURCES"). */
	exportName: string;
	resources: RegisteredResource[];
	/** The folders directly under nodes/<node>/actions/. */
	folders: string[];
}

/** One *.operation.ts file under a node's actions/ and its module's exports. */
interface OperationFile {
	/** Path from the repository root (e.g. "nodes/ArangoCas/actions/atom/lock.operation.ts"). */
	path: string;
	/** The first folder under actions/ ('' for a file directly in actions/). */
	resource: string;
	/** Whether the file lies directly in that folder (actions/<resource>/<name>.operation.ts). */
	direct: boolean;
	exports: Record<string, unknown>;
}

function isOperation(value: unknown): value is OperationObject {
	return (
		isRecord(value) &&
		['value', 'name', 'action', 'description'].every((key) => typeof value[key] === 'string') &&
		typeof value.execute === 'function'
	);
}

function isResources(value: unknown): value is RegisteredResource[] {
	return (
		Array.isArray(value) &&
		value.length > 0 &&
		value.every((r) => isRecord(r) && typeof r.value === 'string' && Array.isArray(r.operations))
	);
}

/** The operation objects a module exports, with their export names. */
function operationsOf(file: OperationFile): Array<[string, OperationObject]> {
	return Object.entries(file.exports).filter((entry): entry is [string, OperationObject] => isOperation(entry[1]));
}

/** Every *.operation.ts file below `dir`. */
function operationPaths(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
		e.isDirectory() ? operationPaths(join(dir, e.name)) : e.name.endsWith('.operation.ts') ? [join(dir, e.name)] : [],
	);
}

/** The operation files of a node (none without an actions/ folder), each module loaded. */
function operationFiles(node: string): OperationFile[] {
	const actions = join(NODES, node, 'actions');
	if (!existsSync(actions)) return [];
	return operationPaths(actions).map((file) => {
		const parts = relative(actions, file).split(/[\\/]/);
		return {
			path: relative(ROOT, file).split('\\').join('/'),
			resource: parts.length > 1 ? parts[0] : '',
			direct: parts.length === 2,
			exports: require(file) as Record<string, unknown>,
		};
	});
}

/** The registries of nodes/<Node>/actions/index.ts: each export that is a resources array. */
function registriesOf(node: string): NodeRegistry[] {
	const index = join(NODES, node, 'actions', 'index.ts');
	if (!existsSync(index)) return [];
	const module = require(index) as Record<string, unknown>;
	const folders = readdirSync(join(NODES, node, 'actions'), { withFileTypes: true })
		.filter((e) => e.isDirectory())
		.map((e) => e.name);
	return Object.entries(module)
		.filter((entry): entry is [string, RegisteredResource[]] => isResources(entry[1]))
		.map(([exportName, resources]) => ({ node, exportName, resources, folders }));
}

/** How often each value occurs, for the ones that occur more than once. */
function repeated(values: string[]): Array<[string, number]> {
	const counts = new Map<string, number>();
	for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
	return [...counts].filter(([, n]) => n > 1);
}

/**
 * What is wrong between a node's registry and its operation files (see the file comment), one sentence
 * per problem naming the file or the resource/operation; [] when they agree.
 */
function registryProblems(registry: NodeRegistry, files: OperationFile[]): string[] {
	const { node, exportName, resources, folders } = registry;
	const where = `${node}'s ${exportName}`;
	const problems: string[] = [];
	const sourceOf = new Map<unknown, OperationFile>();
	for (const file of files) {
		if (!file.direct) {
			problems.push(`${file.path}: an operation file lies in nodes/${node}/actions/<resource>/ itself`);
			continue;
		}
		const ops = operationsOf(file);
		if (ops.length !== 1) {
			const names = ops.map(([name]) => name).join(', ') || 'none';
			problems.push(`${file.path} exports ${ops.length} operation objects (${names}); one is expected`);
			continue;
		}
		const [[name, op]] = ops;
		sourceOf.set(op, file);
		const home = resources.find((r) => r.value === file.resource);
		if (!home) {
			problems.push(`${file.path}: its folder's resource '${file.resource}' is not in ${where}`);
		} else if (!home.operations.includes(op)) {
			const elsewhere = resources.filter((r) => r.operations.includes(op)).map((r) => `'${r.value}'`);
			const found = elsewhere.length > 0 ? ` (it is under ${elsewhere.join(', ')})` : '';
			problems.push(`${file.path}: ${name} is not registered under resource '${file.resource}' in ${where}${found}`);
		}
	}
	for (const resource of resources) {
		const label = `${node} ${resource.value}`;
		if (!folders.includes(resource.value))
			problems.push(`${label}: no folder nodes/${node}/actions/${resource.value}/`);
		for (const op of resource.operations) {
			const value = isOperation(op) ? op.value : JSON.stringify(op);
			const file = sourceOf.get(op);
			if (!file)
				problems.push(
					`${label}/${value}: not the export of a nodes/${node}/actions/${resource.value}/*.operation.ts file`,
				);
			else if (file.resource !== resource.value)
				problems.push(`${label}/${value}: comes from ${file.path}, a file of another resource's folder`);
		}
		const values = resource.operations.map((op) => (isOperation(op) ? op.value : ''));
		for (const [value, n] of repeated(values))
			problems.push(`${label}: operation value '${value}' registered ${n} times`);
	}
	const resourceValues = resources.flatMap((r) => [r.value, ...(r.formerValues ?? [])]);
	for (const [value, n] of repeated(resourceValues))
		problems.push(`${node}: resource value '${value}' used ${n} times in ${exportName} (values and former values)`);
	return problems;
}

const NODE_NAMES = readdirSync(NODES, { withFileTypes: true })
	.filter((e) => e.isDirectory())
	.map((e) => e.name);
const REGISTRIES = NODE_NAMES.flatMap(registriesOf);
const FILES = new Map(NODE_NAMES.map((node) => [node, operationFiles(node)]));

function registryOf(node: string): NodeRegistry {
	const found = REGISTRIES.find((r) => r.node === node);
	assert.ok(found, `no resources array exported by nodes/${node}/actions/index.ts`);
	return found;
}

/**
 * Resources renamed by a release, with the value workflows saved before: each must still be declared
 * (`formerValues`) and route. Knowledge Bot's Bot Transport was 'transport' before issue 16.
 */
const KNOWN_FORMER_VALUES = [{ node: 'KnowledgeBot', resource: 'botTransport', former: 'transport' }];

test('the resource/operation nodes are found on disk, one registry each', () => {
	const found = REGISTRIES.map((r) => `${r.node}.${r.exportName}`);
	for (const known of ['ArangoCas.RESOURCES', 'KnowledgeBot.KNOWLEDGE_RESOURCES', 'PipelineCapture.PIPELINE_RESOURCES'])
		assert.ok(found.includes(known), `${known} not found among ${found.join(', ')}`);
	assert.deepEqual(repeated(REGISTRIES.map((r) => r.node)), [], 'one resources array per node');
});

for (const registry of REGISTRIES) {
	test(`${registry.node}: ${registry.exportName} and the operation files on disk agree`, () => {
		const files = FILES.get(registry.node) ?? [];
		assert.ok(files.length > 0, `no *.operation.ts file under nodes/${registry.node}/actions/`);
		assert.deepEqual(registryProblems(registry, files), []);
	});
}

test('no node without a registry has operation files in resource folders', () => {
	const unregistered = NODE_NAMES.filter((node) => !REGISTRIES.some((r) => r.node === node)).flatMap((node) =>
		(FILES.get(node) ?? []).filter((f) => f.resource !== '').map((f) => f.path),
	);
	assert.deepEqual(
		unregistered,
		[],
		'an actions/<resource>/ operation file needs a resources array in actions/index.ts',
	);
});

test('the check itself: a file missing from the registry fails, naming the file', () => {
	const real = registryOf('ArangoCas');
	const files = FILES.get('ArangoCas') ?? [];
	assert.deepEqual(registryProblems(real, files), [], 'the real registry passes');
	const [first] = real.resources;
	const dropped = first.operations[first.operations.length - 1];
	const file = files.find((f) => operationsOf(f).some(([, op]) => op === dropped));
	assert.ok(file, 'the dropped operation has its file');
	const missing: NodeRegistry = {
		...real,
		resources: real.resources.map((r) => (r === first ? { ...r, operations: r.operations.slice(0, -1) } : r)),
	};
	const problems = registryProblems(missing, files);
	assert.equal(problems.length, 1, problems.join('\n'));
	assert.match(
		problems[0],
		new RegExp(
			`^${file.path.replace(/[.]/g, '\\.')}: \\w+ is not registered under resource '${first.value}' in ArangoCas's RESOURCES$`,
		),
	);
});

test('the check itself: one case per rule', () => {
	const real = registryOf('ArangoCas');
	const files = FILES.get('ArangoCas') ?? [];
	const [atom, proposal] = real.resources;
	const registryWith = (resources: RegisteredResource[], folders = real.folders): NodeRegistry => ({
		...real,
		resources,
		folders,
	});
	const others = real.resources.slice(2);
	const stray = { value: 'stray', name: 'Stray', action: 'Stray', description: 'Stray', execute: async () => ({}) };
	const [lock] = atom.operations as OperationObject[];

	// a registered operation that is no file's export
	assert.deepEqual(
		registryProblems(registryWith([{ ...atom, operations: [...atom.operations, stray] }, proposal, ...others]), files),
		[`ArangoCas atom/stray: not the export of a nodes/ArangoCas/actions/atom/*.operation.ts file`],
	);
	// a file's operation registered under another resource too (and so twice in it: a repeated value)
	const moved = registryProblems(
		registryWith([atom, { ...proposal, operations: [...proposal.operations, lock] }, ...others]),
		files,
	);
	assert.deepEqual(moved, [
		`ArangoCas proposal/${lock.value}: comes from nodes/ArangoCas/actions/atom/lock.operation.ts, a file of another resource's folder`,
	]);
	// under the wrong resource only
	const wrong = registryProblems(
		registryWith([
			{ ...atom, operations: atom.operations.slice(1) },
			{ ...proposal, operations: [...proposal.operations, lock] },
			...others,
		]),
		files,
	);
	assert.ok(
		wrong.includes(
			"nodes/ArangoCas/actions/atom/lock.operation.ts: lock is not registered under resource 'atom' in ArangoCas's RESOURCES (it is under 'proposal')",
		),
		wrong.join('\n'),
	);
	// a repeated operation value within a resource
	assert.deepEqual(
		registryProblems(registryWith([{ ...atom, operations: [...atom.operations, lock] }, proposal, ...others]), files),
		[`ArangoCas atom: operation value '${lock.value}' registered 2 times`],
	);
	// a resource without its folder, and a folder's resource not in the registry
	const renamed = registryProblems(registryWith([{ ...atom, value: 'atoms' }, proposal, ...others]), files);
	assert.ok(renamed.includes('ArangoCas atoms: no folder nodes/ArangoCas/actions/atoms/'), renamed.join('\n'));
	assert.ok(
		renamed.includes(
			"nodes/ArangoCas/actions/atom/lock.operation.ts: its folder's resource 'atom' is not in ArangoCas's RESOURCES",
		),
		renamed.join('\n'),
	);
	// a former value that is another resource's value
	assert.deepEqual(
		registryProblems(registryWith([{ ...atom, formerValues: ['proposal'] }, proposal, ...others]), files),
		["ArangoCas: resource value 'proposal' used 2 times in RESOURCES (values and former values)"],
	);
	// a file that exports no operation object or two, and one nested below a resource folder
	const file = files.find((f) => f.path.endsWith('/atom/lock.operation.ts'));
	assert.ok(file);
	const odd: OperationFile[] = [
		{ ...file, path: 'nodes/ArangoCas/actions/atom/none.operation.ts', exports: { LOCK_AQL: 'x' } },
		{ ...file, path: 'nodes/ArangoCas/actions/atom/two.operation.ts', exports: { lock, stray } },
		{ ...file, path: 'nodes/ArangoCas/actions/atom/deep/lock.operation.ts', direct: false },
	];
	assert.deepEqual(registryProblems(real, [...files, ...odd]), [
		'nodes/ArangoCas/actions/atom/none.operation.ts exports 0 operation objects (none); one is expected',
		'nodes/ArangoCas/actions/atom/two.operation.ts exports 2 operation objects (lock, stray); one is expected',
		'nodes/ArangoCas/actions/atom/deep/lock.operation.ts: an operation file lies in nodes/ArangoCas/actions/<resource>/ itself',
	]);
});

test('the known former values are still declared', () => {
	for (const { node, resource, former } of KNOWN_FORMER_VALUES) {
		const declared = registryOf(node).resources.find((r) => r.value === resource);
		assert.ok(declared, `${node} has no resource '${resource}'`);
		assert.ok(declared.formerValues?.includes(former), `${node} '${resource}' no longer declares '${former}'`);
	}
});

for (const registry of REGISTRIES.filter((r) => r.resources.some((resource) => resource.formerValues?.length))) {
	test(`${registry.node}: each former value routes to its resource's operations`, () => {
		const routed = withFormerValues(
			registry.resources as Array<RegisteredResource & { operations: OperationObject[] }>,
		);
		for (const resource of registry.resources)
			for (const former of resource.formerValues ?? [])
				for (const op of resource.operations as OperationObject[])
					assert.equal(findOperation(routed, former, op.value, registry.node), op, `${former}/${op.value}`);
		// the node's Route looks operations up in the list with the former values
		const source = readFileSync(join(NODES, registry.node, `${registry.node}.node.ts`), 'utf8');
		assert.match(source, new RegExp(`resources:\\s*withFormerValues\\(\\s*${registry.exportName}\\s*\\)`));
	});
}

test("Knowledge Bot's router runs a workflow saved with 'transport' as Bot Transport → Check", async () => {
	// the .ts path: "KnowledgeBot.node" alone would resolve to the codex .json beside it
	const source = '../../nodes/KnowledgeBot/KnowledgeBot.node.ts';
	const { KnowledgeBot } = (await import(source)) as { KnowledgeBot: new () => INodeType };
	const check = registryOf('KnowledgeBot')
		.resources.find((r) => r.value === 'botTransport')
		?.operations.find((op) => isOperation(op) && op.value === 'check') as OperationObject | undefined;
	assert.ok(check?.workflow, 'Bot Transport → Check has its workflow label');
	const run = async (resource: string) => {
		const fn = {
			getInputData: () => [{ json: {} }],
			getNode: () => ({
				name: 'Check',
				type: 'n8n-nodes-contracts.knowledgeBot',
				typeVersion: 1,
				position: [0, 0],
				parameters: {},
				id: '1',
			}),
			// never connected: the request fails validation before any query or Bot API call
			getCredentials: async () => ({ host: '127.0.0.1', port: 1, database: 'none', user: 'none' }),
			getNodeParameter: (name: string, _i: number, fallback?: unknown) =>
				({ resource, operation: 'check', req: JSON.stringify({ bot_id: 'not-a-uuid' }), ctx: {} })[name] ?? fallback,
			continueOnFail: () => true,
		} as unknown as IExecuteFunctions;
		const [[item]] = (await new KnowledgeBot().execute!.call(fn)) as Array<Array<{ json: Record<string, unknown> }>>;
		const error = item.json.error as { status_code: number; message: string; ctx: Record<string, unknown> };
		return {
			status: error.status_code,
			unknown: /unknown KnowledgeBot operation/.test(error.message),
			workflow: error.ctx.workflow,
		};
	};
	const current = await run('botTransport');
	assert.deepEqual(
		current,
		{ status: 422, unknown: false, workflow: check.workflow },
		'the operation ran and refused the request',
	);
	assert.deepEqual(await run('transport'), current, "'transport' runs the same operation");
	assert.deepEqual(
		await run('noSuchResource'),
		{ status: 500, unknown: true, workflow: '' },
		'an unknown resource is not routed (the comparison above means something)',
	);
});
