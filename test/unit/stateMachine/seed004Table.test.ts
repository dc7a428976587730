/**
 * A table of definitions written in seed 004's own JSON (test/fixtures/stateMachine/seed004-table.json):
 * each is imported, exported (against the export worked out by hand from the seed's omission rules),
 * re-imported from its export, and run through the engine with the EXTERNAL processor dispatcher
 * (processors.ts) over a fake sub-workflow caller. Refused imports name the offending field.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { jest, test } from '@jest/globals';
import type { Config } from '@jest/types';
import { ContractError } from '../../../nodes/shared/errors';
import {
	cascade,
	exportDefinition,
	externalProcessorRunner,
	fireManual,
	parseImport,
	validateDefinition,
	type ProcessorRequest,
} from '../../../nodes/shared/stateMachine';

/** A processor timeout is driven by faking only setTimeout / clearTimeout (promises and I/O stay real). */
const FAKE_ONLY_SET_TIMEOUT: Config.FakeableAPI[] = [
	'Date',
	'hrtime',
	'nextTick',
	'performance',
	'queueMicrotask',
	'requestAnimationFrame',
	'cancelAnimationFrame',
	'requestIdleCallback',
	'cancelIdleCallback',
	'setImmediate',
	'clearImmediate',
	'setInterval',
	'clearInterval',
];

interface Run {
	entity: Record<string, unknown>;
	from?: string;
	manual?: string;
	processors?: Record<string, 'ok' | 'fail' | 'throw' | 'timeout'>;
	expect: { ok: boolean; state: string; fired: string[]; warnings?: number };
}
interface Accepted {
	name: string;
	import: unknown;
	export: Record<string, unknown>;
	runs: Run[];
}
const table = JSON.parse(
	readFileSync(path.join(__dirname, '..', '..', 'fixtures', 'stateMachine', 'seed004-table.json'), 'utf8'),
) as {
	accepted: Accepted[];
	refused: { name: string; import: unknown; field: string }[];
};

/** Every sub-workflow declares the tag named after one processor, plus a shared "any" tag. */
function fakeCaller(answers: Run['processors'] = {}, calls: { workflowId: string; request: ProcessorRequest }[] = []) {
	return (workflowId: string, request: ProcessorRequest): Promise<unknown> => {
		calls.push({ workflowId, request });
		const answer = answers[request.processor.name] ?? 'ok';
		if (answer === 'throw') return Promise.reject(new Error('sub-workflow crashed'));
		if (answer === 'timeout') return new Promise(() => undefined);
		return Promise.resolve(answer === 'ok' ? { success: true } : { success: false, error: 'refused' });
	};
}
const nodes = [
	{ workflowId: 'wf-approval', tags: ['approval-service', 'any'] },
	{ workflowId: 'wf-audit', tags: ['audit'] },
];

for (const c of table.accepted) {
	test(`seed-004 table: ${c.name} — imports, exports by the seed's omission rules, round-trips`, () => {
		const { workflows } = parseImport(c.import);
		assert.equal(workflows.length, 1);
		validateDefinition(workflows[0]);
		assert.deepEqual(exportDefinition(workflows[0]), c.export);
		const again = parseImport({ workflows: [c.export] }).workflows[0];
		assert.deepEqual(exportDefinition(again), c.export, 'the export imports back to the same definition');
	});
	c.runs.forEach((run, i) => {
		test(`seed-004 table: ${c.name} — run ${i + 1} (${run.manual ?? 'cascade'} on ${JSON.stringify(run.entity)}, processors ${JSON.stringify(run.processors ?? {})})`, async () => {
			const [wf] = parseImport(c.import).workflows;
			const calls: { workflowId: string; request: ProcessorRequest }[] = [];
			const runProcessor = externalProcessorRunner(nodes, fakeCaller(run.processors, calls));
			const from = run.from ?? wf.initialState;
			const timesOut = Object.values(run.processors ?? {}).includes('timeout');
			if (timesOut) jest.useFakeTimers({ doNotFake: FAKE_ONLY_SET_TIMEOUT });
			try {
				const pending = run.manual
					? fireManual(wf, from, run.manual, run.entity, {}, { runProcessor })
					: cascade(wf, from, run.entity, {}, { runProcessor });
				if (timesOut) jest.advanceTimersByTime(30_000);
				const result = await pending;
				assert.deepEqual([result.ok, result.state, result.fired], [run.expect.ok, run.expect.state, run.expect.fired]);
				assert.equal(result.warnings.length, run.expect.warnings ?? 0);
				if (!result.ok) {
					assert.equal(result.code, 'WORKFLOW_FAILED');
					assert.deepEqual(result.entity, run.entity, 'an abort reports the entity as it was');
				}
				for (const call of calls) {
					const processor = Object.values(wf.states)
						.flatMap((s) => s.transitions.flatMap((t) => t.processors))
						.find((p) => p.name === call.request.processor.name)!;
					assert.equal(
						'entity' in call.request,
						processor.config.attachEntity === true,
						'entity attached exactly when attachEntity',
					);
					if (processor.config.attachEntity) assert.deepEqual(call.request.entity, run.entity);
				}
			} finally {
				if (timesOut) jest.useRealTimers();
			}
		});
	});
}

