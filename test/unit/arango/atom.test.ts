import assert from 'node:assert/strict';
import { afterEach, test } from '@jest/globals';
import { archive } from '../../../nodes/ArangoCas/actions/atom/archive.operation';
import { lock } from '../../../nodes/ArangoCas/actions/atom/lock.operation';
import { unlock } from '../../../nodes/ArangoCas/actions/atom/unlock.operation';
import { UNLOCK_EXPIRED_AQL, unlockExpired } from '../../../nodes/ArangoCas/actions/atom/unlockExpired.operation';
import { LOCK_AQL } from '../../../nodes/ArangoCas/actions/atom/lock.operation';
import { UNLOCK_AQL } from '../../../nodes/ArangoCas/actions/atom/unlock.operation';
import { ARCHIVE_AQL } from '../../../nodes/ArangoCas/actions/atom/archive.operation';
import { MERGE_SWITCH_AQL } from '../../../nodes/ArangoCas/actions/proposal/merge.operation';
import { ArangoStub, CONFLICT_1200 } from '../../helpers/arangoHttp';
import { assertQueriesSafe, failure, RUN } from '../../helpers/arangoOps';

afterEach(() => ArangoStub.reset());

const LOCK_INPUT = { atom_id: 'atoms/a1', user_id: 'u1', expected_rev: '_rev1', lease_minutes: 5 };

test('Lock: one CAS query; sends the key, the caller, the expected _rev and the lease in ms; returns the new lock', async () => {
	const stub = new ArangoStub().cursor(
		[{ outcome: 'OK', current_rev: '_rev1', atom_rev: '_rev2', new_locked_until: 1_700_000_300_000 }],
		{ writesExecuted: 1 },
	);
	const result = await lock.execute(stub.database(), LOCK_INPUT, RUN);
	assert.equal(stub.requests.length, 1, 'one round trip');
	const [q] = stub.queries();
	assert.deepEqual(q.bindVars, { atom_key: 'a1', user_id: 'u1', expected_rev: '_rev1', lease_ms: 300_000 });
	assert.equal(q.trxId, undefined, 'a single query needs no stream transaction');
	assert.match(
		q.query,
		/UPDATE a WITH \{ locked_by: @user_id[\s\S]*OPTIONS \{ ignoreRevs: false(, keepNull: true)? \}/,
	);
	assert.deepEqual(result, {
		statusCode: 200,
		data: { success: true, atom_id: 'atoms/a1', locked_by: 'u1', locked_until: 1_700_000_300_000, atom_rev: '_rev2' },
	});
	assert.ok(stub.isDone());
	assertQueriesSafe(stub);
});

test('Lock: the If-Match form of the revision ("_rev1" with quotes) is unquoted', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'OK', atom_rev: '_rev2', new_locked_until: 1 }]);
	await lock.execute(stub.database(), { ...LOCK_INPUT, expected_rev: '"_rev1"' }, RUN);
	assert.equal(stub.queries()[0].bindVars.expected_rev, '_rev1');
});

test('Lock: a lock held by another user answers 423 LOCKED with locked_by and locked_until (no stealing)', async () => {
	const stub = new ArangoStub().cursor([
		{ outcome: 'LOCKED', current_rev: '_rev1', locked_by: 'u2', locked_until: 1_900_000_000_000 },
	]);
	const error = await failure(lock, stub.database(), LOCK_INPUT);
	assert.deepEqual([error.statusCode, error.kind, error.retryable], [423, 'locked', false]);
	assert.deepEqual(error.details, { code: 'LOCKED', locked_by: 'u2', locked_until: 1_900_000_000_000 });
	assert.deepEqual(error.where, { operation: 'update', collection: 'atoms' });
});

test('Lock: a stale _rev answers 409 REV_CONFLICT with the current _rev', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'REV_CONFLICT', current_rev: '_rev9' }]);
	const error = await failure(lock, stub.database(), LOCK_INPUT);
	assert.equal(error.statusCode, 409);
	assert.deepEqual(error.details, { code: 'REV_CONFLICT', expected_rev: '_rev1', current_rev: '_rev9' });
});

