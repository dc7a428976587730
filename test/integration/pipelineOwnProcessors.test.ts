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
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import { Client, type Pool } from 'pg';
import { archiveRun } from '../../nodes/PipelineCapture/actions/run/archive.operation';
import { capture } from '../../nodes/PipelineCapture/actions/run/capture.operation';
import { completeStep } from '../../nodes/PipelineCapture/actions/run/completeStep.operation';
import { createRun } from '../../nodes/PipelineCapture/actions/run/createRun.operation';
import { failRun } from '../../nodes/PipelineCapture/actions/run/fail.operation';
import { sweep } from '../../nodes/PipelineCapture/actions/run/sweep.operation';
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
const md5 = (text: string) => createHash('md5').update(text).digest('hex');
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

/** The ops.errors rows of a processor failure (severity error) of `transition` on run `id`. */
async function failuresOf(id: string, transition: string) {
	return (
		await db.pool.query<{ kind: string; status_code: number; message: string; details: Record<string, unknown> }>(
			"SELECT kind, status_code, message, details FROM ops.errors WHERE details->>'run_id' = $1 AND details->>'transition' = $2 AND details->>'severity' = 'error' ORDER BY id",
			[id, transition],
		)
	).rows;
}

test('Fail, SYNC / ASYNC_SAME_TX processor fails: the run is FAILED anyway, the failure counted, returned and recorded in ops.errors; a retry is a replay', async () => {
	for (const mode of ['SYNC', 'ASYNC_SAME_TX'] as const) {
		const def = withProcessor('FAIL', mode);
		const p = counter('fail');
		const { id } = await capturedRun();
		const error = { message: 'step failed' };
		const failed = await failRun(db.pool, def, { run_id: id, error, call_key: `k-${mode}` }, { ...p, origin });
		assert.equal(failed.status, 'FAILED', `${mode}: Fail always ends the run`);
		assert.equal(failed.processor_error?.code, 'WORKFLOW_FAILED');
		assert.match(failed.processor_error!.message, /FAIL processor failed .*downstream refused/);
		assert.deepEqual(failed.warnings, [failed.processor_error!.message]);
		const after = await row(id);
		assert.deepEqual(
			[after.status, after.capture_token, after.error, after.processor_failures, after.previous_transition],
			['FAILED', null, error, 1, 'FAIL'],
			`${mode}: FAILED with the caller's error, the processor failure counted`,
		);
		const recorded = await failuresOf(id, 'FAIL');
		assert.deepEqual(
			recorded.map((r) => [r.kind, r.status_code, r.details.code, r.details.applied, r.details.run_status]),
			[['upstream', 400, 'WORKFLOW_FAILED', true, 'FAILED']],
		);
		assert.equal(recorded[0].message, failed.processor_error!.message);
		assert.equal(p.runs.get(id), 1);
		// the same call again (a retry after a lost reply): replayed, no processor, nothing counted again
		const again = await failRun(db.pool, def, { run_id: id, error, call_key: `k-${mode}` }, p);
		assert.deepEqual([again.replayed, p.runs.get(id), (await row(id)).processor_failures], [true, 1, 1]);
	}
});

