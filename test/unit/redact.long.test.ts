/**
 * Redaction of very long secrets (review of issue 10 item 5): no regular expression is built from a
 * secret, so a 40 KB secret neither breaks ContractError nor leaks through a SyntaxError; long secrets
 * and their truncated copies are removed; object keys are kept; only distinctive secrets are remembered.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { ContractError } from '../../nodes/shared/errors';
import {
	REDACTED,
	Redactor,
	isDistinctiveSecret,
	redactorFor,
	rememberSecrets,
	rememberedSecrets,
} from '../../nodes/shared/redact';
import { propertyParams } from '../helpers/property';

test("a 40 KB secret remembered with other tenants' secrets: ContractError still builds and leaks nothing", () => {
	const huge = `Huge-${randomBytes(30_000).toString('base64')}`.slice(0, 40_000);
	const others = Array.from({ length: 20 }, () => `tenant-${randomBytes(12).toString('hex')}`);
	rememberSecrets([huge, ...others]);
	const started = Date.now();
	const error = new ContractError(
		`boom ${huge} and ${others[3]} and ${encodeURIComponent(huge).slice(0, 500)}`,
		500,
		'unknown',
		false,
		{ note: others[7], cause: `x${huge.slice(0, 1000)}` },
		{},
		{ cause: new Error(`inner ${huge}`) },
	);
	const text = `${error.message} ${error.stack} ${JSON.stringify(error.details)} ${(error.cause as Error).message}`;
	for (const s of [huge.slice(0, 64), ...others]) assert.ok(!text.includes(s), 'a secret leaked');
	assert.ok(error.message.startsWith(`boom ${REDACTED} and ${REDACTED} and ${REDACTED}`), error.message.slice(0, 200));
	assert.ok(Date.now() - started < 5_000);
	// and the remembered redactor keeps working for later errors
	assert.equal(new ContractError(`again ${others[0]}`, 400, 'validation', false).message, `again ${REDACTED}`);
});

test('256 secrets of 16 KiB are remembered in seconds, not minutes', () => {
	const started = Date.now();
	const many = Array.from({ length: 256 }, (_, i) =>
		`K${i}-${randomBytes(12_300).toString('base64')}`.slice(0, 16_384),
	);
	rememberSecrets(many);
	assert.equal(rememberedSecrets().string(`a ${many[255]} b`), `a ${REDACTED} b`);
	assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
	assert.equal(redactorFor([many[1]]), redactorFor([many[1]]), 'one Redactor per credential');
});

test('property: long secrets (up to 64 KB), whole or cut short to at least 64 characters, in any form, are removed', () => {
	fc.assert(
		fc.property(
			fc.string({ minLength: 65, maxLength: 2000, unit: 'grapheme-ascii' }),
			fc.integer({ min: 0, max: 64 * 1024 }),
			fc.constantFrom('raw', 'upper', 'uri', 'json', 'base64'),
			fc.integer({ min: 64, max: 70_000 }),
			fc.string({ maxLength: 20 }),
			fc.string({ maxLength: 20 }),
			(seed, extra, formName, cut, before, after) => {
				const secret = (seed + 'x'.repeat(extra)).slice(0, 64 * 1024);
				const form = {
					raw: secret,
					upper: secret.toUpperCase(),
					uri: encodeURIComponent(secret),
					json: JSON.stringify(secret).slice(1, -1),
					base64: Buffer.from(secret).toString('base64'),
				}[formName]!;
				const piece = form.slice(0, Math.max(64, Math.min(cut, form.length)));
				const out = new Redactor([secret]).string(`${before}${piece}${after}`);
				assert.ok(
					!out.includes(piece.slice(0, 64)) && out.includes(REDACTED),
					`${formName} cut at ${piece.length} leaked`,
				);
			},
		),
		propertyParams('long secrets', { numRuns: Math.min(Number(process.env.PROPERTY_RUNS ?? 300), 300) }),
	);
});

test('object keys are never renamed (two keys cannot collide)', () => {
	const token = `Tok-${randomBytes(8).toString('hex')}`;
	const copy = new Redactor([token]).value({ [`a${token}`]: 1, [`a${REDACTED}`]: 2, v: token });
	assert.deepEqual(copy, { [`a${token}`]: 1, [`a${REDACTED}`]: 2, v: REDACTED });
});

test('only distinctive secrets are remembered process-wide; ordinary words are not', () => {
	for (const word of ['postgres', 'password', 'Password', 'PASSWORD', '12345678', 'contracts'])
		assert.equal(isDistinctiveSecret(word), false, word);
	for (const s of ['hunter2hunter', 'Sup3rSecretPw', '123456:ABC-def', 'CorrectHorseBatteryStaple'])
		assert.equal(isDistinctiveSecret(s), true, s);
	rememberSecrets(['contracts', 'postgres']);
	assert.equal(
		new ContractError('relation contracts.x for postgres', 500, 'db', false).message,
		'relation contracts.x for postgres',
	);
	assert.equal(
		new Redactor(['postgres']).string('user postgres'),
		`user ${REDACTED}`,
		'still redacted by its own credential',
	);
});

test('case folding is per code point and context-free: astral letters, İ and final sigma next to a secret', () => {
	for (const [secret, text] of [
		['𐐀    ', 'İ𐐀    '],
		['ΑΣ-Secret-9', 'xΑΣ-Secret-9 '],
		['Key-İ-1234', 'a Key-İ-1234'],
	]) {
		assert.ok(!new Redactor([secret]).string(text).includes(secret), `${secret} in ${text}`);
	}
});
