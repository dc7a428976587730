/**
 * The MaaS step workflows M11–M13 against their generator (scripts/gen-maas-workflows.js): the generated
 * files equal workflows-json/maas/ byte for byte (regenerate with `node scripts/gen-maas-workflows.js`),
 * and each step's Capture / Complete Step transitions are ones the Pipeline Capture node offers.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { findPipelineOperation } from '../../nodes/PipelineCapture/actions';

const ROOT = path.join(__dirname, '..', '..');
const MAAS = path.join(ROOT, 'workflows-json', 'maas');
const STEP_FILES = ['M11_analyzer.json', 'M12_assembler.json', 'M13_final_responder.json'];

interface WorkflowNode {
	name: string;
	type: string;
	parameters: Record<string, unknown>;
}

let dir = '';
beforeAll(() => {
	dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gen-maas-'));
	execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'gen-maas-workflows.js'), dir]);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

test('the generated MaaS step workflows equal workflows-json/maas/ (node scripts/gen-maas-workflows.js)', () => {
	assert.deepEqual(fs.readdirSync(dir).sort(), STEP_FILES);
	for (const file of STEP_FILES)
		assert.equal(
			fs.readFileSync(path.join(dir, file), 'utf8'),
			fs.readFileSync(path.join(MAAS, file), 'utf8'),
			`${file} differs from workflows-json/maas/: run node scripts/gen-maas-workflows.js and commit`,
		);
});

test('each step captures and completes with transitions the Pipeline Capture node offers, one step per workflow', () => {
	const transitionsOf = (operation: string) =>
		(findPipelineOperation('run', operation).fields ?? [])
			.find((f) => f.name === 'transition')!
			.options!.map((o) => (o as { value: string }).value);
	const seen = { capture: new Set<unknown>(), completeStep: new Set<unknown>(), step: new Set<unknown>() };
	for (const file of STEP_FILES) {
		const { nodes } = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as { nodes: WorkflowNode[] };
		const byName = (name: string) => nodes.find((n) => n.name === name)!.parameters;
		for (const operation of ['capture', 'completeStep'] as const) {
			const { transition } = byName(operation === 'capture' ? 'Capture' : 'Complete Step');
			assert.ok(transitionsOf(operation).includes(transition as string), `${file}: ${operation} ${transition}`);
			seen[operation].add(transition);
		}
		seen.step.add(byName('Load Step Context').step);
	}
	for (const [what, values] of Object.entries(seen)) assert.equal(values.size, STEP_FILES.length, `distinct ${what}`);
});

test('every shipped Pipeline Capture node that captures, completes a step or fails a run retries on fail (issue 26: a lost reply is replayed) and keeps its error output', () => {
	const files = fs
		.readdirSync(MAAS)
		.filter((f) => f.endsWith('.json'))
		.map((f) => path.join(MAAS, f));
	let checked = 0;
	for (const file of files) {
		const wf = JSON.parse(fs.readFileSync(file, 'utf8')) as { nodes: (WorkflowNode & Record<string, unknown>)[] };
		for (const node of wf.nodes) {
			if (node.type !== 'n8n-nodes-contracts.pipelineCapture') continue;
			if (!['capture', 'completeStep', 'fail'].includes(String(node.parameters.operation))) continue;
			checked++;
			const where = `${path.basename(file)} ${node.name}`;
			assert.equal(node.retryOnFail, true, `${where}: Retry On Fail`);
			assert.ok(Number(node.maxTries) >= 2 && Number(node.maxTries) <= 5, `${where}: maxTries in 2…5`);
			assert.ok(Number(node.waitBetweenTries) > 0 && Number(node.waitBetweenTries) <= 5000, `${where}: wait 0…5000 ms`);
			assert.equal(node.onError, 'continueErrorOutput', `${where}: error output kept`);
		}
	}
	// M11–M13: Capture, Complete Step and two Fail Run nodes each
	assert.equal(checked, 12);
});
