/**
 * The canvas, checked by a browser (issue 16): every shipped workflow (workflows-json/, arango/, maas/)
 * opened in a real n8n editor in headless Chromium, with our packed package installed as a community
 * package and the credentials the workflows reference imported. The editor is that of the run's n8n
 * (CONTRACTS_N8N_VERSION: 2.4.8 by default, 2.41.1 in `npm run test:compat`); test/helpers/canvas.ts reads both.
 * Fails on any node with an issue — n8n's canvas markers ("Install this node", node issues) and the
 * editor's own checks run on what its stores hold after opening (unknown type, a required parameter
 * empty, a credential not set or not found; see test/helpers/canvas.ts) — on a node the canvas did not
 * draw, and on an error toast.
 * A broken canary workflow (unknown types, an empty required parameter, a credential that does not
 * exist) is opened first and must show exactly those issues, the canvas markers among them with their
 * tooltips: proof the check sees what it looks for in this editor.
 * Screenshots: test-output/canvas/<workflow file>.png (git-ignored); docs/images/ holds copies.
 * Skips, saying why, where chromium or playwright-core is absent. No database: nothing is published
 * or executed, so the PostgreSQL credential only has to exist.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { shippedWorkflowFiles } from '../helpers/shippedWorkflows';
import { testSkipIf } from '../helpers/skip';
import type { Browser, Page } from 'playwright-core';
import {
	canvasSkipReason,
	inspectCanvas,
	launchChromium,
	setupOwner,
	signIn,
	type CanvasReport,
	type Owner,
} from '../helpers/canvas';
import { WORKFLOWS } from '../helpers/n8n';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');

const OUT = path.join(__dirname, '..', '..', 'test-output', 'canvas');
const skip = canvasSkipReason();

interface Workflow {
	id: string;
	name: string;
	nodes: { name: string; type: string; credentials?: Record<string, { id: string; name: string }> }[];
}

/** The credentials the shipped workflows reference, by type (placeholders: nothing here connects). */
const CREDENTIALS: Record<string, unknown> = {
	postgresContractsApi: harness.postgresCredential('postgres://postgres@127.0.0.1:5432/contracts_canvas'),
	arangoDbApi: harness.arangoCredential('http://127.0.0.1:8529'),
	jwtAuth: harness.jwtCredential(randomBytes(16).toString('hex')),
	contractsTelegramApi: harness.telegramCredential('http://127.0.0.1:9', '123:canvas'),
	// M18's scrape target (n8n's Header Auth): Prometheus sends `Authorization: Bearer <token>`.
	httpHeaderAuth: {
		id: 'metricsHeaderAuth01',
		name: 'Contracts Metrics Scrape',
		type: 'httpHeaderAuth',
		data: { name: 'Authorization', value: `Bearer ${randomBytes(16).toString('hex')}` },
	},
	contractsEmbeddingsApi: {
		id: 'embContracts01',
		name: 'Contracts Embeddings',
		type: 'contractsEmbeddingsApi',
		data: { api: 'gemini', baseUrl: 'http://127.0.0.1:9', apiKey: 'k' },
	},
	contractsPushApi: {
		id: 'pushContracts01',
		name: 'Contracts Push',
		type: 'contractsPushApi',
		data: { secret: randomBytes(32).toString('hex') },
	},
	contractsLlmApi: {
		id: 'llmContracts01',
		name: 'Contracts LLM',
		type: 'contractsLlmApi',
		data: { api: 'openai', baseUrl: 'http://127.0.0.1:9', apiKey: 'sk-canvas', model: 'canvas' },
	},
};

