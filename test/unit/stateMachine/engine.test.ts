/** Validation, engine rules and export omissions of seed 004, against their own table of cases. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from '@jest/globals';
import { ContractError } from '../../../nodes/shared/errors';
import {
	availableTransitions,
	cascade,
	exportDefinition,
	fireManual,
	parseImport,
	selectWorkflow,
	validateDefinition,
	WorkflowDefinition,
	type Condition,
	type WorkflowDefinitionInput,
} from '../../../nodes/shared/stateMachine';

const def = (states: WorkflowDefinitionInput['states'], extra: Partial<WorkflowDefinitionInput> = {}) =>
	WorkflowDefinition.parse({ name: 'wf', initialState: Object.keys(states)[0], states, ...extra });

function rejects(fn: () => unknown, pattern: RegExp): ContractError {
	try {
		fn();
	} catch (error) {
		assert.ok(error instanceof ContractError);
		assert.match(error.message, pattern);
		return error;
	}
	assert.fail('expected a ContractError');
}

const always: Condition = { type: 'group', operator: 'AND', conditions: [] };

test('validation: a missing initial state or next state, and a duplicate transition, are named', () => {
	const error = rejects(
		() =>
			validateDefinition(
				def(
					{
						A: {
							transitions: [
								{ name: 'GO', next: 'NOWHERE' },
								{ name: 'GO', next: 'A', manual: true },
							],
						},
					},
					{ initialState: 'START' },
				),
			),
		/initialState START is not a state/,
	);
	assert.equal(error.statusCode, 400);
	assert.deepEqual(error.details.problems, [
		'initialState START is not a state',
		'transition A.GO: next state NOWHERE does not exist',
		'transition A.GO is declared twice',
	]);
});

test('validation: an unguarded automated cycle is rejected with the cycle named', () => {
	const cyclic = def({
		A: { transitions: [{ name: 'AB', next: 'B' }] },
		B: { transitions: [{ name: 'BC', next: 'C' }] },
		C: { transitions: [{ name: 'CB', next: 'B' }] },
	});
	rejects(() => validateDefinition(cyclic), /infinite loop detected: B -> C -> B via unguarded automated transitions/);
});

test('validation: guarded, manual or disabled cycles pass', () => {
	validateDefinition(
		def({
			A: { transitions: [{ name: 'AB', next: 'B', criterion: always }] },
			B: { transitions: [{ name: 'BA', next: 'A' }] },
		}),
	);
	validateDefinition(
		def({
			A: { transitions: [{ name: 'AB', next: 'B', manual: true }] },
			B: { transitions: [{ name: 'BA', next: 'A' }] },
		}),
	);
	validateDefinition(def({ A: { transitions: [{ name: 'AA', next: 'A', disabled: true }] } }));
});

test('import parsing: unknown processor type and mode are refused naming the field', () => {
	const bad = {
		workflows: [
			{
				name: 'w',
				initialState: 'A',
				states: {
					A: { transitions: [{ name: 'X', next: 'A', manual: true, processors: [{ type: 'LOCAL', name: 'p' }] }] },
				},
			},
		],
	};
	const error = rejects(() => parseImport(bad), /workflows\.0\.states\.A\.transitions\.0\.processors\.0\.type/);
	assert.equal(error.details.code, 'VALIDATION_FAILED');
	rejects(() => parseImport({ importMode: 'UPSERT', workflows: bad.workflows }), /importMode/);
});

test('cascade: the first automated transition in declaration order whose criterion matches fires', async () => {
	const wf = def({
		NEW: {
			transitions: [
				{ name: 'MANUAL', next: 'X', manual: true },
				{ name: 'OFF', next: 'X', disabled: true },
				{
					name: 'SMALL',
					next: 'S',
					criterion: { type: 'simple', jsonPath: '$.n', operatorType: 'LESS_THAN', value: 10 },
				},
				{ name: 'ANY', next: 'B' },
			],
		},
		S: {},
		B: {},
		X: {},
	});
	assert.deepEqual(await cascade(wf, 'NEW', { n: 3 }), {
		ok: true,
		state: 'S',
		fired: ['SMALL'],
		warnings: [],
		entity: { n: 3 },
	});
	assert.deepEqual(await cascade(wf, 'NEW', { n: 30 }), {
		ok: true,
		state: 'B',
		fired: ['ANY'],
		warnings: [],
		entity: { n: 30 },
	});
});

test('cascade: the 11th visit of a state aborts it with the reason; nothing applied (guarded loop)', async () => {
	const wf = def({
		A: { transitions: [{ name: 'AB', next: 'B', criterion: always }] },
		B: { transitions: [{ name: 'BA', next: 'A', criterion: always }] },
	});
	const result = await cascade(wf, 'A', {});
	assert.deepEqual(
		[result.ok, result.state, result.fired, result.code, result.stoppedAt],
		[false, 'A', [], 'CASCADE_LIMIT', 'B'],
	);
	assert.equal(result.attempted!.length, 19, 'A counted once at the start: A×10, B×10 → 19 transitions attempted');
	assert.match(result.reason!, /state A visited more than 10 times/);
});

test('cascade: the 100th automated transition ends it (a chain of 150 states)', async () => {
	const states: WorkflowDefinitionInput['states'] = {};
	for (let i = 0; i < 150; i++) states[`S${i}`] = { transitions: [{ name: `T${i}`, next: `S${i + 1}` }] };
	states.S150 = {};
	const result = await cascade(def(states), 'S0', {});
	assert.deepEqual(
		[result.ok, result.state, result.fired, result.stoppedAt, result.attempted!.length],
		[false, 'S0', [], 'S99', 99],
	);
	assert.match(result.reason!, /cascade depth limit 100/);
});

test('manual: unknown → 404 with the available transitions, disabled → 409, criterion not met → 409', async () => {
	const wf = def({
		A: {
			transitions: [
				{
					name: 'GO',
					next: 'B',
					manual: true,
					criterion: { type: 'simple', jsonPath: '$.ok', operatorType: 'EQUALS', value: true },
				},
				{ name: 'OFF', next: 'B', manual: true, disabled: true },
				{ name: 'FAIL', next: 'B', manual: true },
			],
		},
		B: {},
	});
	await assert.rejects(
		fireManual(wf, 'A', 'JUMP', {}),
		(e: ContractError) =>
			e.statusCode === 404 &&
			e.details.code === 'TRANSITION_NOT_FOUND' &&
			(e.details.available as string[]).join() === 'FAIL',
	);
	await assert.rejects(
		fireManual(wf, 'A', 'OFF', {}),
		(e: ContractError) => e.statusCode === 409 && e.details.code === 'TRANSITION_DISABLED',
	);
	await assert.rejects(
		fireManual(wf, 'A', 'GO', { ok: false }),
		(e: ContractError) => e.statusCode === 409 && e.details.code === 'CRITERION_NOT_MET',
	);
	assert.deepEqual(await fireManual(wf, 'A', 'GO', { ok: true }), {
		ok: true,
		state: 'B',
		fired: ['GO'],
		warnings: [],
		entity: { ok: true },
	});
	assert.deepEqual(availableTransitions(wf, 'A', { ok: true }), ['GO', 'FAIL']);
});

test('processors: a SYNC failure aborts the whole operation (state before it); ASYNC_NEW_TX failures are warnings', async () => {
	const processor = (name: string, executionMode: string) => ({
		type: 'EXTERNAL' as const,
		name,
		executionMode,
		config: {},
	});
	const wf = def({
		A: { transitions: [{ name: 'AB', next: 'B', processors: [processor('soft', 'ASYNC_NEW_TX')] }] },
		B: { transitions: [{ name: 'BC', next: 'C', processors: [processor('hard', 'SYNC')] }] },
		C: {},
	});
	const result = await cascade(
		wf,
		'A',
		{},
		{},
		{
			runProcessor: async (p) => {
				if (p.name) throw new Error(`${p.name} down`);
			},
		},
	);
	assert.deepEqual(result, {
		ok: false,
		state: 'A',
		fired: [],
		warnings: ['processor soft failed: soft down'],
		entity: {},
		reason: 'processor hard failed: hard down',
		code: 'WORKFLOW_FAILED',
		stoppedAt: 'B',
		attempted: ['AB'],
	});
});

test('selectWorkflow: the first active workflow whose criterion matches', () => {
	const a = def(
		{ A: {} },
		{ name: 'a', criterion: { type: 'simple', jsonPath: '$.kind', operatorType: 'EQUALS', value: 'x' } },
	);
	const b = def({ A: {} }, { name: 'b', active: false });
	const c = def({ A: {} }, { name: 'c' });
	assert.equal(selectWorkflow([a, b, c], { kind: 'x' })?.name, 'a');
	assert.equal(selectWorkflow([a, b, c], { kind: 'y' })?.name, 'c');
});

test('export omits disabled=false, empty processors, null criteria, empty desc; a state without transitions is {}', () => {
	const wf = def({
		A: {
			transitions: [
				{ name: 'GO', next: 'B', manual: true },
				{ name: 'OFF', next: 'B', disabled: true, criterion: always },
			],
		},
		B: { transitions: [] },
	});
	assert.deepEqual(exportDefinition(wf), {
		version: '1',
		name: 'wf',
		initialState: 'A',
		active: true,
		states: {
			A: {
				transitions: [
					{ name: 'GO', next: 'B', manual: true },
					{ name: 'OFF', next: 'B', manual: false, disabled: true, criterion: always },
				],
			},
			B: {},
		},
	});
});

test('the shipped pipeline_runs definition: valid, NEW → … → COMPLETED by its manual transitions, FAIL from every non-terminal state', async () => {
	const file = path.join(__dirname, '..', '..', '..', 'db', 'state-machines', 'pipeline_runs.json');
	const [wf] = parseImport(JSON.parse(readFileSync(file, 'utf8'))).workflows;
	validateDefinition(wf);
	let state = wf.initialState;
	for (const step of [
		'CAPTURE_ANALYSIS',
		'ANALYSIS_DONE',
		'CAPTURE_ASSEMBLY',
		'ASSEMBLY_DONE',
		'CAPTURE_RESPONSE',
		'RESPONSE_DONE',
	]) {
		state = (await fireManual(wf, state, step, {})).state;
	}
	assert.equal(state, 'COMPLETED');
	for (const s of Object.keys(wf.states)) {
		const terminal = s === 'COMPLETED' || s === 'FAILED';
		assert.equal(availableTransitions(wf, s, {}).includes('FAIL'), !terminal, s);
	}
	await assert.rejects(
		fireManual(wf, 'NEW', 'ANALYSIS_DONE', {}),
		(e: ContractError) => e.statusCode === 404 && (e.details.available as string[]).join() === 'CAPTURE_ANALYSIS,FAIL',
	);
});

test("array conditions: the format's `values` is accepted at import and exported as written; a lone legacy `value` is read as `values`", () => {
	const wf = (criterion: unknown) => ({ workflows: [{ name: 'w', initialState: 'A', criterion, states: { A: {} } }] });
	const plural = parseImport(wf({ type: 'array', jsonPath: '$.tags', values: ['physics', null] })).workflows[0];
	assert.deepEqual(exportDefinition(plural).criterion, {
		type: 'array',
		jsonPath: '$.tags',
		values: ['physics', null],
	});
	const legacy = parseImport(wf({ type: 'array', jsonPath: '$.tags', value: ['physics'] })).workflows[0];
	assert.deepEqual(exportDefinition(legacy).criterion, { type: 'array', jsonPath: '$.tags', values: ['physics'] });
	const both = rejects(
		() => parseImport(wf({ type: 'array', jsonPath: '$.tags', values: ['a'], value: ['b'] })),
		/workflows\.0\.criterion\.value/,
	);
	assert.equal(both.details.code, 'VALIDATION_FAILED');
	rejects(() => parseImport(wf({ type: 'array', jsonPath: '$.tags' })), /workflows\.0\.criterion\.values Required/);
});

test('importMode: case-insensitive; absent, null and "" are MERGE; anything else is refused naming importMode', () => {
	const workflows = [{ name: 'w', initialState: 'A', states: { A: {} } }];
	for (const [given, expected] of [
		['merge', 'MERGE'],
		['Replace', 'REPLACE'],
		['aCtIvAtE', 'ACTIVATE'],
		['', 'MERGE'],
		[undefined, 'MERGE'],
		[null, 'MERGE'],
	] as const) {
		assert.equal(
			parseImport({ importMode: given, workflows }).importMode,
			expected,
			`importMode ${JSON.stringify(given)}`,
		);
	}
	for (const bad of ['UPSERT', 'MERGE!', 3, true]) {
		const error = rejects(() => parseImport({ importMode: bad, workflows }), /importMode/);
		assert.deepEqual(
			[error.statusCode, error.details.code, error.details.field],
			[400, 'VALIDATION_FAILED', 'importMode'],
		);
	}
});

test('processor type: only EXTERNAL (exact) is accepted; others are VALIDATION_FAILED naming the path', () => {
	const body = (type: unknown) => ({
		workflows: [
			{
				name: 'w',
				initialState: 'A',
				states: { A: { transitions: [{ name: 'X', next: 'A', manual: true, processors: [{ type, name: 'p' }] }] } },
			},
		],
	});
	assert.equal(parseImport(body('EXTERNAL')).workflows[0].states.A.transitions[0].processors[0].type, 'EXTERNAL');
	for (const type of ['external', 'INTERNAL', '', null, undefined, 1]) {
		const error = rejects(() => parseImport(body(type)), /processors\.0\.type/);
		assert.deepEqual(
			[error.statusCode, error.details.code, error.details.field],
			[400, 'VALIDATION_FAILED', 'workflows.0.states.A.transitions.0.processors.0.type'],
		);
	}
});
