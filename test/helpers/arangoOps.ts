/** Shared pieces of the ArangoCAS HTTP-level tests. */
import assert from 'node:assert/strict';
import type { Database } from 'arangojs';
import { ContractError } from '../../nodes/shared/errors';
import type { Operation } from '../../nodes/ArangoCas/actions/types';
import { ArangoStub } from './arangoHttp';
import { violations } from './aqlAccess';

export const RUN = { executionId: '4711' };

/** Runs `op` against `stub` and returns the ContractError it must throw. */
export async function failure(op: Operation, db: Database, input: Record<string, unknown>): Promise<ContractError> {
	try {
		await op.execute(db, input, RUN);
	} catch (error) {
		assert.ok(error instanceof ContractError, `expected a ContractError, got ${String(error)}`);
		return error;
	}
	assert.fail('the operation succeeded but should have failed');
}

/** Every AQL text the stub received passes the 1579 static check and uses only bind variables for values. */
export function assertQueriesSafe(stub: ArangoStub): void {
	for (const { query, bindVars } of stub.queries()) {
		assert.deepEqual(violations(query), [], `AQL breaks the 1579 rule:\n${query}`);
		for (const name of query.match(/@[a-z_]+/g) ?? [])
			assert.ok(name.slice(1) in bindVars, `bind var ${name} not sent`);
	}
}
