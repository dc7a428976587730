import assert from 'node:assert/strict';
import { afterEach, test } from '@jest/globals';
import { loadContext, renderPrompt } from '../../../nodes/ArangoCas/actions/analysis/loadContext.operation';
import { classifyAiError, saveError } from '../../../nodes/ArangoCas/actions/analysis/saveError.operation';
import { saveResult } from '../../../nodes/ArangoCas/actions/analysis/saveResult.operation';
import { ArangoStub } from '../../helpers/arangoHttp';
import { assertQueriesSafe, failure, RUN } from '../../helpers/arangoOps';

afterEach(() => ArangoStub.reset());

const PROMPT = {
	_id: 'prompts/fixer_v2',
	role_key: 'fixer',
	version: 2,
	active: true,
	template: 'Fix this: {{content}}\nKnown issues:\n{{issues_context}}',
	model_config: { model: 'llama3', temperature: 0.2, response_format: 'json' },
};

test('Load Context: one read query; fills the template with the atom text and the fixer issues', async () => {
	const issues = [
		{ severity: 'high', description: 'Ambiguous' },
		{ severity: 'low', description: 'Typo' },
	];
	const stub = new ArangoStub().cursor([
		{
			outcome: 'OK',
			atom_exists: true,
			prompt_exists: true,
			atom_text: 'The system shall…',
			prompt: PROMPT,
			issues_context: issues,
		},
	]);
	const result = await loadContext.execute(
		stub.database(),
		{ target_atom_id: 'a1', agent_role_key: 'fixer', user_id: 'alice' },
		RUN,
	);
	assert.deepEqual(result.data, {
		model: 'llama3',
		temperature: 0.2,
		prompt: 'Fix this: The system shall…\nKnown issues:\n- [HIGH] Ambiguous\n- [LOW] Typo',
		response_format: 'json',
		prompt_id: 'prompts/fixer_v2',
		target_atom_id: 'a1',
		request_id: '4711',
		issues_context: issues,
		requested_by: 'alice',
	});
	const [q] = stub.queries();
	assert.deepEqual(q.bindVars, { target_key: 'a1', agent_role_key: 'fixer' });
	assert.match(q.query, /INBOUND CONCAT\("atoms\/", @target_key\) semantic_links/);
	assert.doesNotMatch(q.query, /INSERT|UPDATE|REMOVE/);
	assertQueriesSafe(stub);
});

test('renderPrompt: without issues {{issues_context}} is left as is (seed §3.1 step 2)', () => {
	assert.equal(renderPrompt('A {{content}} B {{issues_context}}', 'x', []), 'A x B {{issues_context}}');
});

test('Load Context: no active prompt for the role → 404 naming it; unknown atom → 404 naming it', async () => {
	const stub = new ArangoStub()
		.cursor([{ outcome: 'NOT_FOUND', atom_exists: true, prompt_exists: false }])
		.cursor([{ outcome: 'NOT_FOUND', atom_exists: false, prompt_exists: true }]);
	const db = stub.database();
	const noPrompt = await failure(loadContext, db, {
		target_atom_id: 'a1',
		agent_role_key: 'tech_lead',
		user_id: 'alice',
	});
	assert.deepEqual([noPrompt.statusCode, noPrompt.details.missing], [404, ['prompts?role_key=tech_lead']]);
	const noAtom = await failure(loadContext, db, {
		target_atom_id: 'a1',
		agent_role_key: 'tech_lead',
		user_id: 'alice',
	});
	assert.deepEqual(noAtom.details.missing, ['atoms/a1']);
	assert.equal(noAtom.where.collection, 'atoms');
});

test("Save Result: the model's JSON text becomes one query inserting artifacts + both edges per issue; 201", async () => {
	const stub = new ArangoStub().cursor(
		[{ outcome: 'OK', atom_exists: true, prompt_exists: true, artifact_ids: ['artifacts/i1', 'artifacts/i2'] }],
		{ writesExecuted: 6 },
	);
	const aiResponse = JSON.stringify({
		issues: [
			{ description: 'Ambiguous', severity: 'high', line: 3 },
			{ description: 'Typo', severity: 'low' },
		],
	});
	const result = await saveResult.execute(
		stub.database(),
		{
			target_atom_id: 'a1',
			prompt_id: 'prompts/fixer_v2',
			model: 'llama3',
			request_id: 4711,
			ai_response: aiResponse,
			user_id: 'alice',
		},
		RUN,
	);
	assert.deepEqual(result, {
		statusCode: 201,
		data: { success: true, artifacts_created: 2, artifact_ids: ['artifacts/i1', 'artifacts/i2'] },
	});
	const [q] = stub.queries();
	assert.deepEqual(q.bindVars, {
		target_key: 'a1',
		prompt_key: 'fixer_v2',
		model: 'llama3',
		request_id: '4711',
		user_id: 'alice',
		issues: [
			{ description: 'Ambiguous', severity: 'high' },
			{ description: 'Typo', severity: 'low' },
		],
	});
	assert.match(q.query, /type: "detected_in"[\s\S]*type: "created_with"/);
	// issue 25: the artifact and both edges name who asked for the analysis
	assert.equal(q.query.match(/created_by: @user_id/g)?.length, 3);
	assertQueriesSafe(stub);
});

