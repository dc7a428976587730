/**
 * bench:arango's inputs (bench/arango.bench.ts INPUTS) stay valid for the operations they drive: every ArangoCAS
 * operation has one, and none is refused by the operation's own input validation (a 422). The operations run
 * against a database stand-in that fails at its first use, so nothing beyond validation runs. Without this
 * the bench stopped with "user_id is required" once the Identity fields became required, and `npm run bench`
 * measured nothing after it.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import type { Database } from 'arangojs';
import { INPUTS } from '../../bench/arango.bench';
import { RESOURCES } from '../../nodes/ArangoCas/actions';
import { ContractError } from '../../nodes/shared/errors';

/** A database whose every property access throws: the first use past validation ends the call. */
const unreachable = new Proxy(
	{},
	{
		get() {
			throw new Error('database reached');
		},
	},
) as Database;

test('every ArangoCAS operation has a bench input', () => {
	const operations = RESOURCES.flatMap((r) => r.operations.map((op) => `${r.value}.${op.value}`));
	assert.deepEqual(
		operations.filter((name) => !(name in INPUTS)),
		[],
	);
	assert.deepEqual(
		Object.keys(INPUTS).filter((name) => !operations.includes(name)),
		[],
		'no input of a removed operation',
	);
});

test('no bench input is refused by its operation as invalid (422)', async () => {
	const refused: string[] = [];
	for (const resource of RESOURCES)
		for (const op of resource.operations) {
			const name = `${resource.value}.${op.value}`;
			try {
				await op.execute(unreachable, INPUTS[name], { executionId: '1' });
			} catch (error) {
				if (error instanceof ContractError && error.statusCode === 422) refused.push(`${name}: ${error.message}`);
			}
		}
	assert.deepEqual(refused, []);
});