test('Lock: a write that loses the race (errorNum 1200) answers 409 REV_CONFLICT with the _rev read after the conflict', async () => {
	const stub = new ArangoStub().cursorError(...CONFLICT_1200).cursor([['atoms/a1', '_rev8']]);
	const error = await failure(lock, stub.database(), LOCK_INPUT);
	assert.deepEqual([error.statusCode, error.kind], [409, 'conflict']);
	assert.deepEqual([error.details.code, error.details.arango_error_num], ['REV_CONFLICT', 1200]);
	assert.deepEqual([error.details.expected_rev, error.details.current_rev], ['_rev1', '_rev8']);
	assert.deepEqual(error.details.current_revs, { 'atoms/a1': '_rev8' });
	const [, read] = stub.queries();
	assert.deepEqual(read.bindVars, { ids: ['atoms/a1'] });
	assert.doesNotMatch(read.query, /INSERT|UPDATE|REPLACE|REMOVE|UPSERT/, 'the re-read writes nothing');
	assert.ok(stub.isDone());
	assertQueriesSafe(stub);
});

test('Lock: after a 1200 the atom is gone, or the read fails too → 409 with current_rev null', async () => {
	const gone = new ArangoStub().cursorError(...CONFLICT_1200).cursor([['atoms/a1', null]]);
	const a = await failure(lock, gone.database(), LOCK_INPUT);
	assert.deepEqual([a.statusCode, a.details.current_rev, a.details.current_revs], [409, null, { 'atoms/a1': null }]);
	ArangoStub.reset();
	const down = new ArangoStub().cursorError(...CONFLICT_1200).cursorNetworkError('ECONNRESET');
	const b = await failure(lock, down.database(), LOCK_INPUT);
	assert.deepEqual(
		[b.statusCode, b.details.code, b.details.current_rev, b.details.expected_rev],
		[409, 'REV_CONFLICT', null, '_rev1'],
	);
	assert.equal('current_revs' in b.details, false, 'nothing read: no current_revs');
	assert.ok(down.isDone());
});

test('Lock: an unknown atom answers 404 NOT_FOUND naming it', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'NOT_FOUND', current_rev: null }]);
	const error = await failure(lock, stub.database(), LOCK_INPUT);
	assert.deepEqual([error.statusCode, error.kind], [404, 'not_found']);
	assert.deepEqual(error.details.missing, ['atoms/a1']);
});

test('Lock: ArangoDB unreachable answers 503 retryable (kind db)', async () => {
	const stub = new ArangoStub().cursorNetworkError('ECONNREFUSED');
	const error = await failure(lock, stub.database(), LOCK_INPUT);
	assert.deepEqual([error.statusCode, error.kind, error.retryable], [503, 'db', true]);
	assert.equal(error.details.code, 'UNREACHABLE');
});

test('Lock: invalid input answers 422 naming the field, and sends nothing', async () => {
	const stub = new ArangoStub();
	const noRev = await failure(lock, stub.database(), { ...LOCK_INPUT, expected_rev: undefined });
	assert.deepEqual([noRev.statusCode, noRev.kind, noRev.details.field], [422, 'validation', 'expected_rev']);
	const wrongCollection = await failure(lock, stub.database(), { ...LOCK_INPUT, atom_id: 'docs/a1' });
	assert.equal(wrongCollection.details.field, 'atom_id');
	const badLease = await failure(lock, stub.database(), { ...LOCK_INPUT, lease_minutes: -1 });
	assert.equal(badLease.details.field, 'lease_minutes');
	assert.equal(stub.requests.length, 0);
});

const UNLOCK_INPUT = { atom_id: 'a1', user_id: 'u1', expected_rev: '_rev2' };

test('Unlock: owner releases with one CAS query', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'OK', atom_rev: '_rev3' }], { writesExecuted: 1 });
	const result = await unlock.execute(stub.database(), UNLOCK_INPUT, RUN);
	assert.deepEqual(result.data, { success: true, atom_id: 'atoms/a1', atom_rev: '_rev3' });
	assert.deepEqual(stub.queries()[0].bindVars, { atom_key: 'a1', user_id: 'u1', expected_rev: '_rev2' });
	assert.match(stub.queries()[0].query, /ignoreRevs: false/);
	// issue 25: the atom names who released the lock
	assert.match(
		stub.queries()[0].query,
		/UPDATE a WITH \{ locked_by: null, locked_until: null, unlocked_by: @user_id \}/,
	);
	assertQueriesSafe(stub);
});

test('Lock clears unlocked_by (keepNull); Unlock of an atom that is not locked writes nothing and answers its _rev', () => {
	assert.match(
		LOCK_AQL,
		/UPDATE a WITH \{ locked_by: @user_id, locked_until: now \+ @lease_ms, unlocked_by: null \} IN atoms OPTIONS \{ ignoreRevs: false, keepNull: true \}/,
	);
	assert.match(UNLOCK_AQL, /LET was_locked = atom != null AND atom\.locked_by != null/);
	assert.match(UNLOCK_AQL, /FOR a IN \(outcome == "OK" AND was_locked \? \[atom\] : \[\]\)\s+UPDATE a/);
	assert.match(UNLOCK_AQL, /atom_rev: was_locked \? updated\._rev : atom\._rev/);
});