for (const r of table.refused) {
	test(`seed-004 table: refused — ${r.name} → 400 VALIDATION_FAILED naming ${r.field}`, () => {
		assert.throws(
			() => parseImport(r.import),
			(e: ContractError) =>
				e instanceof ContractError &&
				e.statusCode === 400 &&
				e.details.code === 'VALIDATION_FAILED' &&
				e.details.field === r.field,
		);
	});
}

test('dispatch: the first sub-workflow declaring ALL the tags; none → NO_COMPUTE_MEMBER_FOR_TAG (SYNC aborts, ASYNC_NEW_TX warns)', async () => {
	const wf = parseImport({
		workflows: [
			{
				name: 'route',
				initialState: 'A',
				states: {
					A: {
						transitions: [
							{
								name: 'GO',
								next: 'B',
								manual: true,
								processors: [
									{
										type: 'EXTERNAL',
										name: 'p',
										executionMode: 'SYNC',
										config: { calculationNodesTags: ' approval-service , any ' },
									},
								],
							},
						],
					},
					B: {
						transitions: [
							{
								name: 'ON',
								next: 'C',
								processors: [
									{
										type: 'EXTERNAL',
										name: 'q',
										executionMode: 'ASYNC_NEW_TX',
										config: { calculationNodesTags: 'audit,any' },
									},
								],
							},
						],
					},
					C: {},
				},
			},
		],
	}).workflows[0];
	const calls: { workflowId: string; request: ProcessorRequest }[] = [];
	const result = await fireManual(
		wf,
		'A',
		'GO',
		{ x: 1 },
		{},
		{ runProcessor: externalProcessorRunner(nodes, fakeCaller({}, calls)) },
	);
	assert.deepEqual([result.ok, result.state, result.fired], [true, 'C', ['GO', 'ON']]);
	assert.deepEqual(
		calls.map((c) => c.workflowId),
		['wf-approval'],
		'audit+any is declared by no single node',
	);
	assert.match(result.warnings[0], /no calculation node \(sub-workflow\) declares the tags \[audit, any\]/);
	assert.deepEqual(calls[0].request, {
		processor: { name: 'p', executionMode: 'SYNC', context: '', tags: ['approval-service', 'any'] },
		transition: { name: 'GO', next: 'B' },
	});
	const none = await fireManual(
		wf,
		'A',
		'GO',
		{},
		{},
		{ runProcessor: externalProcessorRunner([{ workflowId: 'x', tags: ['other'] }], fakeCaller()) },
	);
	assert.deepEqual([none.ok, none.state, none.code], [false, 'A', 'NO_COMPUTE_MEMBER_FOR_TAG']);
});

test('dispatch: SYNC changes to the entity are applied for what follows; ASYNC_NEW_TX changes are discarded', async () => {
	const wf = parseImport({
		workflows: [
			{
				name: 'changes',
				initialState: 'A',
				states: {
					A: {
						transitions: [
							{
								name: 'GO',
								next: 'B',
								manual: true,
								processors: [
									{
										type: 'EXTERNAL',
										name: 'sync',
										executionMode: 'SYNC',
										config: { calculationNodesTags: 'any', attachEntity: true },
									},
									{
										type: 'EXTERNAL',
										name: 'async',
										executionMode: 'ASYNC_NEW_TX',
										config: { calculationNodesTags: 'any', attachEntity: true },
									},
								],
							},
						],
					},
					B: {
						transitions: [
							{
								name: 'BIG',
								next: 'C',
								criterion: { type: 'simple', jsonPath: '$.n', operatorType: 'GREATER_THAN', value: 5 },
							},
						],
					},
					C: {},
				},
			},
		],
	}).workflows[0];
	const seen: unknown[] = [];
	const call = async (_id: string, request: ProcessorRequest) => {
		seen.push(request.entity);
		return request.processor.name === 'sync'
			? { success: true, entity: { n: 10 } }
			: { success: true, entity: { n: 0 } };
	};
	const result = await fireManual(wf, 'A', 'GO', { n: 1 }, {}, { runProcessor: externalProcessorRunner(nodes, call) });
	assert.deepEqual(seen, [{ n: 1 }, { n: 10 }]);
	assert.deepEqual([result.ok, result.state, result.fired, result.entity], [true, 'C', ['GO', 'BIG'], { n: 10 }]);
});

test('a responseTimeoutMs beyond what setTimeout can wait (2^31 − 1 ms) is clamped, not fired after 1 ms', async () => {
	const run = externalProcessorRunner(
		[{ workflowId: 'calc', tags: ['t'] }],
		() => new Promise((resolve) => setTimeout(() => resolve({ success: true }), 30)),
	);
	const processor = {
		type: 'EXTERNAL',
		name: 'slowish',
		executionMode: 'SYNC',
		config: { calculationNodesTags: 't', responseTimeoutMs: 3_000_000_000 },
	};
	const outcome = await run(processor as never, { name: 'GO', next: 'B', manual: true, disabled: false } as never, {});
	assert.equal((outcome as { success?: boolean }).success, true);
});
