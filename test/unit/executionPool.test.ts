/**
 * executionPool (nodes/shared/postgres/executionPool.ts): n8n's getCredentials is asked at most once per
 * CREDENTIAL_CACHE_TTL_MS per (workflow, credential id); another workflow or another credential asks
 * again; a context without ids is never cached. No connection is made (pg pools connect lazily).
 */
import assert from 'node:assert/strict';
import { afterAll, test } from '@jest/globals';
import type { IExecuteFunctions } from 'n8n-workflow';
import { CREDENTIAL_CACHE_TTL_MS, clearExecutionPools, executionPool } from '../../nodes/shared/postgres/executionPool';
import { closeAllPools } from '../../nodes/shared/postgres/pool';

afterAll(async () => {
	clearExecutionPools();
	await closeAllPools();
});

function context(
	workflowId: string | undefined,
	credentialId: string | undefined,
	asked: string[],
	host = 'db.example',
) {
	return {
		getNode: () => ({
			name: 'Telegram Ingest',
			credentials: credentialId ? { postgresContractsApi: { id: credentialId, name: 'pg' } } : undefined,
		}),
		getWorkflow: () => ({ id: workflowId }),
		getCredentials: async (type: string) => {
			asked.push(`${workflowId}/${credentialId}/${type}`);
			return { host, port: 5432, database: 'contracts', user: 'app', password: 'Pool-secret_1' };
		},
	} as unknown as IExecuteFunctions;
}

test('one getCredentials per TTL per workflow and credential; the same pool meanwhile', async () => {
	const asked: string[] = [];
	const t0 = 1_000_000;
	const first = await executionPool(context('wfA', 'cred1', asked), { now: t0 });
	assert.equal(await executionPool(context('wfA', 'cred1', asked), { now: t0 + CREDENTIAL_CACHE_TTL_MS - 1 }), first);
	assert.deepEqual(asked, ['wfA/cred1/postgresContractsApi']);
	await executionPool(context('wfB', 'cred1', asked), { now: t0 + 1 });
	await executionPool(context('wfA', 'cred2', asked), { now: t0 + 1 });
	assert.equal(asked.length, 3, 'another workflow, another credential: asked again');
	await executionPool(context('wfA', 'cred1', asked), { now: t0 + CREDENTIAL_CACHE_TTL_MS });
	assert.equal(asked.length, 4, 'asked again once the TTL is over');
});

test('an edited credential is used once the TTL is over (a new pool for the new fields)', async () => {
	const asked: string[] = [];
	const t0 = 2_000_000;
	const before = await executionPool(context('wfE', 'credE', asked, 'old.example'), { now: t0 });
	assert.equal(await executionPool(context('wfE', 'credE', asked, 'new.example'), { now: t0 + 10 }), before);
	const afterTtl = await executionPool(context('wfE', 'credE', asked, 'new.example'), {
		now: t0 + CREDENTIAL_CACHE_TTL_MS + 1,
	});
	assert.notEqual(afterTtl, before);
	assert.equal((afterTtl as unknown as { options: { host: string } }).options.host, 'new.example');
});

test('a context without a workflow or credential id is never cached', async () => {
	const asked: string[] = [];
	await executionPool(context(undefined, 'cred1', asked), { now: 5 });
	await executionPool(context(undefined, 'cred1', asked), { now: 5 });
	await executionPool(context('wfC', undefined, asked), { now: 5 });
	await executionPool(context('wfC', undefined, asked), { now: 5 });
	assert.equal(asked.length, 4);
});

test("reuse: false (Telegram Ingest's default) asks n8n on every execution: a credential resolved per execution is never shared", async () => {
	const asked: string[] = [];
	await executionPool(context('wfR', 'credR', asked), { now: 7, reuse: false });
	await executionPool(context('wfR', 'credR', asked), { now: 8, reuse: false });
	assert.equal(asked.length, 2);
});
