/**
 * Boots a real n8n for end-to-end tests (2.4.8, or CONTRACTS_N8N_VERSION on CONTRACTS_N8N_NODE: scripts/lib/n8n.js): packed package in .n8n/nodes, credentials pointing at
 * `databaseUrl`, the given workflows imported (one CLI call), server started, then published through n8n's REST API
 * (scripts/lib/n8nPublish.js, as a generated owner).
 */
import path from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');

export interface RunningN8n {
	url: string;
	/** The last 8,000 characters n8n printed (for failure messages). */
	logs(): string;
	/** Everything n8n printed since it started (for secret scans). */
	transcript(): string;
	stop(): Promise<void>;
}

export const WORKFLOWS = path.join(__dirname, '..', '..', 'workflows-json');

/** The ArangoDbApi credential of the shipped arango workflows, pointed at `url`. */
export function arangoCredential(url: string): unknown {
	return harness.arangoCredential(url);
}

/** The JWT Auth credential (HS256 passphrase `secret`) every Webhook of A31–A37, M00 and M01 references. */
export function jwtCredential(secret: string): unknown {
	return harness.jwtCredential(secret);
}

/**
 * @param extraCredentials further credentials to import (e.g. `arangoCredential(url)` of scripts/lib/n8n.js)
 */
export async function startN8n(
	databaseUrl: string,
	workflowFiles: string[],
	webhookPaths: string[],
	extraCredentials: unknown[] = [],
): Promise<RunningN8n> {
	const bin = harness.ensureN8n({ log: console.log });
	// packs the package and removes the tarball once installed
	const instance = harness.createInstance({ bin });
	let url: string;
	try {
		await instance.importCredentials([harness.postgresCredential(databaseUrl), ...extraCredentials]);
		await instance.importAndPublish(workflowFiles);
		url = await instance.start();
		await instance.waitForWebhooks(webhookPaths);
	} catch (error) {
		// a failed start leaves nothing running: the caller never gets a handle to stop it
		await instance.stop().catch(() => undefined);
		instance.remove();
		throw error;
	}
	return {
		url,
		logs: () => instance.logs(),
		transcript: () => instance.transcript(),
		async stop() {
			await instance.stop();
			instance.remove();
		},
	};
}

/** Runs `fn` over `inputs` with at most `concurrency` calls in flight; results in input order. */
export async function mapLimit<T, R>(
	inputs: T[],
	concurrency: number,
	fn: (input: T, index: number) => Promise<R>,
): Promise<R[]> {
	const results: R[] = new Array(inputs.length);
	let next = 0;
	const workers = Array.from({ length: Math.min(concurrency, inputs.length) }, async () => {
		while (next < inputs.length) {
			const index = next++;
			results[index] = await fn(inputs[index], index);
		}
	});
	await Promise.all(workers);
	return results;
}
