/**
 * The static check over every AQL string ArangoCAS sends (error 1579, as arangod checks it: no
 * collection used again after it was written, no traversal and no DOCUMENT() after any write; see
 * test/helpers/aqlAccess.ts), and the `WITH` clause every traversal needs on a cluster (error 1521).
 * The check itself is tested on the seed's own 3.2 and 3.3 queries, which ArangoDB rejects as written
 * (FACTS: ArangoDB), and on one case per rule.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from '@jest/globals';
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
import * as conflict from '../../../nodes/ArangoCas/transport/conflict';
import { RESOURCES } from '../../../nodes/ArangoCas/actions';
import { accesses, traversals, violations, withCollections } from '../../helpers/aqlAccess';

const MODULES = {
	archive,
	lock,
	unlock,
	unlockExpired,
	baseline,
	loadContext,
	saveError,
	saveResult,
	create,
	merge,
	reject,
};

/** Every exported `*_AQL` string of every operation module, and of the transport's conflict re-read. */
const QUERIES = Object.entries({ ...MODULES, conflict }).flatMap(([module, exports]) =>
	Object.entries(exports)
		.filter(([name, value]) => name.endsWith('_AQL') && typeof value === 'string')
		.map(([name, value]) => ({ name: `${module}.${name}`, aql: value as string })),
);

/** The ```aql blocks of one section of seed 000 (e.g. "3.2"), from the repository's copy (test/fixtures/README.md). */
function seedQuery(section: string): string {
	const seed = readFileSync(
		path.resolve(__dirname, '..', '..', 'fixtures', 'seeds', '000_19f47329cfec8acb.txt'),
		'utf8',
	);
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
	assert.ok(
		QUERIES.some((q) => q.name === 'conflict.CURRENT_REVS_AQL'),
		'the re-read after a 1200 is checked too',
	);
});

for (const { name, aql } of QUERIES) {
	test(`${name}: no access to a collection after its write`, () => {
		assert.deepEqual(violations(aql), []);
		assert.ok(accesses(aql).length > 0, "the checker saw the query's collections");
	});
}

/** Vertex collections each edge collection connects (seed 000 §1: the graph model). */
const EDGE_VERTICES: Record<string, string[]> = {
	structure_links: ['docs', 'atoms'],
	baseline_items: ['baselines', 'atoms'],
	semantic_links: ['artifacts', 'atoms'],
	created_with: ['artifacts', 'prompts'],
	proposal_links: ['atoms'],
	revision_links: ['atoms'],
};

for (const { name, aql } of QUERIES) {
	const found = traversals(aql);
	if (found.length === 0) continue;
	test(`${name}: its traversal declares every vertex collection with WITH (cluster error 1521)`, () => {
		const declared = withCollections(aql);
		for (const edges of found) {
			assert.ok(edges.length > 0, 'the traversal names its edge collection');
			for (const edge of edges)
				for (const vertex of EDGE_VERTICES[edge])
					assert.ok(
						declared.includes(vertex),
						`${vertex} (reached through ${edge}) is not in WITH ${declared.join(', ')}`,
					);
		}
	});
}

test('the four traversal queries are covered by the WITH check', () => {
	assert.deepEqual(
		QUERIES.filter((q) => traversals(q.aql).length > 0)
			.map((q) => q.name)
			.sort(),
		[
			'archive.ARCHIVE_AQL',
			'baseline.BASELINE_CURRENT_REVS_AQL',
			'baseline.CREATE_BASELINE_AQL',
			'loadContext.LOAD_CONTEXT_AQL',
		],
	);
});

test('withCollections/traversals read the clause and the edge lists', () => {
	assert.deepEqual(withCollections('WITH docs, atoms\nLET x = 1 RETURN x'), ['docs', 'atoms']);
	assert.deepEqual(withCollections('LET x = 1 RETURN x'), []);
	assert.deepEqual(
		traversals('FOR v IN 1..2 OUTBOUND @s structure_links, INBOUND proposal_links OPTIONS {} RETURN v'),
		[['structure_links', 'proposal_links']],
	);
	assert.deepEqual(traversals('FOR v IN 1..2 ANY @s\n  semantic_links\n  RETURN v'), [['semantic_links']]);
	assert.deepEqual(traversals('LET ok = [1, 2] ANY == 1 RETURN ok'), [], 'ANY == is an array comparison');
});

test('the checker rejects seed 3.2 as written (atoms updated twice, proposal_links read after its update)', () => {
	const problems = violations(seedQuery('3.2'));
	assert.ok(
		problems.some((p) => /write of atoms after its write/.test(p)),
		problems.join('\n'),
	);
	assert.ok(
		problems.some((p) => /read of proposal_links after its write/.test(p)),
		problems.join('\n'),
	);
});

