/**
 * The seed-004 import boundary and the calculation node's answer, property-based (PROPERTY_RUNS, default
 * 10,000): parseImport never throws anything but a 400 VALIDATION_FAILED ContractError naming a field;
 * importMode is accepted exactly when, upper-cased, it is MERGE / REPLACE / ACTIVATE (blank → MERGE);
 * an array condition's `values` round-trips through export; a processor type other than "EXTERNAL" is
 * refused naming its path; readAnswer turns any sub-workflow output into a well-formed outcome.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { ContractError } from '../../../nodes/shared/errors';
import { evaluate, exportDefinition, parseImport, readAnswer } from '../../../nodes/shared/stateMachine';
import { hostileString, propertyParams } from '../../helpers/property';

const workflows = [{ name: 'w', initialState: 'A', states: { A: {} } }];

function refusal(fn: () => unknown): ContractError | null {
	try {
		fn();
		return null;
	} catch (error) {
		assert.ok(error instanceof ContractError, `not a ContractError: ${String(error)}`);
		assert.deepEqual([error.statusCode, error.details.code], [400, 'VALIDATION_FAILED']);
		assert.equal(typeof error.details.field, 'string');
		return error;
	}
}

test('importMode: accepted iff upper-cased it is a mode (blank → MERGE); otherwise 400 naming importMode', () => {
	const modes = fc
		.constantFrom('MERGE', 'REPLACE', 'ACTIVATE')
		.chain((m) =>
			fc
				.array(fc.boolean(), { minLength: m.length, maxLength: m.length })
				.map((upper) => [...m].map((ch, i) => (upper[i] ? ch : ch.toLowerCase())).join('')),
		);
	fc.assert(
		fc.property(
			fc.oneof(modes, hostileString(), fc.constantFrom<unknown>('', '   ', null, undefined, 0, true, {}, [])),
			(mode) => {
				const error = refusal(() => parseImport({ importMode: mode, workflows }));
				const expected =
					mode === undefined || mode === null || (typeof mode === 'string' && mode.trim() === '')
						? 'MERGE'
						: typeof mode === 'string'
							? mode.toUpperCase()
							: null;
				if (expected && ['MERGE', 'REPLACE', 'ACTIVATE'].includes(expected)) {
					assert.equal(error, null);
					assert.equal(parseImport({ importMode: mode, workflows }).importMode, expected);
				} else {
					assert.equal(error?.details.field, 'importMode');
				}
			},
		),
		propertyParams('importMode'),
	);
});

test('array conditions: any values round-trip through import and export, and evaluate() agrees with element-wise equality', () => {
	const scalar = fc.oneof(fc.constant(null), hostileString(8), fc.integer({ min: -5, max: 5 }));
	fc.assert(
		fc.property(
			fc.array(scalar, { maxLength: 5 }),
			fc.array(fc.oneof(hostileString(8), fc.integer({ min: -5, max: 5 })), { maxLength: 5 }),
			(values, tags) => {
				const criterion = { type: 'array', jsonPath: '$.tags', values };
				const [wf] = parseImport({ workflows: [{ ...workflows[0], criterion }] }).workflows;
				assert.deepEqual(exportDefinition(wf).criterion, criterion);
				const got = evaluate(wf.criterion, { tags }, { state: null });
				// reference: every non-null values[i] equals tags[i] as text or number (a number against a numeric text compares numerically)
				const same = (v: unknown, t: unknown) =>
					t !== undefined &&
					(typeof t === 'number' && typeof v === 'string' && /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(v)
						? Number(v) === t
						: String(t) === String(v));
				assert.equal(
					got,
					values.every((v, i) => v === null || same(v, tags[i])),
				);
			},
		),
		propertyParams('array values'),
	);
});

test('processor type: anything but exactly "EXTERNAL" is refused naming its path', () => {
	fc.assert(
		fc.property(
			fc.oneof(hostileString(12), fc.constantFrom<unknown>('EXTERNAL', 'external', 'External', null, 1, {})),
			(type) => {
				const body = {
					workflows: [
						{
							name: 'w',
							initialState: 'A',
							states: {
								A: { transitions: [{ name: 'X', next: 'A', manual: true, processors: [{ type, name: 'p' }] }] },
							},
						},
					],
				};
				const error = refusal(() => parseImport(body));
				if (type === 'EXTERNAL') assert.equal(error, null);
				else assert.equal(error?.details.field, 'workflows.0.states.A.transitions.0.processors.0.type');
			},
		),
		propertyParams('processor type'),
	);
});

test('readAnswer: any sub-workflow output gives { success: boolean }; failure on success === false, or on an error without success === true; error ≤ 500 chars', () => {
	fc.assert(
		fc.property(
			fc.oneof(
				fc.jsonValue(),
				fc.record(
					{
						success: fc.oneof(fc.boolean(), fc.jsonValue()),
						error: fc.oneof(hostileString(600), fc.jsonValue()),
						entity: fc.jsonValue(),
					},
					{ requiredKeys: [] },
				),
			),
			(answer) => {
				const outcome = readAnswer(answer);
				assert.equal(typeof outcome.success, 'boolean');
				const a =
					answer !== null && typeof answer === 'object' && !Array.isArray(answer)
						? (answer as { success?: unknown; error?: unknown })
						: null;
				const hasError = a !== null && a.error !== undefined && a.error !== null && a.error !== '';
				const refused = a !== null && (a.success === false || (a.success !== true && hasError));
				assert.equal(outcome.success, !refused);
				if (outcome.error !== undefined) assert.ok(outcome.error.length <= 500);
				if (outcome.entity !== undefined)
					assert.ok(outcome.entity !== null && typeof outcome.entity === 'object' && !Array.isArray(outcome.entity));
			},
		),
		propertyParams('readAnswer'),
	);
});

test("readAnswer: n8n's continue-on-fail output { error } is a failure; { success: true, error } is not", () => {
	assert.deepEqual(readAnswer({ error: 'node X failed' }), { success: false, error: 'node X failed' });
	assert.equal(readAnswer({ success: true, error: 'ignored' }).success, true);
	assert.equal(readAnswer({ entity: { a: 1 } }).success, true);
});