test('Unlock: an atom that is not locked answers success with its unchanged _rev', async () => {
	const stub = new ArangoStub().cursor([{ outcome: 'OK', atom_rev: '_rev2' }], { writesExecuted: 0 });
	const result = await unlock.execute(stub.database(), UNLOCK_INPUT, RUN);
	assert.deepEqual(result.data, { success: true, atom_id: 'atoms/a1', atom_rev: '_rev2' });
});

test("Unlock: another user's unexpired lock answers 423; a stale _rev 409", async () => {
	const stub = new ArangoStub()
		.cursor([{ outcome: 'LOCKED', locked_by: 'u2', locked_until: 5 }])
		.cursor([{ outcome: 'REV_CONFLICT', current_rev: '_rev7' }]);
	const db = stub.database();
	const locked = await failure(unlock, db, UNLOCK_INPUT);
	assert.deepEqual([locked.statusCode, locked.details.locked_by], [423, 'u2']);
	const stale = await failure(unlock, db, UNLOCK_INPUT);
	assert.deepEqual([stale.statusCode, stale.details.current_rev], [409, '_rev7']);
});

const ARCHIVE_INPUT = { atom_id: 'a1', user_id: 'u1', expected_rev: '_rev2', reason: 'Requirement cancelled' };

test('Archive: one query removes the structure edges and CAS-archives the atom', async () => {
	const stub = new ArangoStub().cursor(
		[
			{
				outcome: 'OK',
				archived_at: 1_700_000_000_000,
				atom_rev: '_rev3',
				structure_edges_removed: ['structure_links/e1'],
			},
		],
		{ writesExecuted: 2 },
	);
	const result = await archive.execute(stub.database(), ARCHIVE_INPUT, RUN);
	assert.deepEqual(result.data, {
		success: true,
		atom_id: 'atoms/a1',
		archived_at: 1_700_000_000_000,
		atom_rev: '_rev3',
		structure_edges_removed: ['structure_links/e1'],
	});
	const [q] = stub.queries();
	assert.deepEqual(q.bindVars, {
		atom_key: 'a1',
		user_id: 'u1',
		expected_rev: '_rev2',
		reason: 'Requirement cancelled',
	});
	assert.ok(
		q.query.indexOf('REMOVE e IN structure_links') < q.query.indexOf('UPDATE a WITH { status: "archived"'),
		'edges go first, atoms last',
	);
	assertQueriesSafe(stub);
});

test('Archive: a baseline-protected atom answers 409 PROTECTED_BY_BASELINE with the baselines', async () => {
	const baselines = [
		{ id: 'baselines/b1', tag: 'v1.0' },
		{ id: 'baselines/b2', tag: 'v1.1' },
	];
	const stub = new ArangoStub().cursor([{ outcome: 'PROTECTED_BY_BASELINE', baselines }]);
	const error = await failure(archive, stub.database(), ARCHIVE_INPUT);
	assert.deepEqual([error.statusCode, error.kind], [409, 'conflict']);
	assert.deepEqual(error.details, { code: 'PROTECTED_BY_BASELINE', baselines });
});

test('Archive: locked by another user → 423; already archived → 409 INVALID_STATE; stale → 409; unknown → 404', async () => {
	const stub = new ArangoStub()
		.cursor([{ outcome: 'LOCKED', locked_by: 'u2', locked_until: 9 }])
		.cursor([{ outcome: 'INVALID_STATE', status: 'archived' }])
		.cursor([{ outcome: 'REV_CONFLICT', current_rev: '_rev5' }])
		.cursor([{ outcome: 'NOT_FOUND' }]);
	const db = stub.database();
	const codes = [];
	for (let i = 0; i < 4; i++) {
		const e = await failure(archive, db, ARCHIVE_INPUT);
		codes.push([e.statusCode, e.details.code]);
	}
	assert.deepEqual(codes, [
		[423, 'LOCKED'],
		[409, 'INVALID_STATE'],
		[409, 'REV_CONFLICT'],
		[404, 'NOT_FOUND'],
	]);
});