test('Fail with a SYNC processor that always fails: the run ends on the first Fail, the Sweep never releases it, its step never runs again', async () => {
	const def = withProcessor('FAIL', 'SYNC');
	const p = counter('fail');
	const id = await newRun();
	let captures = 0;
	for (let loop = 0; loop < 3; loop++) {
		const c = await capture(db.pool, def, { run_id: id, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
		if (c.captured) captures++;
		await failRun(db.pool, def, { run_id: id, error: { message: 'step failed' }, call_key: `k${loop}` }, p).catch(
			(e: ContractError) => e,
		);
		await age(id, 3600);
		await sweep(db.pool, def, SWEEP, p);
	}
	assert.equal(captures, 1, 'the step ran once');
	assert.equal((await row(id)).status, 'FAILED');
});

test('Fail: two callers at once with a failing FAIL processor: both processors run (documented), one writes FAILED, the other is 409 and its failure recorded as not applied', async () => {
	const def = withProcessor('FAIL', 'SYNC');
	const { id } = await capturedRun();
	let runs = 0;
	const slow = {
		runProcessor: async () => {
			runs++;
			await new Promise((r) => setTimeout(r, 300));
			return { success: false, error: 'down' };
		},
	};
	const results = await Promise.allSettled([
		failRun(db.pool, def, { run_id: id, error: { message: 'a' }, call_key: 'ka' }, slow),
		failRun(db.pool, def, { run_id: id, error: { message: 'b' }, call_key: 'kb' }, slow),
	]);
	assert.equal(runs, 2, 'processors run before the compare-and-set: they must tolerate a refused write');
	assert.deepEqual(
		results.map((r) => (r.status === 'fulfilled' ? r.value.status : (r.reason as ContractError).details.code)).sort(),
		['ALREADY_TERMINAL', 'FAILED'],
	);
	assert.equal((await row(id)).processor_failures, 1, 'counted by the write that happened');
	assert.deepEqual((await failuresOf(id, 'FAIL')).map((r) => r.details.applied).sort(), [false, true]);
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

test("Sweep: two overlapping Sweeps over one stuck period run RELEASE's failing processor once and count one failure", async () => {
	const def = withProcessor('RELEASE', 'SYNC');
	const { id, token } = await capturedRun();
	await age(id, 120);
	let runs = 0;
	const options = {
		maxProcessorFailures: 2,
		runProcessor: async (_p: unknown, _t: unknown, entity: unknown) => {
			if ((entity as { id: string }).id === id) runs++;
			await new Promise((r) => setTimeout(r, 300));
			return { success: false, error: 'down' };
		},
	};
	const [a, b] = await Promise.all([sweep(db.pool, def, SWEEP, options), sweep(db.pool, def, SWEEP, options)]);
	assert.equal(runs, 1, 'the second Sweep found the run claimed');
	assert.equal([...a.refused, ...b.refused].filter((r) => r.id === id).length, 1);
	const after = await row(id);
	assert.deepEqual([after.status, after.capture_token, after.processor_failures], ['ANALYZING', token, 1]);
});

test('Sweep: a stuck run without a capture token whose RELEASE processor fails is counted (not retried every tick) and FAILED at the limit', async () => {
	const def = withProcessor('RELEASE', 'SYNC');
	const p = counter('fail');
	const { id } = await capturedRun();
	await db.pool.query('UPDATE maas.pipeline_runs SET capture_token = NULL WHERE id = $1', [id]);
	await age(id, 120);
	const options = { ...p, maxProcessorFailures: 2 };
	const first = await sweep(db.pool, def, SWEEP, options);
	assert.deepEqual(
		first.refused.filter((r) => r.id === id).map((r) => [r.status, r.error?.failures]),
		[['ANALYZING', 1]],
	);
	await sweep(db.pool, def, SWEEP, options);
	assert.equal(p.runs.get(id), 1, 'the count restarted its stuck clock');
	await age(id, 120);
	const second = await sweep(db.pool, def, SWEEP, options);
	assert.deepEqual(
		second.refused.filter((r) => r.id === id).map((r) => [r.status, r.error?.failures]),
		[['FAILED', 2]],
	);
	assert.deepEqual([(await row(id)).status, (await row(id)).processor_failures], ['FAILED', 2]);
});

test("Sweep: a stuck run completed by its worker while RELEASE's processor failed is neither listed as refused nor recorded as an error", async () => {
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
			return { success: false, error: 'down' };
		},
	});
	assert.equal(
		[...swept.released, ...swept.refused].some((r) => r.id === id),
		false,
	);
	assert.deepEqual(await failuresOf(id, 'RELEASE'), []);
	const after = await row(id);
	assert.deepEqual(
		[after.status, after.processor_failures],
		['ANALYZED', 0],
		"the worker's step stands, nothing counted",
	);
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

test('Archive, SYNC ARCHIVE processor fails: 400 WORKFLOW_FAILED, nothing stored, counted; a later Archive succeeds', async () => {
	const def = withProcessor('ARCHIVE', 'SYNC');
	const id = await completedRun();
	const before = await row(id);
	await assert.rejects(
		archiveRun(db.pool, { run_id: id, summary: 'sum' }, def, counter('fail')),
		(e: ContractError) =>
			rejectsWith(400, 'WORKFLOW_FAILED')(e) &&
			e.details.run_id === id &&
			e.details.transition === 'ARCHIVE' &&
			e.details.failures === 1 &&
			e.details.limit === 3,
	);
	assert.deepEqual(await row(id), { ...before, processor_failures: 1 }, 'the run unchanged but for the count');
	const lsm = await db.pool.query('SELECT count(*)::int AS n FROM maas.lsm_storage WHERE run_id = $1', [id]);
	assert.equal(lsm.rows[0].n, 0);
	const later = await archiveRun(db.pool, { run_id: id, summary: 'sum' }, def, counter());
	assert.equal(later.run_id, id);
	assert.ok((await row(id)).archived_at);
});

test("Archive, an ARCHIVE processor that always fails: archived anyway at Max Processor Failures (the failure returned and recorded), the user's next run no longer blocked", async () => {
	const def = withProcessor('ARCHIVE', 'SYNC');
	const p = counter('fail');
	const id = await completedRun();
	const user = (await row(id)).user_id as string;
	const { request_id: next } = await createRun(db.pool, { user_id: user, query: 'next' });
	const options = { ...p, maxProcessorFailures: 2, origin };
	await assert.rejects(
		archiveRun(db.pool, { run_id: id, summary: 'sum' }, def, options),
		(e: ContractError) => rejectsWith(400, 'WORKFLOW_FAILED')(e) && e.details.failures === 1,
	);
	const blocked = await capture(db.pool, plain, { run_id: next, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	assert.equal(blocked.reason, 'BLOCKED', 'held back while the archive is refused');
	const archived = await archiveRun(db.pool, { run_id: id, summary: 'sum' }, def, options);
	assert.equal(archived.next_run_id, next);
	assert.deepEqual([archived.processor_error?.code, archived.processor_error?.failures], ['WORKFLOW_FAILED', 2]);
	assert.match(archived.processor_error!.message, /ARCHIVE processor failed .*written anyway.*downstream refused/);
	assert.deepEqual(archived.warnings, [archived.processor_error!.message]);
	const after = await row(id);
	assert.ok(after.archived_at);
	assert.equal(after.processor_failures, 2);
	assert.deepEqual(
		(await failuresOf(id, 'ARCHIVE')).map((r) => [
			r.kind,
			r.status_code,
			r.details.code,
			r.details.applied,
			r.details.failures,
		]),
		[['upstream', 400, 'WORKFLOW_FAILED', true, 2]],
	);
	assert.equal(p.runs.get(id), 2);
	const unblocked = await capture(db.pool, plain, { run_id: next, transition: 'CAPTURE_ANALYSIS', worker: 'w' });
	assert.equal(unblocked.captured, true);
	// the Sweep no longer re-emits it
	const swept = await sweep(db.pool, plain, { stuck_after_seconds: 86_400, lost_after_seconds: 1, limit: 10_000 });
	assert.equal(
		swept.waiting.some((r) => r.id === id),
		false,
	);
});

test('Archive: two Archivists failing over the same read count one failure', async () => {
	const def = withProcessor('ARCHIVE', 'SYNC');
	const id = await completedRun();
	const slow = {
		maxProcessorFailures: 5,
		runProcessor: async () => {
			await new Promise((r) => setTimeout(r, 300));
			return { success: false, error: 'down' };
		},
	};
	const results = await Promise.allSettled([
		archiveRun(db.pool, { run_id: id, summary: 'a' }, def, slow),
		archiveRun(db.pool, { run_id: id, summary: 'b' }, def, slow),
	]);
	assert.deepEqual(
		results.map((r) => r.status === 'rejected' && (r.reason as ContractError).details.code),
		['WORKFLOW_FAILED', 'WORKFLOW_FAILED'],
	);
	assert.deepEqual(
		results.map((r) => (r as PromiseRejectedResult).reason.details.failures).sort(),
		[1, null],
		'one counted, the other found the count moved',
	);
	assert.equal((await row(id)).processor_failures, 1);
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

test('Archive: a retry is recognised by its call key (migration 022), not by the summary alone: another caller with the same summary is 409 NOT_ARCHIVABLE', async () => {
	const def = withProcessor('ARCHIVE', 'SYNC');
	const p = counter();
	const id = await completedRun();
	const first = await archiveRun(
		db.pool,
		{ run_id: id, summary: 'same', tags: 't', call_key: 'exec-1:Archive:0:0' },
		def,
		p,
	);
	assert.equal((await row(id)).archive_key, md5('exec-1:Archive:0:0'), 'only a digest of the key is stored');
	const retry = await archiveRun(
		db.pool,
		{ run_id: id, summary: 'same', tags: 't', call_key: 'exec-1:Archive:0:0' },
		def,
		p,
	);
	assert.deepEqual([retry.replayed, retry.lsm_id], [true, first.lsm_id]);
	await assert.rejects(
		archiveRun(db.pool, { run_id: id, summary: 'same', tags: 't', call_key: 'exec-2:Archive:0:0' }, def, p),
		rejectsWith(409, 'NOT_ARCHIVABLE'),
	);
	await assert.rejects(
		archiveRun(db.pool, { run_id: id, summary: 'same', tags: 't' }, def, p),
		rejectsWith(409, 'NOT_ARCHIVABLE'),
		'a keyless call is not the keyed one',
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