/** A workflow that must show issues on exactly the nodes named "Broken: …". */
const CANARY = {
	id: 'CanvasCanary0001',
	name: 'Canvas canary (broken on purpose)',
	nodes: [
		{
			id: 'c0000000-0000-4000-8000-000000000001',
			name: 'Start',
			type: 'n8n-nodes-base.manualTrigger',
			typeVersion: 1,
			position: [0, 0],
			parameters: {},
		},
		{
			id: 'c0000000-0000-4000-8000-000000000002',
			name: 'Fine',
			type: 'n8n-nodes-base.noOp',
			typeVersion: 1,
			position: [220, 0],
			parameters: {},
		},
		{
			id: 'c0000000-0000-4000-8000-000000000003',
			name: 'Broken: unknown contracts type',
			type: 'n8n-nodes-contracts.noSuchNode',
			typeVersion: 1,
			position: [440, -200],
			parameters: {},
		},
		{
			id: 'c0000000-0000-4000-8000-000000000004',
			name: 'Broken: unknown base type',
			type: 'n8n-nodes-base.noSuchNode',
			typeVersion: 1,
			position: [440, 0],
			parameters: {},
		},
		{
			// a required resource locator left empty (n8n's own rule: an empty required json parameter is no issue)
			id: 'c0000000-0000-4000-8000-000000000005',
			name: 'Broken: empty required parameter',
			type: 'n8n-nodes-base.executeWorkflow',
			typeVersion: 1.2,
			position: [440, 200],
			parameters: { source: 'database', workflowId: { __rl: true, mode: 'id', value: '' }, mode: 'each', options: {} },
		},
		{
			id: 'c0000000-0000-4000-8000-000000000006',
			name: 'Broken: missing credential',
			type: 'n8n-nodes-contracts.contextLoader',
			typeVersion: 1,
			position: [440, 400],
			parameters: { req: '={{ $json.req }}', options: {} },
			credentials: { postgresContractsApi: { id: 'noSuchCred0001', name: 'Deleted PostgreSQL' } },
		},
		{
			id: 'c0000000-0000-4000-8000-000000000007',
			name: 'Broken: credential not set',
			type: 'n8n-nodes-contracts.contextLoader',
			typeVersion: 1,
			position: [440, 600],
			parameters: { req: '={{ $json.req }}', options: {} },
		},
	],
	connections: { Start: { main: [[{ node: 'Fine', type: 'main', index: 0 }]] } },
	settings: { executionOrder: 'v1' },
	active: false,
};

const owner: Owner = {
	email: 'canvas@example.com',
	firstName: 'Canvas',
	lastName: 'Check',
	password: `Canvas-${randomBytes(6).toString('hex')}1`,
};
/** The harness's N8nInstance (scripts/lib/n8n.js), as far as this file uses it. */
interface Instance {
	url: string;
	folder: string;
	importCredentials(credentials: unknown[]): Promise<void>;
	cli(args: string[]): Promise<string>;
	start(): Promise<string>;
	stop(): Promise<void>;
	remove(): void;
}
let instance: Instance;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
	if (skip) return;
	const bin = harness.ensureN8n({ log: console.log });
	instance = harness.createInstance({ bin });
	await instance.importCredentials(Object.values(CREDENTIALS));
	const dir = fs.mkdtempSync(path.join(instance.folder, 'import-'));
	for (const file of shippedWorkflowFiles())
		fs.copyFileSync(path.join(WORKFLOWS, file), path.join(dir, path.basename(file)));
	fs.writeFileSync(path.join(dir, 'canary.json'), JSON.stringify(CANARY));
	await instance.cli(['import:workflow', '--separate', `--input=${dir}`]);
	await instance.start();
	await setupOwner(instance.url, owner);
	browser = await launchChromium();
	page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
	page.on('pageerror', (error) => pageErrors.push(error.message));
	await signIn(page, instance.url, owner);
	fs.mkdirSync(OUT, { recursive: true });
}, 30 * 60_000);

afterAll(async () => {
	await browser?.close();
	await instance?.stop();
	instance?.remove();
});

function describeReport(report: CanvasReport): string {
	return report.issues.map((i) => `${i.node} (${i.type}): ${i.marker} ${i.text}`).join('\n');
}

