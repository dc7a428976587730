/**
 * The static check over every AQL string ArangoCAS sends (error 1579: no collection read, traversed or
 * written again after it was written in the same query). The check itself is tested on the seed's own
 * 3.2 and 3.3 queries, which ArangoDB rejects as written (FACTS: ArangoDB).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import * as archive from '../../../nodes/ArangoCas/actions/atom/archive.operation';
import * as lock from '../../../nodes/ArangoCas/actions/atom/lock.operation';
import * as unlock from '../../../nodes/ArangoCas/actions/atom/unlock.operation';
import * as unlockExpired from '../../../nodes/ArangoCas/actions/atom/unlockExpired.operation';
import * as baseline from '../../../nodes/ArangoCas/actions/baseline/create.operation';
import * as loadContext from '../../../nodes/ArangoCas/actions/analysis/loadContext.operation';
import * as saveError from '../../../nodes/ArangoCas/actions/analysis/saveError.operation';
import * as saveResult from '../../../nodes/ArangoCas/actions/analysis/saveResult.operation';
import * as create from '../../../nodes/ArangoCas/actions/proposal/create.operation';
import * as merge from '../../../nodes/ArangoCas/actions/proposal/merge.operation';
import * as reject from '../../../nodes/ArangoCas/actions/proposal/reject.operation';
import { RESOURCES } from '../../../nodes/ArangoCas/actions';
import { accesses, violations } from '../../helpers/aqlAccess';

const MODULES = { archive, lock, unlock, unlockExpired, baseline, loadContext, saveError, saveResult, create, merge, reject };

/** Every exported `*_AQL` string of every operation module. */
const QUERIES = Object.entries(MODULES).flatMap(([module, exports]) =>
	Object.entries(exports)
		.filter(([name, value]) => name.endsWith('_AQL') && typeof value === 'string')
		.map(([name, value]) => ({ name: `${module}.${name}`, aql: value as string })),
);

/** The ```aql blocks of one section of seed 000 (e.g. "3.2"). */
function seedQuery(section: string): string {
	const seed = readFileSync(path.resolve(__dirname, '..', '..', '..', '..', 'shared', 'seeds', '000_19f47329cfec8acb.txt'), 'utf8');
	const start = seed.indexOf(`## ${section}.`);
	const end = seed.indexOf('\n## ', start + 4);
	const block = seed.slice(start, end === -1 ? undefined : end).match(/```aql\n([\s\S]*?)```/);
	assert.ok(block, `no aql block in seed section ${section}`);
	return block[1];
}

test('every operation module is covered (one per operation of the node)', () => {
	const operations = RESOURCES.flatMap((r) => r.operations).length;
	assert.equal(Object.keys(MODULES).length, operations);
	assert.ok(QUERIES.length >= operations, `${QUERIES.length} queries for ${operations} operations`);
});

for (const { name, aql } of QUERIES) {
	test(`${name}: no access to a collection after its write`, () => {
		assert.deepEqual(violations(aql), []);
		assert.ok(accesses(aql).length > 0, 'the checker saw the query\'s collections');
	});
}

test('the checker rejects seed 3.2 as written (atoms updated twice, proposal_links read after its update)', () => {
	const problems = violations(seedQuery('3.2'));
	assert.ok(problems.some((p) => /write of atoms after its write/.test(p)), problems.join('\n'));
	assert.ok(problems.some((p) => /read of proposal_links after its write/.test(p)), problems.join('\n'));
});

test('the checker rejects seed 3.3 as written (traversal after the baselines insert)', () => {
	const problems = violations(seedQuery('3.3'));
	assert.ok(problems.some((p) => /any collection \(baselines\)/.test(p)), problems.join('\n'));
});

test('the checker sees reads, traversals and writes in order', () => {
	const found = accesses(`LET a = DOCUMENT("atoms", @k)
FOR v IN 1..2 OUTBOUND a._id structure_links
  FOR p IN prompts
    INSERT { x: 1 } INTO artifacts
    RETURN 1`);
	assert.deepEqual(found.map((f) => `${f.kind}:${f.collection}`), ['read:atoms', 'read:structure_links', 'read:*', 'read:prompts', 'write:artifacts']);
});
