/**
 * The n8n harness (scripts/lib/n8n.js, used by `npm run demo`, the e2e tests and the queue-mode cluster of
 * n8nQueue.js) runs n8n with NODE_ENV=production (issue 25 §4): n8n 2.4.8 adds a `stacktrace` naming the
 * server's paths to its own error answers (e.g. a webhook body it cannot parse) whenever NODE_ENV is unset
 * or `development` (@n8n/backend-common `inDevelopment`). Also jest's NODE_ENV=test is not passed on.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from '@jest/globals';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { N8nInstance } = require('../../scripts/lib/n8n.js') as {
	N8nInstance: new (
		folder: string,
		bin: string,
		log: (line: string) => void,
	) => {
		env(extra?: Record<string, string>): Record<string, string | undefined>;
	};
};

test('every n8n process of the harness gets NODE_ENV=production, whatever the runner set; extra overrides it', () => {
	assert.equal(process.env.NODE_ENV, 'test', 'jest sets NODE_ENV=test for itself');
	const instance = new N8nInstance('/tmp/contracts-n8n-env-test', '/nonexistent/n8n', () => {});
	assert.equal(instance.env().NODE_ENV, 'production');
	assert.equal(instance.env({ N8N_PORT: '1' }).NODE_ENV, 'production');
	assert.equal(instance.env({ NODE_ENV: 'development' }).NODE_ENV, 'development');
});

test('compose.yml gives every n8n process NODE_ENV: production', () => {
	const text = readFileSync(`${__dirname}/../../scripts/queue-mode/compose.yml`, 'utf8');
	const anchor = text.slice(text.indexOf('x-n8n-env: &n8n-env'), text.indexOf('x-n8n: &n8n'));
	assert.match(anchor, /^ {2}NODE_ENV: production$/m);
});

test("killing a queue process removes n8n's crash journal, so its restart does not sleep 10 s", async () => {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const { QueueProcess } = require('../../scripts/lib/n8nQueue.js') as {
		QueueProcess: new (
			folder: string,
			bin: string,
			log: (line: string) => void,
			role: string,
			clusterEnv: Record<string, string>,
		) => { process: ChildProcess; kill(): Promise<void>; transcript(): string };
	};
	const folder = mkdtempSync(path.join(os.tmpdir(), 'contracts-n8n-kill-'));
	try {
		const journal = path.join(folder, '.n8n', 'crash.journal');
		mkdirSync(path.dirname(journal), { recursive: true });
		writeFileSync(journal, '');
		const worker = new QueueProcess(folder, '/nonexistent/n8n', () => {}, 'worker-1', {});
		// a stand-in for the n8n worker: a process that runs until killed (it touched the journal, as n8n does)
		worker.process = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
		await worker.kill();
		assert.equal(worker.process.signalCode, 'SIGKILL');
		assert.equal(existsSync(journal), false, 'the journal is gone');
		assert.match(worker.transcript(), /killed with SIGKILL \(crash journal removed\)/);
	} finally {
		rmSync(folder, { recursive: true, force: true });
	}
});
