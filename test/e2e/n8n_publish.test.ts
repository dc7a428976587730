/**
 * How the harness publishes workflows (issue 27 §3; scripts/lib/n8n.js, scripts/lib/n8nPublish.js): ONE
 * `n8n import:workflow` CLI call for all files, then, once n8n runs, n8n's REST API as its owner — never one
 * `n8n publish:workflow` process per workflow (2–14 s each). On one real n8n (the run's version):
 *  - a start with nothing to publish creates no owner (n8n still shows its owner form);
 *  - importAndPublish + start: the harness log has one import call and no publish:workflow call, the files are
 *    published sub-workflows first whatever their order (n8n refuses a parent whose sub-workflow is not
 *    published), the webhooks answer, the owner was created and its password is not in the log;
 *  - a second start publishes nothing again (the activation is in n8n's database) and the webhooks answer;
 *  - a workflow n8n cannot activate (unrecognized node type) fails start() with n8n's message, as the owner
 *    that already exists (login).
 * Skipped (with the reason) when that n8n is not installed in the cache yet.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { WORKFLOWS } from '../helpers/n8n';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');

interface Instance {
	url: string;
	folder: string;
	steps: string[];
	owner?: { email: string; password: string };
	ownerStatus?: string;
	logTo(file: string): void;
	importCredentials(c: unknown[]): Promise<void>;
	importAndPublish(files: string[]): Promise<string[]>;
	start(o?: object): Promise<string>;
	stop(): Promise<void>;
	waitForWebhooks(paths: string[], o?: object): Promise<void>;
	dispose(): Promise<void>;
}

let instance: Instance;
let tmp: string;
let logFile: string;
const log = () => fs.readFileSync(logFile, 'utf8');
const count = (text: string, what: string) => text.split(what).length - 1;

beforeAll(async () => {
	tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-publish-'));
	logFile = path.join(tmp, 'n8n.log');
	instance = harness.createInstance({ bin: harness.ensureN8n() });
	instance.logTo(logFile);
	// WF10 only needs the credential to exist to be activated (nothing connects to this database here)
	await instance.importCredentials([harness.postgresCredential('postgres://postgres@127.0.0.1:5432/unused')]);
}, 30 * 60_000); // ensureN8n installs n8n on a cold cache (minutes)

afterAll(async () => {
	await instance?.dispose();
	if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

test(
	'a start with nothing to publish creates no owner',
	async () => {
		await instance.start();
		assert.equal(instance.ownerStatus, undefined);
		const settings = (await (await fetch(`${instance.url}/rest/settings`)).json()) as {
			data: { userManagement: { showSetupOnFirstLoad: boolean } };
		};
		assert.equal(settings.data.userManagement.showSetupOnFirstLoad, true, 'n8n still asks for an owner');
		await instance.stop();
	},
	5 * 60_000,
);

test(
	'one import call, no publish:workflow process, sub-workflows first, the webhooks answer',
	async () => {
		// parents before their sub-workflow WF99ErrorPipe: the harness must reorder them
		const ids = await instance.importAndPublish([
			path.join(WORKFLOWS, 'WF10_telegram_ingest.json'),
			path.join(__dirname, 'workflows', 'test_wf99_caller.json'),
			path.join(WORKFLOWS, 'WF99_global_err_handler.json'),
			path.join(WORKFLOWS, 'WF99e_catch_all.json'),
		]);
		assert.equal(ids.length, 4);
		await instance.start();
		await instance.waitForWebhooks(['telegram', 'test/wf99'], { timeoutMs: 30_000 });
		const text = log();
		assert.equal(count(text, '--- harness: n8n import:workflow'), 1, 'one import call for all files');
		assert.equal(count(text, 'publish:workflow'), 0, 'no n8n publish:workflow process');
		assert.equal(count(text, '--- harness: publishing 4 workflows through'), 1);
		const published = text.match(
			/--- harness: (published 4 workflows through n8n's REST API in [\d.]+ s as owner \S+ \(created\)) ---/,
		);
		assert.ok(published, 'the log says what was published, in how long, as which owner');
		console.log(published[1]);
		const steps = instance.steps.filter((s) => !s.startsWith('n8n import:credentials'));
		assert.equal(steps.length, 2, steps.join('\n'));
		assert.match(steps[0], /^n8n import:workflow --separate /);
		assert.equal(steps[1], 'REST publish 4 workflows');
		assert.equal(instance.ownerStatus, 'created');
		assert.ok(instance.owner && !text.includes(instance.owner.password), "the owner's password is not logged");
		// the order n8n was asked in: WF99ErrorPipe before the workflows that call it
		const order = text.match(/publishing 4 workflows through .*?\): ([^\n]+) ---/)?.[1].split(', ');
		assert.ok(order, 'the log names the order');
		assert.ok(order.indexOf('WF99ErrorPipe') < order.indexOf('WF10TgIngest'), order.join(', '));
	},
	5 * 60_000,
);

test(
	'a second start publishes nothing again; the webhooks still answer',
	async () => {
		await instance.stop();
		const before = instance.steps.length;
		await instance.start();
		await instance.waitForWebhooks(['telegram', 'test/wf99'], { timeoutMs: 60_000 });
		assert.deepEqual(instance.steps.slice(before), [], 'no CLI call and no REST publish on the restart');
		assert.equal(count(log(), '--- harness: publishing'), 1);
	},
	5 * 60_000,
);

test(
	"a workflow n8n cannot activate fails start() with n8n's message",
	async () => {
		await instance.stop();
		const bad = {
			id: 'TestBadNodeType',
			name: 'Test: unrecognized node type',
			nodes: [
				{
					id: 'a1',
					name: 'Webhook',
					type: 'n8n-nodes-base.webhook',
					typeVersion: 2,
					position: [0, 0],
					parameters: { path: 'test/bad-node', httpMethod: 'POST' },
					webhookId: 'b7c3b1f0-0000-4000-8000-00000000bad1',
				},
				{
					id: 'a2',
					name: 'Missing',
					type: 'n8n-nodes-contracts.doesNotExist',
					typeVersion: 1,
					position: [200, 0],
					parameters: {},
				},
			],
			connections: { Webhook: { main: [[{ node: 'Missing', type: 'main', index: 0 }]] } },
			settings: {},
		};
		const file = path.join(tmp, 'bad.json');
		fs.writeFileSync(file, JSON.stringify(bad));
		await instance.importAndPublish([file]);
		await assert.rejects(instance.start(), (error: Error) => {
			assert.match(
				error.message,
				/publishing workflow TestBadNodeType \(Test: unrecognized node type\) failed: HTTP 400 /,
			);
			assert.match(error.message, /doesNotExist/);
			console.log(error.message);
			return true;
		});
		assert.equal(instance.ownerStatus, 'existing', 'logged in as the owner the first publish created');
	},
	5 * 60_000,
);
