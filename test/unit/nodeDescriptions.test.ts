/**
 * The node descriptions n8n reads (issue 16): every node's `description` — names, defaults, descriptions,
 * the order of properties and options — equals test/fixtures/nodeDescriptions.json, a snapshot taken
 * from main before the repeated description pieces moved into nodes/shared/node/properties.ts. A change
 * to a description is a deliberate one: it updates the snapshot in the same commit (regenerate it with
 * `NODE_DESCRIPTIONS_WRITE=1` and read the diff).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from '@jest/globals';
import type { INodeType } from 'n8n-workflow';

const FIXTURE = join(__dirname, '../fixtures/nodeDescriptions.json');

/** Every node of the package, by class name (each lives in nodes/<Name>/<Name>.node.ts). */
const NODES = [
	'ArangoCas',
	'ContextLoader',
	'ErrorPipe',
	'KnowledgeBot',
	'PipelineCapture',
	'PipelineTrigger',
	'PipelinePush',
	'TelegramIngest',
] as const;

/** A fresh instance of a node class (required by path: `…/X.node` alone would resolve to X.node.json). */
function nodeOf(name: (typeof NODES)[number]): INodeType {
	const module = require(`../../nodes/${name}/${name}.node.ts`) as Record<string, new () => INodeType>;
	return new module[name]();
}

/** The paths in `value` that JSON cannot carry as they are (undefined, functions, class instances…). */
function notJson(value: unknown, path: string): string[] {
	if (value === null || typeof value === 'string' || typeof value === 'boolean') return [];
	if (typeof value === 'number') return Number.isFinite(value) ? [] : [path];
	if (typeof value !== 'object') return [path];
	const proto = Object.getPrototypeOf(value) as unknown;
	if (proto !== Object.prototype && proto !== Array.prototype) return [path];
	return Object.entries(value).flatMap(([key, v]) => notJson(v, `${path}.${key}`));
}

const descriptions = Object.fromEntries(NODES.map((name) => [name, nodeOf(name).description]));

if (process.env.NODE_DESCRIPTIONS_WRITE === '1') {
	writeFileSync(FIXTURE, JSON.stringify(descriptions, null, '\t') + '\n');
	console.log(`wrote ${FIXTURE}`);
}

const expected = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Record<string, unknown>;

test('the snapshot and this test name every node package.json ships, and only those', () => {
	const pkg = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { n8n: { nodes: string[] } };
	const shipped = pkg.n8n.nodes.map((path) => /\/([A-Za-z]+)\.node\.js$/.exec(path)?.[1]).sort();
	assert.deepEqual([...NODES].sort(), shipped);
	assert.deepEqual(Object.keys(expected).sort(), shipped);
});

for (const name of NODES) {
	test(`${name}: its description is the snapshot's (names, defaults, descriptions, order)`, () => {
		const description = descriptions[name];
		// Only plain data, so the JSON comparison sees all there is; arrays (properties, options, credentials)
		// compare in order.
		assert.deepEqual(notJson(description, name), []);
		assert.deepEqual(JSON.parse(JSON.stringify(description)), expected[name]);
	});
}

test('no node is usable as an AI agent tool (docs/contracts-and-secrets.md, "Nodes as AI tools")', () => {
	const tools = NODES.filter((name) => nodeOf(name).description.usableAsTool !== undefined);
	assert.deepEqual(tools, []);
});

test('the outbound allowlist options of Knowledge Bot take no data expression (docs/contracts-and-secrets.md, "Outbound requests")', () => {
	const options = nodeOf('KnowledgeBot').description.properties.find((p) => p.name === 'options');
	const fields = (options?.options ?? []) as Array<{ name: string; noDataExpression?: boolean }>;
	const allowlist = fields.filter((f) => ['allowedPorts', 'allowedPrivateAddresses'].includes(f.name));
	assert.deepEqual(
		allowlist.map((f) => [f.name, f.noDataExpression]),
		[
			['allowedPorts', true],
			['allowedPrivateAddresses', true],
		],
	);
});