test('Save Result: an answer that is not JSON, or has no issues, → 422 INVALID_JSON and nothing is sent', async () => {
	const stub = new ArangoStub();
	const base = { target_atom_id: 'a1', prompt_id: 'prompts/p1', user_id: 'alice' };
	const notJson = await failure(saveResult, stub.database(), { ...base, ai_response: 'Sure! Here are the issues:' });
	assert.deepEqual(
		[notJson.statusCode, notJson.details.code, notJson.details.field],
		[422, 'INVALID_JSON', 'ai_response'],
	);
	assert.match(notJson.message, /invalid JSON/);
	const noIssues = await failure(saveResult, stub.database(), { ...base, ai_response: { summary: 'fine' } });
	assert.equal(noIssues.details.field, 'ai_response.issues');
	assert.equal(stub.requests.length, 0);
});

test('classifyAiError: the seed 000 5b table', () => {
	assert.equal(classifyAiError(null, null, 'timeout of 60000ms exceeded'), 'TIMEOUT');
	assert.equal(classifyAiError(500, 'model crashed', null), 'MODEL_ERROR');
	assert.equal(classifyAiError(503, 'invalid json', null), 'MODEL_ERROR');
	assert.equal(classifyAiError(200, 'Error: Invalid JSON in output', null), 'INVALID_JSON');
	assert.equal(classifyAiError(200, null, 'invalid JSON in ai_response: Unexpected token'), 'INVALID_JSON');
	assert.equal(classifyAiError(404, 'not found', null), 'NETWORK_ERROR');
});

test('Save Error: no answer → TIMEOUT artifact, failed_for + created_with edges in one query; 201', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'OK', error_artifact_id: 'artifacts/e1' }], { writesExecuted: 3 });
	const result = await saveError.execute(
		stub.database(),
		{
			target_atom_id: 'a1',
			prompt_id: 'prompts/p1',
			model: 'llama3',
			temperature: '0.2',
			request_id: '4711',
			status_code: '',
			error_message: 'timeout of 60000ms exceeded',
			user_id: 'alice',
		},
		RUN,
	);
	assert.deepEqual(result, {
		statusCode: 201,
		data: { success: false, error_code: 'TIMEOUT', error_artifact_id: 'artifacts/e1', target_missing: false },
	});
	const [q] = stub.queries();
	assert.deepEqual(q.bindVars, {
		target_key: 'a1',
		prompt_key: 'p1',
		error_code: 'TIMEOUT',
		error_message: 'timeout of 60000ms exceeded',
		model: 'llama3',
		temperature: 0.2,
		timeout_seconds: 60,
		request_id: '4711',
		status_code: null,
		response_text: null,
		user_id: 'alice',
	});
	assert.match(q.query, /type: "ai_error"[\s\S]*type: "failed_for"[\s\S]*type: "created_with"/);
	assert.equal(q.query.match(/created_by: @user_id/g)?.length, 3, 'the artifact and both edges name the user');
	assertQueriesSafe(stub);
});

test('Save Error: an unknown atom keeps the AI error: the artifact is written (target named, no failed_for edge), 201 target_missing', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'OK', target_missing: true, error_artifact_id: 'artifacts/e2' }], {
		writesExecuted: 1,
	});
	const result = await saveError.execute(
		stub.database(),
		{ target_atom_id: 'gone', status_code: 502, user_id: 'alice' },
		RUN,
	);
	assert.deepEqual(result, {
		statusCode: 201,
		data: { success: false, error_code: 'MODEL_ERROR', error_artifact_id: 'artifacts/e2', target_missing: true },
	});
	const [q] = stub.queries();
	assert.match(q.query, /FOR x IN \[1\]\s+INSERT \{\s+type: "ai_error"/, 'the artifact does not depend on the atom');
	assert.match(q.query, /target_missing: atom == null/);
	assert.match(q.query, /target_atom_id: CONCAT\("atoms\/", @target_key\)/);
	assert.match(
		q.query,
		/\(error_artifact == null OR atom == null\) \? \[\] : \[error_artifact\]\)\s+INSERT \{ _from: a\._id, _to: atom\._id, type: "failed_for"/,
		'no edge to a missing atom',
	);
	assertQueriesSafe(stub);
});

test('Save Error: no artifact written (never expected) → 500 NO_RESULT; a status outside 100–599 → 422', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'NOT_FOUND', error_artifact_id: null }]);
	const missing = await failure(saveError, stub.database(), {
		target_atom_id: 'a1',
		status_code: 502,
		user_id: 'alice',
	});
	assert.deepEqual([missing.statusCode, missing.details.code], [500, 'NO_RESULT']);
	const bad = await failure(saveError, stub.database(), { target_atom_id: 'a1', status_code: 'abc', user_id: 'alice' });
	assert.deepEqual([bad.statusCode, bad.details.field], [422, 'status_code']);
});
