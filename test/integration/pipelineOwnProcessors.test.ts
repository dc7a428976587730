/**
 * Issue 26 item 2: the processors of FAIL (Fail), RELEASE (the Sweep) and ARCHIVE (Archive) run as seed 004
 * says, like Complete Step's: before the write, with no transaction or row lock held, then one
 * compare-and-set on what was read. SYNC succeeding: the transition is done and the processor's side
 * effect counted once; SYNC failing: the transition is refused (400 WORKFLOW_FAILED for Fail / Archive,
 * "refused" for the Sweep) and the run left as it was; ASYNC_NEW_TX failing: a warning returned and
 * recorded in ops.errors, the transition done. A Fail, a Sweep and an Archive whose reply is lost after
 * their COMMIT are retried: the retry is answered as the first call (replayed / nothing more to release),
 * its processor not run again. Real PostgreSQL (a TCP proxy for the lost
 * reply); the processors are in-process stand-ins that count their runs.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Client, type Pool } from 'pg';
import {
	archiveRun,
	capture,
	completeStep,
	createRun,
	failRun,
	sweep,
} from '../../nodes/PipelineCapture/actions/run/runs';
import { shippedDefinition } from '../../nodes/PipelineCapture/engine/definition';
import { ContractError } from '../../nodes/shared/errors';
import { WorkflowDefinition } from '../../nodes/shared/stateMachine';
import type { TestDatabase } from '../helpers/db';
import { closeProxiedDatabase, setupProxiedDatabase } from '../helpers/proxiedDatabase';
import type { TcpProxy } from '../helpers/tcpProxy';

let db: TestDatabase;
let proxy: TcpProxy;
let proxied: Pool;
beforeAll(async () => {
	({ db, proxy, proxied } = await setupProxiedDatabase());
});
afterAll(() => closeProxiedDatabase({ db, proxy, proxied }));

const plain = shippedDefinition();
type Mode = 'SYNC' | 'ASYNC_SAME_TX' | 'ASYNC_NEW_TX';
type Outcome = 'ok' | 'fail';

/**
 * The shipped definition with one processor `mode` on FAIL (every state), on RELEASE (every in-progress
 * state), or on an ARCHIVE transition added to COMPLETED.
 */
function withProcessor(transition: 'FAIL' | 'RELEASE' | 'ARCHIVE', mode: Mode) {
	const base = structuredClone(plain) as unknown as {
		states: Record<
			string,
			{ transitions?: { name: string; next?: string; manual?: boolean; processors?: unknown[] }[] }
		>;
	};
	const processors = [
		{ type: 'EXTERNAL', name: 'count', executionMode: mode, config: { calculationNodesTags: 'count' } },
	];
	if (transition === 'ARCHIVE') {
		base.states.COMPLETED = { transitions: [{ name: 'ARCHIVE', next: 'COMPLETED', manual: true, processors }] };
	} else {
		for (const state of Object.values(base.states))
			for (const t of state.transitions ?? []) if (t.name === transition) t.processors = processors;
	}
	return WorkflowDefinition.parse(base);
}

/** A stand-in processor: counts its runs per run id (what it saw too), answers `outcome`. */
function counter(outcome: Outcome = 'ok') {
	const runs = new Map<string, number>();
	const seen: Record<string, unknown>[] = [];
	const free: boolean[] = [];
	return {
		runs,
		seen,
		free,
		runProcessor: async (_processor: unknown, _transition: unknown, entity: unknown) => {
			const e = entity as Record<string, unknown>;
			const id = String(e.id);
			runs.set(id, (runs.get(id) ?? 0) + 1);
			seen.push(e);
			free.push(await rowIsFree(id));
			return outcome === 'ok' ? { success: true } : { success: false, error: 'downstream refused' };
		},
	};
}

/** Whether another session can lock the run's row right now (NOWAIT: fails at once when it is held). */
async function rowIsFree(id: string): Promise<boolean> {
	const client = new Client({ connectionString: db.url });
	await client.connect();
	try {
		await client.query('BEGIN');
		await client.query('SELECT 1 FROM maas.pipeline_runs WHERE id = $1 FOR UPDATE NOWAIT', [id]);
		await client.query('ROLLBACK');
		return true;
	} catch (error) {
		if ((error as { code?: string }).code === '55P03') return false;
		throw error;
	} finally {
		await client.end();
	}
}