test('the checker rejects seed 3.3 as written (traversal after the baselines insert)', () => {
	const problems = violations(seedQuery('3.3'));
	assert.ok(
		problems.some((p) => /traversal after a write/.test(p)),
		problems.join('\n'),
	);
});

test('the checker sees reads, traversals, document functions and writes in order, with their nesting level', () => {
	const found = accesses(`LET a = DOCUMENT("atoms", @k)
FOR v IN 1..2 OUTBOUND a._id structure_links
  FOR p IN prompts
    INSERT { x: 1 } INTO artifacts
    RETURN 1`);
	assert.deepEqual(
		found.map((f) => `${f.kind}:${f.collection}`),
		['document:*', 'traversal:*', 'read:structure_links', 'read:prompts', 'write:artifacts'],
	);
});

/** One case per rule of arangod's 1579 check; each pair differs only in what the rule is about. */
const RULES: { name: string; bad: string; good: string; problem: RegExp }[] = [
	{
		name: 'a FOR over a collection after its write',
		bad: 'LET w = (INSERT {} INTO artifacts RETURN 1)\nFOR a IN artifacts RETURN a',
		good: 'LET w = (INSERT {} INTO artifacts RETURN 1)\nFOR a IN prompts RETURN a',
		problem: /line 2: read of artifacts after its write on line 1/,
	},
	{
		name: 'a second write to the same collection',
		bad: 'LET w = (INSERT {} INTO atoms RETURN 1)\nLET v = (INSERT {} INTO atoms RETURN 1)\nRETURN 1',
		good: 'LET w = (INSERT {} INTO atoms RETURN 1)\nLET v = (INSERT {} INTO artifacts RETURN 1)\nRETURN 1',
		problem: /line 2: write of atoms after its write on line 1/,
	},
	{
		name: 'DOCUMENT() after a write to another collection',
		bad: 'LET w = (INSERT {} INTO artifacts RETURN 1)\nLET a = DOCUMENT("atoms", @k)\nRETURN a',
		good: 'LET a = DOCUMENT("atoms", @k)\nLET w = (INSERT {} INTO artifacts RETURN 1)\nRETURN a',
		problem: /line 2: document function after a write \(line 1\)/,
	},
	{
		name: 'document() in lower case, after a write',
		bad: 'LET w = (INSERT {} INTO artifacts RETURN 1)\nRETURN document(CONCAT("atoms/", @k))',
		good: 'LET a = document(CONCAT("atoms/", @k))\nLET w = (INSERT {} INTO artifacts RETURN 1)\nRETURN a',
		problem: /document function after a write/,
	},
	{
		name: 'a traversal after a write to an unrelated collection',
		bad: 'LET w = (INSERT {} INTO artifacts RETURN 1)\nFOR v IN 1..1 OUTBOUND @s structure_links RETURN v',
		good: 'LET r = (FOR v IN 1..1 OUTBOUND @s structure_links RETURN v)\nLET w = (INSERT {} INTO artifacts RETURN 1)\nRETURN r',
		problem: /line 2: traversal after a write \(line 1\)/,
	},
	{
		name: 'a traversal whose edge collection is not last on its line (or on the next line)',
		bad: 'LET w = (INSERT {} INTO baselines RETURN 1)\nFOR v IN 1..1 OUTBOUND @s structure_links FILTER v.x RETURN v',
		good: 'FOR v IN 1..1 OUTBOUND @s structure_links FILTER v.x\n  INSERT {} INTO baselines RETURN v',
		problem: /traversal after a write/,
	},
	{
		name: 'a write in a subquery to a collection used at the outer level',
		bad: 'FOR a IN atoms\n  LET u = (UPDATE a WITH { x: 1 } IN atoms RETURN 1)\n  RETURN u',
		good: 'FOR a IN atoms\n  UPDATE a WITH { x: 1 } IN atoms\n  RETURN 1',
		problem: /line 2: write of atoms in a subquery after it was used at an outer level/,
	},
];

for (const rule of RULES) {
	test(`the checker refuses ${rule.name}, and accepts the same accesses in an allowed order`, () => {
		const problems = violations(rule.bad);
		assert.ok(
			problems.some((p) => rule.problem.test(p)),
			`expected ${rule.problem} in:\n${problems.join('\n')}`,
		);
		assert.deepEqual(violations(rule.good), []);
	});
}

test('the checker is not fooled by strings, comments, attributes or object keys', () => {
	assert.deepEqual(
		violations(
			'LET w = (INSERT { atoms: "FOR a IN atoms", note: a.atoms } INTO atoms RETURN 1)\n// DOCUMENT(x) OUTBOUND y structure_links\nRETURN { atoms: 1 }',
		),
		[],
	);
	assert.deepEqual(
		violations('LET w = (INSERT { x: DOCUMENT("prompts", @p) } INTO artifacts RETURN 1) RETURN w'),
		[],
		'DOCUMENT inside the write statement comes before it',
	);
});
