/** Step context, the Archivist and the blocking rule of seed 001 on real PostgreSQL. */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { archiveRun } from '../../nodes/PipelineCapture/actions/run/archive.operation';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { buildDraft, loadStepContext } from '../../nodes/PipelineCapture/actions/run/loadStepContext.operation';
import { sweep } from '../../nodes/PipelineCapture/actions/run/sweep.operation';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { ContractError } from '../../nodes/shared/errors';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
const def = shippedDefinition();
beforeAll(async () => {
	db = await setupDatabase();
	await db.pool.query(`INSERT INTO maas.system_prompts (role_name, prompt_template) VALUES
		('Analyzer', 'Classify the query.'), ('Mentor', 'You are a mentor.'), ('Assembler', 'Compress the draft.'), ('Archivist', 'Summarise.')`);
});
afterAll(async () => {
	await db?.drop();
});

async function runThrough(id: string, answer = 'The answer.') {
	const steps = [
		['CAPTURE_ANALYSIS', 'ANALYSIS_DONE', { needs_context: true }],
		['CAPTURE_ASSEMBLY', 'ASSEMBLY_DONE', 'payload'],
		['CAPTURE_RESPONSE', 'RESPONSE_DONE', answer],
	] as const;
	for (const [take, done, result] of steps) {
		const c = await capture(db.pool, def, { run_id: id, transition: take, worker: 'w' });
		assert.ok(c.captured, `${take}: ${c.reason}`);
		await completeStep(db.pool, def, { run_id: id, transition: done, capture_token: c.run.capture_token, result });
	}
}

test('analysis context: the query, the Analyzer prompt, and no LSM yet (the step goes on without it)', async () => {
	const { request_id } = await createRun(db.pool, { user_id: 'ctx-user', query: 'What is CAS?' });
	const ctx = await loadStepContext(db.pool, { run_id: request_id, step: 'analysis' });
	assert.deepEqual([ctx.user_query, ctx.prompt, ctx.lsm], ['What is CAS?', 'Classify the query.', []]);
});

test('the answer is logged (assistant_response); Archive stores the summary once and hands over the next run', async () => {
	const first = await createRun(db.pool, { user_id: 'arch-user', query: 'one' });
	const second = await createRun(db.pool, { user_id: 'arch-user', query: 'two' });
	await runThrough(first.request_id, 'Answer one.');
	const { rows: logs } = await db.pool.query(
		'SELECT message_type, content FROM maas.raw_logs WHERE run_id = $1 ORDER BY id',
		[first.request_id],
	);
	assert.deepEqual(logs, [
		{ message_type: 'user_query', content: 'one' },
		{ message_type: 'assistant_response', content: 'Answer one.' },
	]);
	const blocked = await capture(db.pool, def, {
		run_id: second.request_id,
		transition: 'CAPTURE_ANALYSIS',
		worker: 'w',
	});
	assert.deepEqual([blocked.captured, blocked.reason], [false, 'BLOCKED'], 'the next run waits for signal 2');
	const archived = await archiveRun(db.pool, {
		run_id: first.request_id,
		summary: 'User asked one; answered.',
		tags: 'intro,first',
	});
	assert.equal(archived.next_run_id, second.request_id);
	const { rows: lsm } = await db.pool.query(
		'SELECT user_id, tags, summary, cardinality(raw_log_ids) AS logs FROM maas.lsm_storage WHERE id = $1',
		[archived.lsm_id],
	);
	assert.deepEqual(lsm, [
		{ user_id: 'arch-user', tags: ['intro', 'first'], summary: 'User asked one; answered.', logs: 2 },
	]);
	await assert.rejects(
		archiveRun(db.pool, { run_id: first.request_id, summary: 'again' }),
		(e: ContractError) => e.statusCode === 409 && e.details.code === 'NOT_ARCHIVABLE',
	);
	const unblocked = await capture(db.pool, def, {
		run_id: second.request_id,
		transition: 'CAPTURE_ANALYSIS',
		worker: 'w',
	});
	assert.ok(unblocked.captured);
	const ctx = await loadStepContext(db.pool, { run_id: second.request_id, step: 'analysis' });
	assert.equal((ctx.lsm as unknown[]).length, 1, 'the Analyzer now sees the LSM row');
});

test('assembly context: the four elements in order, history oldest first', async () => {
	const prior = await createRun(db.pool, { user_id: 'asm-user', query: 'earlier question' });
	await runThrough(prior.request_id, 'earlier answer');
	await archiveRun(db.pool, { run_id: prior.request_id, summary: 'Talked about earlier things.' });
	const { request_id } = await createRun(db.pool, { user_id: 'asm-user', query: 'new question' });
	const c = await capture(db.pool, def, { run_id: request_id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	await completeStep(db.pool, def, {
		run_id: request_id,
		transition: 'ANALYSIS_DONE',
		capture_token: c.run.capture_token,
		result: { topic: 'x' },
	});
	const ctx = await loadStepContext(db.pool, { run_id: request_id, step: 'assembly' });
	const draft = String(ctx.draft_context);
	const order = [
		'## Element 1: query\nnew question',
		'[user_query] earlier question',
		'[assistant_response] earlier answer',
		'[analysis] {"topic":"x"}',
		'[memory ] Talked about earlier things.',
		'## Element 3: role\nYou are a mentor.',
		'## Element 4: assembler\nCompress the draft.',
	];
	let at = -1;
	for (const part of order) {
		const i = draft.indexOf(part);
		assert.ok(i > at, `${part} in order in:\n${draft}`);
		at = i;
	}
	assert.equal(ctx.truncated, false);
});

test('buildDraft: over 8000 tokens the history is cut from its oldest end, the rest kept whole', () => {
	const history = Array.from({ length: 2000 }, (_, i) => `line ${i} ${'x'.repeat(20)}`).join('\n');
	const result = buildDraft({ query: 'Q', history, mentor: 'M', assembler: 'A' });
	assert.equal(result.truncated, true);
	assert.ok(result.tokens <= 8000);
	assert.ok(result.draft_context.includes('line 1999'), 'the newest history is kept');
	assert.ok(!result.draft_context.includes('line 0 '), 'the oldest is cut');
	assert.ok(
		result.draft_context.startsWith('## Element 1: query\nQ') &&
			result.draft_context.endsWith('## Element 4: assembler\nA'),
	);
});

test('Sweep re-emits a completed run whose Archivist failed (its user is blocked until it is archived)', async () => {
	const { request_id } = await createRun(db.pool, { user_id: 'sweep-arch', query: 'q' });
	await runThrough(request_id);
	await db.pool.query("UPDATE maas.pipeline_runs SET updated_at = now() - interval '5 minutes' WHERE id = $1", [
		request_id,
	]);
	const before = await sweep(db.pool, def, { stuck_after_seconds: 300, lost_after_seconds: 60, limit: 100 });
	assert.ok(before.waiting.some((w) => w.id === request_id && w.status === 'COMPLETED'));
	await archiveRun(db.pool, { run_id: request_id, summary: 'done' });
	await db.pool.query("UPDATE maas.pipeline_runs SET updated_at = now() - interval '5 minutes' WHERE id = $1", [
		request_id,
	]);
	const after = await sweep(db.pool, def, { stuck_after_seconds: 300, lost_after_seconds: 60, limit: 100 });
	assert.ok(!after.waiting.some((w) => w.id === request_id));
});