async function newRun() {
	const { request_id } = await createRun(db.pool, { user_id: `own-${randomUUID()}`, query: 'q' });
	return request_id;
}

async function capturedRun() {
	const id = await newRun();
	const c = await capture(db.pool, plain, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	return { id, token: c.run.capture_token as string };
}

/** A COMPLETED run (the whole path on the shipped definition, no processors). */
async function completedRun() {
	const id = await newRun();
	const steps = [
		['CAPTURE_ANALYSIS', 'ANALYSIS_DONE', { a: 1 }],
		['CAPTURE_ASSEMBLY', 'ASSEMBLY_DONE', 'ctx'],
		['CAPTURE_RESPONSE', 'RESPONSE_DONE', 'the answer'],
	] as const;
	for (const [take, done, result] of steps) {
		const token = (await capture(db.pool, plain, { run_id: id, transition: take, worker: 'w' })).run.capture_token;
		await completeStep(db.pool, plain, { run_id: id, transition: done, capture_token: token, result });
	}
	return id;
}

async function row(id: string) {
	return (await db.pool.query('SELECT * FROM maas.pipeline_runs WHERE id = $1', [id])).rows[0];
}

async function warningsOf(id: string, transition: string) {
	return (
		await db.pool.query<{ message: string; workflow: string; node: string; details: Record<string, unknown> }>(
			"SELECT message, workflow, node, details FROM ops.errors WHERE details->>'run_id' = $1 AND details->>'transition' = $2 AND details->>'code' = 'PROCESSOR_WARNING'",
			[id, transition],
		)
	).rows;
}

/** Makes run `id` look stuck: its last write `seconds` ago. */
async function age(id: string, seconds: number) {
	await db.pool.query('UPDATE maas.pipeline_runs SET updated_at = now() - make_interval(secs => $2) WHERE id = $1', [
		id,
		seconds,
	]);
}

const origin = { workflow: 'MaaS', node: 'Own Processors' };
const rejectsWith = (status: number, code: string) => (e: ContractError) =>
	e instanceof ContractError && e.statusCode === status && e.details.code === code;

// ---------------------------------------------------------------- Fail

test('Fail, SYNC processor succeeds: FAILED, the processor ran once with nothing held and saw the run as failed', async () => {
	const def = withProcessor('FAIL', 'SYNC');
	const p = counter();
	const { id } = await capturedRun();
	const failed = await failRun(db.pool, def, { run_id: id, error: { message: 'model down' }, call_key: 'k1' }, p);
	assert.deepEqual([failed.status, failed.warnings], ['FAILED', []]);
	assert.equal(p.runs.get(id), 1);
	assert.deepEqual(p.free, [true], 'no row lock held while the processor ran');
	assert.deepEqual(
		[p.seen[0].status, p.seen[0].error, 'capture_token' in p.seen[0]],
		['FAILED', { message: 'model down' }, false],
	);
	const after = await row(id);
	assert.deepEqual([after.status, after.previous_transition, after.capture_token], ['FAILED', 'FAIL', null]);
	// a second call with the same key is a replay: no processor, same answer
	const again = await failRun(db.pool, def, { run_id: id, error: { message: 'model down' }, call_key: 'k1' }, p);
	assert.deepEqual([again.status, again.replayed, p.runs.get(id)], ['FAILED', true, 1]);
});

test('Fail, SYNC processor fails: 400 WORKFLOW_FAILED, the run left exactly as it was (not failed, token kept, not counted)', async () => {
	for (const mode of ['SYNC', 'ASYNC_SAME_TX'] as const) {
		const def = withProcessor('FAIL', mode);
		const p = counter('fail');
		const { id, token } = await capturedRun();
		const before = await row(id);
		await assert.rejects(
			failRun(db.pool, def, { run_id: id, error: { message: 'x' }, call_key: 'k' }, p),
			(e: ContractError) =>
				rejectsWith(400, 'WORKFLOW_FAILED')(e) &&
				e.details.run_id === id &&
				e.details.transition === 'FAIL' &&
				/downstream refused/.test(e.message),
		);
		assert.equal(p.runs.get(id), 1);
		const after = await row(id);
		assert.deepEqual(
			after,
			before,
			`${mode}: the run is unchanged (status ANALYZING, token ${token}, no error, not counted)`,
		);
	}
});

test('Fail, ASYNC_NEW_TX processor fails: FAILED anyway, the warning returned and recorded in ops.errors', async () => {
	const def = withProcessor('FAIL', 'ASYNC_NEW_TX');
	const p = counter('fail');
	const id = await newRun();
	const failed = await failRun(db.pool, def, { run_id: id, error: 'boom' }, { ...p, origin });
	assert.equal(failed.status, 'FAILED');
	assert.equal(failed.warnings.length, 1);
	assert.match(failed.warnings[0], /processor count returned failure: downstream refused/);
	const recorded = await warningsOf(id, 'FAIL');
	assert.equal(recorded.length, 1);
	assert.deepEqual(
		[recorded[0].message, recorded[0].workflow, recorded[0].node, recorded[0].details.execution_mode],
		[failed.warnings[0], 'MaaS', 'Own Processors', 'ASYNC_NEW_TX'],
	);
	assert.equal(p.runs.get(id), 1);
});

test('Fail: a run that moved on while FAIL ran its processors is read again and failed from where it is now', async () => {
	const def = withProcessor('FAIL', 'SYNC');
	const { id, token } = await capturedRun();
	let calls = 0;
	const failed = await failRun(
		db.pool,
		def,
		{ run_id: id, error: { message: 'late' } },
		{
			runProcessor: async () => {
				// the worker completes its step while the first FAIL's processor runs
				if (calls++ === 0)
					await completeStep(db.pool, plain, {
						run_id: id,
						transition: 'ANALYSIS_DONE',
						capture_token: token,
						result: {},
					});
				return true;
			},
		},
	);
	assert.equal(failed.status, 'FAILED');
	assert.equal(calls, 2, 'the FAIL of the new state ran its processor (at-least-once, docs/retry-safety.md)');
	const after = await row(id);
	assert.deepEqual([after.status, after.analysis_result], ['FAILED', {}], 'the step the worker completed is kept');
});

test('Fail: a run written again each time FAIL runs its processors is refused after 3 attempts with 409 RUN_CHANGED, not failed', async () => {
	const def = withProcessor('FAIL', 'SYNC');
	const { id } = await capturedRun();
	let calls = 0;
	await assert.rejects(
		failRun(
			db.pool,
			def,
			{ run_id: id, error: { message: 'busy' } },
			{
				runProcessor: async () => {
					calls++;
					await db.pool.query('UPDATE maas.pipeline_runs SET updated_at = clock_timestamp() WHERE id = $1', [id]);
					return true;
				},
			},
		),
		(e: ContractError) => rejectsWith(409, 'RUN_CHANGED')(e) && e.details.status === 'ANALYZING',
	);
	assert.equal(calls, 3);
	assert.equal((await row(id)).status, 'ANALYZING');
});

test('Fail: reply lost after COMMIT; the retry with the same call key is answered replayed, the processor ran once', async () => {
	const def = withProcessor('FAIL', 'SYNC');
	const p = counter();
	const { id } = await capturedRun();
	const error = { message: 'worker gave up' };
	const call = () => failRun(proxied, def, { run_id: id, error, call_key: 'exec-9:Fail Run:0:0' }, p);
	const dropped = proxy.dropped;
	// the compare-and-set (FAIL_READ_RUN) commits, its reply never arrives
	proxy.dropReplyTo('updated_at = $6::timestamptz');
	await assert.rejects(call(), (e: ContractError) => e.statusCode === 503 && e.retryable === true);
	assert.equal(proxy.dropped, dropped + 1, 'the reply was dropped');
	assert.equal((await row(id)).status, 'FAILED', 'the first call committed');
	assert.equal(p.runs.get(id), 1);
	const retry = await call();
	assert.deepEqual([retry.status, retry.replayed, retry.warnings], ['FAILED', true, []]);
	assert.equal(p.runs.get(id), 1, 'the retry ran no processor');
	// another caller's Fail is still refused
	await assert.rejects(
		failRun(db.pool, def, { run_id: id, error, call_key: 'exec-10:Fail Run:0:0' }, p),
		rejectsWith(409, 'ALREADY_TERMINAL'),
	);
	assert.equal(p.runs.get(id), 1);
});

// ---------------------------------------------------------------- Sweep (RELEASE)

const SWEEP = { stuck_after_seconds: 60, lost_after_seconds: 86_400, limit: 50 };

test('Sweep, SYNC RELEASE processor succeeds: the stuck run released once (its old worker refused), the processor ran once with nothing held', async () => {
	const def = withProcessor('RELEASE', 'SYNC');
	const p = counter();
	const { id, token } = await capturedRun();
	await age(id, 120);
	const swept = await sweep(db.pool, def, SWEEP, p);
	const mine = swept.released.filter((r) => r.id === id);
	assert.deepEqual(mine, [{ id, status: 'NEW', warnings: [] }]);
	assert.deepEqual([p.runs.get(id), p.free], [1, [true]]);
	assert.deepEqual(
		[p.seen[0].status, p.seen[0].previous_transition, 'capture_token' in p.seen[0]],
		['NEW', 'RELEASE', false],
	);
	const after = await row(id);
	assert.deepEqual([after.status, after.capture_token, after.previous_transition], ['NEW', null, 'RELEASE']);
	// a second sweep (or a retry) finds nothing to release, runs nothing
	const again = await sweep(db.pool, def, SWEEP, p);
	assert.equal(again.released.filter((r) => r.id === id).length, 0);
	assert.equal(p.runs.get(id), 1);
	await assert.rejects(
		completeStep(db.pool, def, { run_id: id, transition: 'ANALYSIS_DONE', capture_token: token, result: {} }),
		rejectsWith(409, 'ILLEGAL_TRANSITION'),
	);
});

test('Sweep, SYNC RELEASE processor fails: the run stays in progress under its token, listed as refused, counted; FAILED at Max Processor Failures', async () => {
	const def = withProcessor('RELEASE', 'SYNC');
	const p = counter('fail');
	const { id, token } = await capturedRun();
	await age(id, 120);
	const first = await sweep(db.pool, def, SWEEP, { ...p, maxProcessorFailures: 2 });
	const refused = first.refused.find((r) => r.id === id);
	assert.ok(refused, 'listed as refused');
	assert.equal(
		first.released.some((r) => r.id === id),
		false,
	);
	assert.deepEqual([refused.status, refused.error?.code, refused.error?.failures], ['ANALYZING', 'WORKFLOW_FAILED', 1]);
	assert.match(refused.error!.message, /downstream refused/);
	const between = await row(id);
	assert.deepEqual([between.status, between.capture_token, between.processor_failures], ['ANALYZING', token, 1]);
	// no error output carries it: the Sweep records the failure in ops.errors itself
	const recorded = await db.pool.query<{ kind: string; status_code: number; details: Record<string, unknown> }>(
		"SELECT kind, status_code, details FROM ops.errors WHERE details->>'run_id' = $1 AND details->>'transition' = 'RELEASE'",
		[id],
	);
	assert.deepEqual(
		recorded.rows.map((r) => [r.kind, r.status_code, r.details.code, r.details.severity, r.details.failures]),
		[['upstream', 400, 'WORKFLOW_FAILED', 'error', 1]],
	);
	// the count restarted its stuck clock: the next sweep right away leaves it alone
	await sweep(db.pool, def, SWEEP, { ...p, maxProcessorFailures: 2 });
	assert.equal(p.runs.get(id), 1);
	// still stuck later: the second failure is the last allowed
	await age(id, 120);
	const second = await sweep(db.pool, def, SWEEP, { ...p, maxProcessorFailures: 2 });
	assert.deepEqual(
		second.refused.filter((r) => r.id === id).map((r) => [r.status, r.error?.failures]),
		[['FAILED', 2]],
	);
	const ended = await row(id);
	assert.deepEqual(
		[ended.status, ended.capture_token, (ended.error as { code: string }).code],
		['FAILED', null, 'PROCESSOR_FAILURES'],
	);
});

test('Sweep, ASYNC_NEW_TX RELEASE processor fails: released anyway, the warning in its item and in ops.errors', async () => {
	const def = withProcessor('RELEASE', 'ASYNC_NEW_TX');
	const p = counter('fail');
	const { id } = await capturedRun();
	await age(id, 120);
	const swept = await sweep(db.pool, def, SWEEP, { ...p, origin });
	const mine = swept.released.find((r) => r.id === id);
	assert.equal(mine?.status, 'NEW');
	assert.equal(mine?.warnings?.length, 1);
	const recorded = await warningsOf(id, 'RELEASE');
	assert.deepEqual(
		recorded.map((r) => r.message),
		mine!.warnings,
	);
	assert.equal((await row(id)).status, 'NEW');
});

test('Sweep: the release reply lost after COMMIT; the retry releases nothing more and runs no RELEASE processor again', async () => {
	const def = withProcessor('RELEASE', 'SYNC');
	const p = counter();
	const { id } = await capturedRun();
	await age(id, 120);
	const dropped = proxy.dropped;
	proxy.dropReplyTo("SET status = $5, previous_transition = 'RELEASE'");
	await assert.rejects(sweep(proxied, def, SWEEP, p), (e: ContractError) => e.statusCode === 503);
	assert.equal(proxy.dropped, dropped + 1, 'the reply was dropped');
	assert.deepEqual([(await row(id)).status, p.runs.get(id)], ['NEW', 1], 'the first call released it');
	const retry = await sweep(proxied, def, SWEEP, p);
	assert.equal(
		retry.released.some((r) => r.id === id),
		false,
	);
	assert.equal(p.runs.get(id), 1, 'the retry ran no processor');
});

test('Sweep: a stuck run completed by its worker while RELEASE ran its processor is not released', async () => {
	const def = withProcessor('RELEASE', 'SYNC');
	const { id, token } = await capturedRun();
	await age(id, 120);
	const swept = await sweep(db.pool, def, SWEEP, {
		runProcessor: async (_p, _t, entity) => {
			if ((entity as { id: string }).id === id)
				await completeStep(db.pool, plain, {
					run_id: id,
					transition: 'ANALYSIS_DONE',
					capture_token: token,
					result: { late: 1 },
				});
			return true;
		},
	});
	assert.equal(
		swept.released.some((r) => r.id === id),
		false,
	);
	assert.equal(
		swept.refused.some((r) => r.id === id),
		false,
	);
	assert.equal((await row(id)).status, 'ANALYZED', "the worker's step stands");
});

// ---------------------------------------------------------------- Archive

test('Archive, SYNC ARCHIVE processor succeeds: archived once, the processor ran once with nothing held; a retry is a replay', async () => {
	const def = withProcessor('ARCHIVE', 'SYNC');
	const p = counter();
	const id = await completedRun();
	const archived = await archiveRun(db.pool, { run_id: id, summary: 'sum', tags: 'a,b' }, def, p);
	assert.deepEqual([archived.run_id, archived.warnings, typeof archived.lsm_id], [id, [], 'number']);
	assert.deepEqual([p.runs.get(id), p.free], [1, [true]]);
	assert.deepEqual(
		[p.seen[0].status, 'capture_token' in p.seen[0], 'completed_steps' in p.seen[0]],
		['COMPLETED', false, false],
	);
	assert.ok((await row(id)).archived_at);
	// the same call again (a retry after a lost reply): the first answer, replayed, nothing run or stored again
	const again = await archiveRun(db.pool, { run_id: id, summary: 'sum', tags: 'a,b' }, def, p);
	assert.deepEqual([again.lsm_id, again.replayed, again.warnings], [archived.lsm_id, true, []]);
	assert.equal(p.runs.get(id), 1);
	const lsm = await db.pool.query('SELECT count(*)::int AS n FROM maas.lsm_storage WHERE run_id = $1', [id]);
	assert.equal(lsm.rows[0].n, 1);
	// another summary on an archived run is still 409
	await assert.rejects(
		archiveRun(db.pool, { run_id: id, summary: 'other' }, def, p),
		rejectsWith(409, 'NOT_ARCHIVABLE'),
	);
	assert.equal(p.runs.get(id), 1);
});

test('Archive: reply lost after COMMIT; the retry is answered replayed with the same lsm_id, the processor ran once', async () => {
	const def = withProcessor('ARCHIVE', 'SYNC');
	const p = counter();
	const id = await completedRun();
	const call = () => archiveRun(proxied, { run_id: id, summary: 'the summary', tags: ['x'] }, def, p);
	const dropped = proxy.dropped;
	proxy.dropReplyTo('INSERT INTO maas.lsm_storage');
	await assert.rejects(call(), (e: ContractError) => e.statusCode === 503 && e.retryable === true);
	assert.equal(proxy.dropped, dropped + 1, 'the reply was dropped');
	assert.ok((await row(id)).archived_at, 'the first call committed');
	const retry = await call();
	assert.deepEqual([retry.replayed, retry.warnings], [true, []]);
	const lsm = await db.pool.query<{ id: string }>('SELECT id FROM maas.lsm_storage WHERE run_id = $1', [id]);
	assert.deepEqual(
		lsm.rows.map((r) => Number(r.id)),
		[retry.lsm_id],
		'one summary stored, the one the retry names',
	);
	assert.equal(p.runs.get(id), 1, 'the retry ran no processor');
});

test('Archive, SYNC ARCHIVE processor fails: 400 WORKFLOW_FAILED, nothing stored, the run not archived (a later Archive succeeds)', async () => {
	const def = withProcessor('ARCHIVE', 'SYNC');
	const id = await completedRun();
	const before = await row(id);
	await assert.rejects(
		archiveRun(db.pool, { run_id: id, summary: 'sum' }, def, counter('fail')),
		(e: ContractError) =>
			rejectsWith(400, 'WORKFLOW_FAILED')(e) && e.details.run_id === id && e.details.transition === 'ARCHIVE',
	);
	assert.deepEqual(await row(id), before, 'the run is unchanged');
	const lsm = await db.pool.query('SELECT count(*)::int AS n FROM maas.lsm_storage WHERE run_id = $1', [id]);
	assert.equal(lsm.rows[0].n, 0);
	const later = await archiveRun(db.pool, { run_id: id, summary: 'sum' }, def, counter());
	assert.equal(later.run_id, id);
	assert.ok((await row(id)).archived_at);
});

test('Archive, ASYNC_NEW_TX ARCHIVE processor fails: archived anyway, the warning returned and recorded in ops.errors', async () => {
	const def = withProcessor('ARCHIVE', 'ASYNC_NEW_TX');
	const p = counter('fail');
	const id = await completedRun();
	const archived = await archiveRun(db.pool, { run_id: id, summary: 'sum' }, def, { ...p, origin });
	assert.equal(archived.warnings.length, 1);
	assert.ok((await row(id)).archived_at);
	const recorded = await warningsOf(id, 'ARCHIVE');
	assert.deepEqual(
		recorded.map((r) => [r.message, r.workflow, r.node]),
		[[archived.warnings[0], 'MaaS', 'Own Processors']],
	);
	assert.equal(p.runs.get(id), 1);
});

test('Archive of a run that is not COMPLETED: 409 NOT_ARCHIVABLE before any processor runs', async () => {
	const def = withProcessor('ARCHIVE', 'SYNC');
	const p = counter();
	const id = await newRun();
	await assert.rejects(archiveRun(db.pool, { run_id: id, summary: 'sum' }, def, p), rejectsWith(409, 'NOT_ARCHIVABLE'));
	assert.equal(p.runs.get(id), undefined);
});

test('Capture and Complete Step refuse FAIL, RELEASE and ARCHIVE (fired by their own operations)', async () => {
	const def = withProcessor('ARCHIVE', 'SYNC');
	const id = await completedRun();
	await assert.rejects(
		capture(db.pool, def, { run_id: id, transition: 'ARCHIVE', worker: 'w' }),
		rejectsWith(409, 'ILLEGAL_TRANSITION'),
	);
	await assert.rejects(
		completeStep(db.pool, def, { run_id: id, transition: 'ARCHIVE', capture_token: randomUUID(), result: 'x' }),
		rejectsWith(409, 'ILLEGAL_TRANSITION'),
	);
	const after = await row(id);
	assert.deepEqual([after.status, after.capture_token, after.archived_at], ['COMPLETED', null, null]);
	// ARCHIVE on COMPLETED does not make COMPLETED a state Fail may leave
	await assert.rejects(failRun(db.pool, def, { run_id: id, error: 'late' }), rejectsWith(409, 'ALREADY_TERMINAL'));
});
