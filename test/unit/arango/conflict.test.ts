/**
 * transport/conflict.ts: what a 409 after a lost race (errorNum 1200) is completed with, and that
 * nothing else is read again or changed. The operations' own re-reads are replayed over HTTP in
 * atom/proposal/baseline/everyOperation tests.
 */
import assert from 'node:assert/strict';
import { afterEach, test } from '@jest/globals';
import { ContractError } from '../../../nodes/shared/errors';
import { onWriteConflict, revMap, withCurrentRev } from '../../../nodes/ArangoCas/transport/conflict';
import { FIXED_MESSAGES, fromArangoError } from '../../../nodes/ArangoCas/transport/errors';
import { ArangoStub, CONFLICT_1200 } from '../../helpers/arangoHttp';

afterEach(() => ArangoStub.reset());

const where = { operation: 'update', collection: 'atoms' };
/** A 1200 as ./errors.ts builds it from an ArangoDB answer. */
function conflict1200(): ContractError {
	return new ContractError(
		FIXED_MESSAGES[1200],
		409,
		'conflict',
		false,
		{
			arango_error_num: 1200,
			arango_http_code: 409,
			arango_message: 'AQL: conflict',
			code: 'REV_CONFLICT',
			current_rev: null,
		},
		where,
		{ cause: new Error('raw') },
	);
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
	try {
		await promise;
	} catch (error) {
		return error;
	}
	assert.fail('expected a rejection');
}

test('revMap: every id once, its _rev or null; rows for other ids and malformed rows are ignored', () => {
	const revs = revMap(
		['atoms/a', 'atoms/b', 'atoms/c'],
		[['atoms/a', '_1'], ['atoms/b', null], ['atoms/x', '_9'], 'junk', ['atoms/c', 7]],
	);
	assert.deepEqual(revs, { 'atoms/a': '_1', 'atoms/b': null, 'atoms/c': null });
});

test('onWriteConflict: other errors (a REV_CONFLICT outcome, a unique violation, a 503) pass unchanged and read nothing', async () => {
	const others = [
		new ContractError(
			'atoms/a: _rev conflict',
			409,
			'conflict',
			false,
			{ code: 'REV_CONFLICT', expected_rev: '_1', current_rev: '_2' },
			where,
		),
		new ContractError('unique', 409, 'conflict', false, { code: 'UNIQUE_VIOLATION', arango_error_num: 1210 }, where),
		new ContractError('down', 503, 'db', true, { code: 'UNREACHABLE' }, where),
	];
	for (const original of others) {
		const before = structuredClone(original.details);
		let read = 0;
		const thrown = await rejectionOf(
			onWriteConflict(() => Promise.reject(original), {
				known: { x: 1 },
				message: 'm',
				reread: async () => ({ read: ++read }),
			}),
		);
		assert.equal(thrown, original);
		assert.deepEqual(original.details, before);
		assert.equal(read, 0);
	}
});

test('onWriteConflict: a 1200 gets the known facts and the re-read facts; a new message keeps status, kind, where and the ArangoDB text', async () => {
	const thrown = (await rejectionOf(
		onWriteConflict(() => Promise.reject(conflict1200()), {
			known: { expected_rev: '_e1' },
			message: 'concurrent write',
			reread: async () => ({ current_rev: '_e2', current_revs: { 'x/1': '_e2' } }),
		}),
	)) as ContractError;
	assert.ok(thrown instanceof ContractError);
	assert.deepEqual([thrown.statusCode, thrown.kind, thrown.retryable, thrown.where], [409, 'conflict', false, where]);
	assert.deepEqual(thrown.details, {
		arango_error_num: 1200,
		arango_http_code: 409,
		arango_message: 'AQL: conflict',
		code: 'REV_CONFLICT',
		expected_rev: '_e1',
		current_rev: '_e2',
		current_revs: { 'x/1': '_e2' },
	});
	assert.equal(thrown.message, 'concurrent write', "the caller's message, never ArangoDB's text (issue 25 §4)");
});

test('onWriteConflict: a re-read that throws adds nothing but the known facts', async () => {
	const thrown = (await rejectionOf(
		onWriteConflict(() => Promise.reject(conflict1200()), {
			known: { expected_rev: '_e1' },
			reread: () => Promise.reject(new Error('gone')),
		}),
	)) as ContractError;
	assert.deepEqual(thrown.details, {
		arango_error_num: 1200,
		arango_http_code: 409,
		arango_message: 'AQL: conflict',
		code: 'REV_CONFLICT',
		current_rev: null,
		expected_rev: '_e1',
	});
	assert.equal(thrown.message, FIXED_MESSAGES[1200]);
});

test('withCurrentRev: one read of every id (the first is current_rev), after a 1200 from the server', async () => {
	const stub = new ArangoStub().cursorError(...CONFLICT_1200).cursor([
		['atoms/b', '_b2'],
		['atoms/a', '_a2'],
	]);
	const db = stub.database();
	const thrown = (await rejectionOf(
		withCurrentRev(db, { ids: ['atoms/a', 'atoms/b'], expectedRev: '_a1' }, async () => {
			try {
				return await db.query('RETURN 1');
			} catch (error) {
				throw fromArangoError(error, where);
			}
		}),
	)) as ContractError;
	assert.deepEqual([thrown.statusCode, thrown.details.code], [409, 'REV_CONFLICT']);
	assert.deepEqual(
		[thrown.details.expected_rev, thrown.details.current_rev, thrown.details.current_revs],
		['_a1', '_a2', { 'atoms/a': '_a2', 'atoms/b': '_b2' }],
	);
	assert.deepEqual(stub.queries()[1].bindVars, { ids: ['atoms/a', 'atoms/b'] });
	assert.ok(stub.isDone());
});
