/** The Condition DSL against a table of cases (FACTS: the state-machine format of seed 004). */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import { evaluate } from '../../../nodes/shared/stateMachine/criteria';
import type { Condition, OperatorType } from '../../../nodes/shared/stateMachine/schema';

const entity = {
	year: 2024,
	price: '30',
	score: 100,
	name: 'Marie Curie',
	flag: true,
	nothing: null,
	tags: ['physics', 'chemistry'],
	laureates: [
		{ name: 'Marie', share: 2 },
		{ name: 'Pierre', share: 4 },
	],
	code: 'a.b*c',
};
const meta = { state: 'NEW', creationDate: '2024-03-01T10:00:00Z', previousTransition: 'CREATE' };
const simple = (jsonPath: string, operatorType: OperatorType, value?: unknown): Condition => ({
	type: 'simple',
	jsonPath,
	operatorType,
	value,
});

const CASES: [string, Condition, boolean][] = [
	['number equals numeric text', simple('$.year', 'EQUALS', '2024'), true],
	['number equals "100.0"', simple('$.score', 'EQUALS', '100.0'), true],
	['stored text "30" vs 30 compares as text', simple('$.price', 'EQUALS', 30), true],
	['stored text "30" vs "30.0" compares as text (no match)', simple('$.price', 'EQUALS', '30.0'), false],
	['boolean true equals "true"', simple('$.flag', 'EQUALS', 'true'), true],
	['NOT_EQUAL', simple('$.year', 'NOT_EQUAL', 2023), true],
	['GREATER_THAN numeric', simple('$.score', 'GREATER_THAN', '99'), true],
	['GREATER_OR_EQUAL', simple('$.score', 'GREATER_OR_EQUAL', 100), true],
	['LESS_THAN numeric (not text: 100 < 20 is false)', simple('$.score', 'LESS_THAN', 20), false],
	['LESS_OR_EQUAL', simple('$.score', 'LESS_OR_EQUAL', 100), true],
	['CONTAINS', simple('$.name', 'CONTAINS', 'Curie'), true],
	['STARTS_WITH', simple('$.name', 'STARTS_WITH', 'Marie'), true],
	['ENDS_WITH', simple('$.name', 'ENDS_WITH', 'Marie'), false],
	['LIKE with % and _', simple('$.name', 'LIKE', 'Mar_e %'), true],
	['LIKE is anchored', simple('$.name', 'LIKE', 'Marie'), false],
	['LIKE treats regex characters literally', simple('$.code', 'LIKE', 'a.b*c'), true],
	['LIKE . is not a wildcard', simple('$.code', 'LIKE', 'aXb*c'), false],
	['MATCHES_PATTERN finds anywhere', simple('$.name', 'MATCHES_PATTERN', 'ie C'), true],
	['MATCHES_PATTERN anchored', simple('$.name', 'MATCHES_PATTERN', '^Curie$'), false],
	['BETWEEN inclusive array', simple('$.score', 'BETWEEN', [100, 200]), true],
	['BETWEEN "lo,hi" string', simple('$.year', 'BETWEEN', '2000,2023'), false],
	['IEQUALS', simple('$.name', 'IEQUALS', 'marie curie'), true],
	['INOT_EQUAL', simple('$.name', 'INOT_EQUAL', 'MARIE CURIE'), false],
	['ICONTAINS', simple('$.name', 'ICONTAINS', 'CURIE'), true],
	['INOT_CONTAINS', simple('$.name', 'INOT_CONTAINS', 'xyz'), true],
	['ISTARTS_WITH', simple('$.name', 'ISTARTS_WITH', 'MARIE'), true],
	['INOT_STARTS_WITH', simple('$.name', 'INOT_STARTS_WITH', 'marie'), false],
	['IENDS_WITH', simple('$.name', 'IENDS_WITH', 'CURIE'), true],
	['INOT_ENDS_WITH', simple('$.name', 'INOT_ENDS_WITH', 'x'), true],
	['IS_NULL on JSON null', simple('$.nothing', 'IS_NULL'), true],
	['IS_NULL on an absent field', simple('$.missing', 'IS_NULL'), true],
	['IS_NULL on a present field', simple('$.year', 'IS_NULL'), false],
	['NOT_NULL on a present field', simple('$.year', 'NOT_NULL'), true],
	['NOT_NULL on null', simple('$.nothing', 'NOT_NULL'), false],
	['null never matches EQUALS', simple('$.nothing', 'EQUALS', null), false],
	['null never matches NOT_EQUAL', simple('$.nothing', 'NOT_EQUAL', 'x'), false],
	['absent never matches INOT_CONTAINS', simple('$.missing', 'INOT_CONTAINS', 'x'), false],
	['absent never matches LESS_THAN', simple('$.missing', 'LESS_THAN', 5), false],
	['[*]: any element matches', simple('$.laureates[*].name', 'EQUALS', 'Pierre'), true],
	['[*]: no element matches', simple('$.laureates[*].share', 'GREATER_THAN', 4), false],
	['a path ending on an array: any element', simple('$.tags', 'EQUALS', 'chemistry'), true],
	['empty AND is true', { type: 'group', operator: 'AND', conditions: [] }, true],
	['empty OR is false', { type: 'group', operator: 'OR', conditions: [] }, false],
	[
		'AND',
		{
			type: 'group',
			operator: 'AND',
			conditions: [simple('$.year', 'EQUALS', 2024), simple('$.flag', 'EQUALS', true)],
		},
		true,
	],
	[
		'OR',
		{
			type: 'group',
			operator: 'OR',
			conditions: [simple('$.year', 'EQUALS', 1), simple('$.name', 'ICONTAINS', 'marie')],
		},
		true,
	],
	[
		'nested group',
		{ type: 'group', operator: 'AND', conditions: [{ type: 'group', operator: 'OR', conditions: [] }] },
		false,
	],
	['lifecycle state', { type: 'lifecycle', field: 'state', operatorType: 'EQUALS', value: 'NEW' }, true],
	[
		'lifecycle previousTransition',
		{ type: 'lifecycle', field: 'previousTransition', operatorType: 'STARTS_WITH', value: 'CRE' },
		true,
	],
	[
		'lifecycle creationDate is chronological',
		{ type: 'lifecycle', field: 'creationDate', operatorType: 'GREATER_THAN', value: '2024-03-01T09:00:00+00:00' },
		true,
	],
	[
		'lifecycle creationDate BEFORE (text order would say otherwise)',
		{ type: 'lifecycle', field: 'creationDate', operatorType: 'LESS_THAN', value: '2024-03-01T12:00:00+03:00' },
		false,
	],
	['array: element i equals values[i]', { type: 'array', jsonPath: '$.tags', values: ['physics', 'chemistry'] }, true],
	['array: null entry is skipped', { type: 'array', jsonPath: '$.tags', values: [null, 'chemistry'] }, true],
	['array: a mismatch', { type: 'array', jsonPath: '$.tags', values: ['chemistry'] }, false],
];