test('Unlock Expired: one query; CAS per atom with ignoreErrors so a renewed lock is skipped, not failed', async () => {
	const stub = new ArangoStub().cursor(
		[
			{ id: 'atoms/a1', atom_rev: '_r1' },
			{ id: 'atoms/a2', atom_rev: '_r2' },
		],
		{ writesExecuted: 2, writesIgnored: 1 },
	);
	const result = await unlockExpired.execute(stub.database(), { batch_size: 100 }, RUN);
	assert.deepEqual(result.data, {
		success: true,
		unlocked: [
			{ id: 'atoms/a1', atom_rev: '_r1' },
			{ id: 'atoms/a2', atom_rev: '_r2' },
		],
		unlocked_count: 2,
		skipped_conflicts: 1,
	});
	const [q] = stub.queries();
	// issue 25 review: a lock cleared by the sweep names no user but the system
	assert.deepEqual(q.bindVars, { batch_size: 100, unlocked_by: 'system:expired' });
	assert.match(
		q.query,
		/UPDATE atom WITH \{ locked_by: null, locked_until: null, unlocked_by: @unlocked_by \} IN atoms OPTIONS \{ ignoreRevs: false, ignoreErrors: true/,
	);
	assertQueriesSafe(stub);
});

test('Unlock Expired: default batch 500, bounded to 1000', async () => {
	const stub = new ArangoStub().cursor([]);
	await unlockExpired.execute(stub.database(), {}, RUN);
	assert.equal(stub.queries()[0].bindVars.batch_size, 500);
	const error = await failure(unlockExpired, stub.database(), { batch_size: 5000 });
	assert.deepEqual([error.statusCode, error.details.field], [422, 'batch_size']);
});

/** The lock checks, as sent: `locked_until` is compared only after normalising it to ms (ISO via DATE_TIMESTAMP). */
const INDEX_PREFILTER =
	/FILTER atom\.locked_until != null AND \(atom\.locked_until < now OR atom\.locked_until >= ""\)/;
const LOCK_CHECKS = { LOCK_AQL, ARCHIVE_AQL, MERGE_SWITCH_AQL, UNLOCK_EXPIRED_AQL };

for (const [name, aql] of Object.entries(LOCK_CHECKS)) {
	test(`${name}: an ISO locked_until (the seed's DATE_ADD) is compared in ms, never as a string`, () => {
		// (the sweep's index prefilter, tested below, is a superset: numbers below now and every string)
		const checks = aql.replace(INDEX_PREFILTER, '');
		assert.doesNotMatch(
			checks,
			/\.locked_until\s*(?:[<>]=?)\s*now/,
			'no raw comparison: AQL orders a string above every number',
		);
		assert.match(
			aql,
			/IS_NUMBER\((\w+)\.locked_until\) \? \1\.locked_until : IS_STRING\(\1\.locked_until\) \? DATE_TIMESTAMP\(\1\.locked_until\) : null/,
		);
		assert.match(
			aql,
			/(?:locked_until|until_ms) != null AND (?:locked_until|until_ms) [<>] now/,
			'a null (absent, unparsable) deadline is no lock and is not swept',
		);
	});
}

test('Unlock Expired: the index range takes numbers below now and every string (ISO deadlines), then compares in ms', () => {
	assert.match(UNLOCK_EXPIRED_AQL, INDEX_PREFILTER);
	assert.ok(
		UNLOCK_EXPIRED_AQL.indexOf('until_ms < now') < UNLOCK_EXPIRED_AQL.indexOf('LIMIT'),
		'the ms check filters before LIMIT',
	);
});

test('Unlock (§3.6.2): only the owner unlocks, whether the lock expired or not (no expiry in the check)', async () => {
	assert.match(UNLOCK_AQL, /\(atom\.locked_by != null AND atom\.locked_by != @user_id\) \? "LOCKED"/);
	assert.doesNotMatch(UNLOCK_AQL, /DATE_NOW|lock_is_active/, "expiry plays no part: expired locks are the cron's job");
	// an expired lock of u2 (the ISO deadline in the past, reported in ms) is refused to u1
	const stub = new ArangoStub().cursor([
		{ outcome: 'LOCKED', current_rev: '_rev2', locked_by: 'u2', locked_until: Date.parse('2020-01-01T00:00:00.000Z') },
	]);
	const error = await failure(unlock, stub.database(), UNLOCK_INPUT);
	assert.deepEqual(
		[error.statusCode, error.details],
		[423, { code: 'LOCKED', locked_by: 'u2', locked_until: 1_577_836_800_000 }],
	);
});

test('Lock: the holder renewing its own lock is allowed (documented deviation from §3.6.1); others get 423', () => {
	assert.match(LOCK_AQL, /\(lock_is_active AND atom\.locked_by != @user_id\) \? "LOCKED"/);
});
