/** WorkflowDefinition import/export in real PostgreSQL (seed 004 MERGE / REPLACE / ACTIVATE, 404 export). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { ContractError } from '../../nodes/shared/errors';
import { exportWorkflows, importWorkflows, loadWorkflows } from '../../nodes/shared/stateMachine';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

const wf = (name: string, extra: Record<string, unknown> = {}) => ({
	version: '1',
	name,
	initialState: 'A',
	active: false,
	states: { A: { transitions: [{ name: 'GO', next: 'B', manual: true }] }, B: {} },
	...extra,
});
const state = async (model: string) =>
	(await loadWorkflows(db.pool, { model, modelVersion: 1 })).map((w) => `${w.name}:${w.active}`);

test('MERGE overwrites by name and keeps the others; every import is stored active', async () => {
	const ref = { model: 'merge-model', modelVersion: 1 };
	await importWorkflows(db.pool, ref, { workflows: [wf('a'), wf('b')] });
	await importWorkflows(db.pool, ref, { importMode: 'MERGE', workflows: [wf('b', { desc: 'v2' }), wf('c')] });
	assert.deepEqual(await state('merge-model'), ['a:true', 'b:true', 'c:true']);
	const b = (await loadWorkflows(db.pool, ref)).find((w) => w.name === 'b')!;
	assert.equal(b.desc, 'v2');
});

test('REPLACE discards every existing workflow of the model', async () => {
	const ref = { model: 'replace-model', modelVersion: 1 };
	await importWorkflows(db.pool, ref, { workflows: [wf('a'), wf('b')] });
	await importWorkflows(db.pool, ref, { importMode: 'REPLACE', workflows: [wf('c')] });
	assert.deepEqual(await state('replace-model'), ['c:true']);
});

test('ACTIVATE replaces same-named ones and deactivates the rest', async () => {
	const ref = { model: 'activate-model', modelVersion: 1 };
	await importWorkflows(db.pool, ref, { workflows: [wf('a'), wf('b')] });
	await importWorkflows(db.pool, ref, { importMode: 'ACTIVATE', workflows: [wf('b')] });
	assert.deepEqual(await state('activate-model'), ['a:false', 'b:true']);
});

test('an invalid import (unguarded cycle) is refused with 400 and writes nothing', async () => {
	const ref = { model: 'invalid-model', modelVersion: 1 };
	await importWorkflows(db.pool, ref, { workflows: [wf('keep')] });
	const cyclic = { name: 'loop', initialState: 'A', states: { A: { transitions: [{ name: 'AA', next: 'A' }] } } };
	await assert.rejects(
		importWorkflows(db.pool, ref, { importMode: 'REPLACE', workflows: [cyclic] }),
		(e: ContractError) => {
			assert.equal(e.statusCode, 400);
			assert.match(e.message, /infinite loop detected: A -> A/);
			return true;
		},
	);
	assert.deepEqual(await state('invalid-model'), ['keep:true']);
});

test('export: 404 WORKFLOW_NOT_FOUND for an unknown model; the shipped pipeline definition round-trips with omissions', async () => {
	await assert.rejects(
		exportWorkflows(db.pool, { model: 'nothing', modelVersion: 1 }),
		(e: ContractError) => e.statusCode === 404 && e.details.code === 'WORKFLOW_NOT_FOUND',
	);
	const body = JSON.parse(
		readFileSync(path.join(__dirname, '..', '..', 'db', 'state-machines', 'pipeline_runs.json'), 'utf8'),
	);
	const ref = { model: 'pipeline_runs', modelVersion: 1 };
	await importWorkflows(db.pool, ref, body);
	const exported = (await exportWorkflows(db.pool, ref)) as {
		entityName: string;
		workflows: Record<string, unknown>[];
	};
	assert.equal(exported.entityName, 'pipeline_runs');
	assert.deepEqual(exported.workflows, body.workflows, 'the shipped file is already in export form');
});

test('import modes in any case: "replace" replaces, "Activate" activates, "" merges', async () => {
	const ref = { model: 'case-model', modelVersion: 1 };
	await importWorkflows(db.pool, ref, { importMode: 'merge', workflows: [wf('a'), wf('b')] });
	await importWorkflows(db.pool, ref, { importMode: '', workflows: [wf('c')] });
	assert.deepEqual(await state('case-model'), ['a:true', 'b:true', 'c:true']);
	await importWorkflows(db.pool, ref, { importMode: 'Activate', workflows: [wf('b')] });
	assert.deepEqual(await state('case-model'), ['a:false', 'b:true', 'c:false']);
	await importWorkflows(db.pool, ref, { importMode: 'replace', workflows: [wf('d')] });
	assert.deepEqual(await state('case-model'), ['d:true']);
});

test('the seed-004 table (fixtures) through PostgreSQL: each import exported as the seed writes it', async () => {
	const table = JSON.parse(
		readFileSync(path.join(__dirname, '..', 'fixtures', 'stateMachine', 'seed004-table.json'), 'utf8'),
	) as {
		accepted: { import: unknown; export: Record<string, unknown> }[];
	};
	for (const [i, c] of table.accepted.entries()) {
		const ref = { model: `table-${i}`, modelVersion: 1 };
		await importWorkflows(db.pool, ref, c.import);
		assert.deepEqual(await exportWorkflows(db.pool, ref), {
			entityName: ref.model,
			modelVersion: 1,
			workflows: [c.export],
		});
	}
});

test('an array condition stored with our earlier singular `value` still loads, and exports as `values`', async () => {
	const ref = { model: 'legacy-array', modelVersion: 1 };
	const legacy = { ...wf('old'), active: true, criterion: { type: 'array', jsonPath: '$.tags', value: ['x', null] } };
	await db.pool.query(
		`INSERT INTO ops.workflow_definitions (model, model_version, name, position, active, definition) VALUES ($1, 1, 'old', 1, true, $2)`,
		[ref.model, JSON.stringify(legacy)],
	);
	const exported = (await exportWorkflows(db.pool, ref)) as { workflows: { criterion: unknown }[] };
	assert.deepEqual(exported.workflows[0].criterion, { type: 'array', jsonPath: '$.tags', values: ['x', null] });
});
