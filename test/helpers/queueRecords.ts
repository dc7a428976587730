/**
 * Reading a queue-mode n8n's records in e2e tests (test/helpers/n8nQueue.ts): n8n's execution records,
 * which worker started an execution (from the worker transcripts: n8n 2.4.8's execution_entity has no
 * worker column), and the small counting / waiting helpers the queue tests share.
 */
import assert from 'node:assert/strict';
import { Client } from 'pg';
import type { RunningQueueN8n } from './n8nQueue';

/** n8n's own records of `workflowId` (execution_entity in n8n's database): execution id and creation time, by id. */
export async function executionsOf(
	n8n: Pick<RunningQueueN8n, 'n8nDatabaseUrl'>,
	workflowId: string,
): Promise<{ id: string; createdAt: Date }[]> {
	const client = new Client({ connectionString: n8n.n8nDatabaseUrl });
	await client.connect();
	try {
		const { rows } = await client.query(
			'SELECT id::text, "createdAt" FROM execution_entity WHERE "workflowId" = $1 ORDER BY id',
			[workflowId],
		);
		return rows;
	} finally {
		await client.end();
	}
}

/**
 * The worker role ("worker-1", …) that started each of `executionIds`.
 * @throws AssertionError when one was started by no worker or by two
 */
export function rolesOf(n8n: Pick<RunningQueueN8n, 'workerOfExecutions'>, executionIds: string[]): Map<string, string> {
	const started = n8n.workerOfExecutions();
	const roles = new Map<string, string>();
	for (const id of executionIds) {
		const by = started.get(id) ?? [];
		assert.equal(by.length, 1, `execution ${id} started by ${JSON.stringify(by)}`);
		roles.set(id, by[0]);
	}
	return roles;
}

/** How often each value occurs (keyed by String(value)). */
export function countBy<T>(values: T[]): Record<string, number> {
	const out: Record<string, number> = {};
	for (const v of values) out[String(v)] = (out[String(v)] ?? 0) + 1;
	return out;
}

/**
 * Polls `probe` every `everyMs` ms until it returns something other than undefined, and returns that.
 * @throws AssertionError after `timeoutMs` ms, naming `what` and followed by `explain()` (e.g. rows and n8n's logs)
 */
export async function waitFor<T>(
	what: string,
	probe: () => Promise<T | undefined>,
	timeoutMs: number,
	everyMs: number,
	explain: () => Promise<string>,
): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		const value = await probe();
		if (value !== undefined) return value;
		await new Promise((r) => setTimeout(r, everyMs));
	}
	assert.fail(`${what}: not reached in ${timeoutMs} ms\n${await explain()}`);
}
