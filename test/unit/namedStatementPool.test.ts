/**
 * namedStatementPool (nodes/shared/postgres/prepared.ts) builds its pool from the shared pool's settings — the
 * password included, which pg-pool keeps as a non-enumerable option a spread would drop (every Claim Jobs and
 * Finish Job would then fail to authenticate on a server that asks for a password; CI's server trusts
 * 127.0.0.1, so only this test sees it) — keeps no idle connection open, is one per shared pool, passes
 * anything else through, and is not made for a pool that has ended. No connection is opened.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import { Pool } from 'pg';
import { endNamedStatementPool, namedStatementPool } from '../../nodes/shared/postgres/prepared';
import { poolConfig } from '../../nodes/shared/postgres/pool';

const credential = {
	host: '127.0.0.1',
	port: 5432,
	database: 'contracts',
	user: 'worker',
	password: 'Sekr3t-password',
	ssl: 'disable',
	maxConnections: 7,
};

test('the named pool has the shared pool’s server, user, password and size, no kept connections, and its own application_name', async () => {
	const shared = new Pool({ ...poolConfig(credential as never), min: 2 });
	const named = namedStatementPool(shared) as Pool;
	try {
		assert.notEqual(named, shared);
		assert.equal(namedStatementPool(shared), named, 'one per shared pool');
		const o = named.options as unknown as Record<string, unknown>;
		assert.deepEqual(
			[o.host, o.port, o.database, o.user, o.password, o.max, o.min],
			['127.0.0.1', 5432, 'contracts', 'worker', 'Sekr3t-password', 7, 0],
		);
		assert.equal(o.application_name, 'n8n-nodes-contracts (named statements)');
		assert.equal(o.allowExitOnIdle, true);
	} finally {
		await endNamedStatementPool(shared);
		await shared.end();
	}
});

test('anything but a pool is passed through; an ended pool gets no named pool', async () => {
	const client = { query: () => undefined };
	assert.equal(namedStatementPool(client), client);
	const shared = new Pool({ host: '127.0.0.1', password: 'x' });
	await shared.end();
	assert.equal(namedStatementPool(shared), shared);
});
