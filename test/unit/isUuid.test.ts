/**
 * The one UUID check of the nodes (nodes/shared/contracts/ids.ts isUuid) accepts exactly the UUIDs the
 * zod contracts accept (`z.string().uuid()`), so a value is a UUID or not the same way everywhere.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { z } from 'zod';
import { isUuid } from '../../nodes/shared/contracts/ids';

const zodUuid = z.string().uuid();

test('isUuid: UUIDs of any version and case, the nil UUID; not braces, spaces, missing digits or non-strings', () => {
	for (const v of [
		randomUUID(),
		randomUUID().toUpperCase(),
		'00000000-0000-0000-0000-000000000000',
		'a0eebc99-9c0b-1ef8-bb6d-6bb9bd380a11',
	])
		assert.equal(isUuid(v), true, v);
	for (const v of [
		`{${randomUUID()}}`,
		` ${randomUUID()}`,
		randomUUID().slice(1),
		randomUUID().replace(/-/g, ''),
		'g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
		'',
		null,
		undefined,
		42,
		{},
	])
		assert.equal(isUuid(v), false, String(v));
});

test('isUuid agrees with zod .uuid() on UUIDs and on near-UUID strings', () => {
	const hex = fc.constantFrom(...'0123456789abcdefABCDEFg-');
	const nearUuid = fc.array(hex, { minLength: 34, maxLength: 38 }).map((cs) => cs.join(''));
	fc.assert(
		fc.property(fc.oneof(fc.uuid(), nearUuid, fc.string()), (v) => isUuid(v) === zodUuid.safeParse(v).success),
		{ numRuns: 2000 },
	);
});