for (const [name, condition, expected] of CASES) {
	test(`criterion: ${name} → ${expected}`, () => {
		assert.equal(evaluate(condition, entity, meta), expected);
	});
}

test('a null criterion always matches', () => {
	assert.equal(evaluate(null, entity, meta), true);
});

test('group short-circuits: OR stops at the first match, AND at the first miss', () => {
	let calls = 0;
	const counting = new Proxy(entity, {
		get(target, key) {
			if (key === 'year') calls++;
			return Reflect.get(target, key);
		},
	});
	evaluate(
		{
			type: 'group',
			operator: 'OR',
			conditions: [simple('$.name', 'CONTAINS', 'Marie'), simple('$.year', 'EQUALS', 1)],
		},
		counting,
		meta,
	);
	evaluate(
		{ type: 'group', operator: 'AND', conditions: [simple('$.name', 'CONTAINS', 'zz'), simple('$.year', 'EQUALS', 1)] },
		counting,
		meta,
	);
	assert.equal(calls, 0);
});

test("array: evaluate() reads the format's `values` on an unparsed condition, and a legacy `value` the same way; no array → false", () => {
	const entity = { tags: ['physics', 'chemistry'] };
	assert.equal(
		evaluate({ type: 'array', jsonPath: '$.tags', values: ['physics'] } as never, entity, { state: null }),
		true,
	);
	assert.equal(
		evaluate({ type: 'array', jsonPath: '$.tags', value: ['physics'] } as never, entity, { state: null }),
		true,
	);
	assert.equal(
		evaluate({ type: 'array', jsonPath: '$.tags', value: ['chemistry'] } as never, entity, { state: null }),
		false,
	);
	assert.equal(evaluate({ type: 'array', jsonPath: '$.tags' } as never, entity, { state: null }), false);
});