test('the shipped workflows reference only credentials this test imports', () => {
	for (const file of shippedWorkflowFiles()) {
		const workflow = JSON.parse(fs.readFileSync(path.join(WORKFLOWS, file), 'utf8')) as Workflow;
		for (const node of workflow.nodes) {
			for (const [type, ref] of Object.entries(node.credentials ?? {})) {
				const credential = CREDENTIALS[type] as { id: string; name: string } | undefined;
				assert.ok(credential, `${file} / ${node.name}: credential type ${type} has no entry in CREDENTIALS`);
				assert.equal(ref.id, credential.id, `${file} / ${node.name}: ${type} id`);
			}
		}
	}
});

testSkipIf(skip)(
	'the canary: the check sees unknown types, an empty required parameter, a missing and an unset credential',
	async () => {
		const report = await inspectCanvas(page, instance.url, CANARY.id, CANARY.nodes.length, {
			screenshot: path.join(OUT, '_canary.png'),
		});
		console.log(`canary issues:\n${describeReport(report)}`);
		const flagged = [...new Set(report.issues.map((i) => i.node))].sort();
		const broken = CANARY.nodes
			.map((n) => n.name)
			.filter((n) => n.startsWith('Broken:'))
			.sort();
		assert.deepEqual(flagged, broken, describeReport(report));
		const text = (node: string) =>
			report.issues
				.filter((i) => i.node === node)
				.map((i) => i.text)
				.join(' ');
		assert.match(
			text('Broken: empty required parameter'),
			/workflowId: .*required/i,
			'the issue names the empty parameter',
		);
		assert.match(
			text('Broken: missing credential'),
			/Deleted PostgreSQL.*do not exist/,
			'the issue names the credential',
		);
		assert.match(
			text('Broken: credential not set'),
			/postgresContractsApi.*not set/,
			'the issue names the credential type',
		);
		// the canvas markers are seen too (not only the editor's checks), with their tooltips
		const markers = (node: string) =>
			report.issues.filter((i) => i.node === node && i.marker !== 'editor-issues').map((i) => `${i.marker}: ${i.text}`);
		assert.match(markers('Broken: unknown contracts type').join(), /^node-not-installed: Install/);
		assert.match(
			markers('Broken: empty required parameter').join(),
			/^node-issues: Issues:? Parameter "Workflow" is required/,
		);
		assert.match(markers('Broken: credential not set').join(), /^node-issues: Issues:? Credentials for .* not set/);
	},
);

testSkipIf(skip)(
	'every shipped workflow opens in the editor without a node issue',
	async () => {
		const failures: string[] = [];
		for (const file of shippedWorkflowFiles()) {
			const workflow = JSON.parse(fs.readFileSync(path.join(WORKFLOWS, file), 'utf8')) as Workflow;
			const shot = path.join(OUT, `${path.basename(file, '.json')}.png`);
			const started = Date.now();
			const before = pageErrors.length;
			let report: CanvasReport;
			try {
				report = await inspectCanvas(page, instance.url, workflow.id, workflow.nodes.length, { screenshot: shot });
			} catch (error) {
				failures.push(`${file}: ${error.message}`);
				continue;
			}
			const missing = workflow.nodes.map((n) => n.name).filter((n) => !report.nodes.includes(n));
			if (missing.length) failures.push(`${file}: not on the canvas: ${missing.join(', ')}`);
			if (report.issues.length) failures.push(`${file}:\n${describeReport(report)}`);
			if (report.toasts.length) failures.push(`${file}: error toasts: ${report.toasts.join(' | ')}`);
			const errors = pageErrors.slice(before);
			console.log(
				`${file}: ${report.nodes.length} nodes, ${report.issues.length} issues, ${Date.now() - started} ms${errors.length ? `, page errors: ${errors.join(' | ')}` : ''}`,
			);
		}
		assert.deepEqual(failures, [], failures.join('\n'));
	},
	10 * 60_000,
);
