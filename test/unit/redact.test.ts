/**
 * The shared redaction (nodes/shared/redact.ts): every form of a secret replaced in strings, nested
 * values, errors and cause chains; the remembered secrets applied by ContractError; the base URL check.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { baseUrlProblem, checkedBaseUrl } from '../../nodes/shared/credentialUrl';
import { ContractError } from '../../nodes/shared/errors';
import { REDACTED, Redactor, rememberSecrets } from '../../nodes/shared/redact';
import { propertyParams } from '../helpers/property';
import { assertNoSecret, secret } from '../helpers/secretScan';

const TOKEN = `123456789:AA${randomBytes(20).toString('base64url')}`;
const KEY = `sk-${randomBytes(12).toString('base64')}+/ x`;

test('every form of a secret is replaced: as is, URL-encoded (either case), + for space, JSON-escaped, Base64', () => {
	const r = new Redactor([TOKEN, KEY]);
	const forms = [
		TOKEN,
		KEY,
		encodeURIComponent(KEY),
		encodeURIComponent(KEY).toLowerCase(),
		encodeURIComponent(KEY).replace(/%20/g, '+'),
		encodeURI(KEY),
		JSON.stringify(KEY).slice(1, -1),
		Buffer.from(KEY).toString('base64'),
		Buffer.from(KEY).toString('base64url'),
	];
	for (const form of forms) assert.equal(r.string(`a ${form} b`), `a ${REDACTED} b`, form);
	assert.equal(
		r.string(`https://api.telegram.org/bot${TOKEN}/getMe and /file/bot${TOKEN}/x`),
		`https://api.telegram.org/bot${REDACTED}/getMe and /file/bot${REDACTED}/x`,
	);
});

test('short and empty secrets are ignored; nothing to redact leaves values untouched', () => {
	const r = new Redactor(['', 'abc', undefined, null, 42]);
	assert.equal(r.active, false);
	const value = { a: 'abc' };
	assert.equal(r.value(value), value);
});

test('nested values: strings redacted (keys kept), cycles kept, deep nesting does not overflow, buffers kept', () => {
	const r = new Redactor([TOKEN]);
	const cyclic: Record<string, unknown> = { [`k${TOKEN}`]: [`v${TOKEN}`, 1, null, true] };
	cyclic.self = cyclic;
	const copy = r.value(cyclic);
	assert.deepEqual(Object.keys(copy), [`k${TOKEN}`, 'self']);
	assert.deepEqual(copy[`k${TOKEN}`], [`v${REDACTED}`, 1, null, true]);
	assert.equal(copy.self, copy);
	let deep: unknown = TOKEN;
	for (let i = 0; i < 100_000; i++) deep = [deep];
	let out = r.value(deep);
	for (let i = 0; i < 100_000; i++) out = (out as unknown[])[0];
	assert.equal(out, REDACTED);
});

test('errors: a copy with name, message, stack, code and the cause chain redacted; other properties dropped', () => {
	const r = new Redactor([TOKEN]);
	const inner = Object.assign(new TypeError(`Invalid URL http//x/bot${TOKEN}/getMe`), {
		code: 'ERR_INVALID_URL',
		input: `http//x/bot${TOKEN}/getMe`,
	});
	const outer = Object.assign(new TypeError(`Failed to parse URL from http//x/bot${TOKEN}/getMe`, { cause: inner }), {
		request: { headers: { authorization: TOKEN } },
	});
	const copy = r.error(outer);
	assert.equal(copy.name, 'TypeError');
	assert.equal(copy.message, `Failed to parse URL from http//x/bot${REDACTED}/getMe`);
	assert.equal((copy.cause as { code?: string }).code, 'ERR_INVALID_URL');
	assertNoSecret('the redacted error', copy, [secret('token', TOKEN)]);
	assert.match(r.describe(outer), /^TypeError: Failed to parse URL/);
});

test('ContractError redacts the remembered secrets (8+ characters) from message, details and cause', () => {
	const remembered = `remember-${randomBytes(9).toString('hex')}`;
	rememberSecrets([remembered, 'short']);
	const error = new ContractError(
		`database error: ${remembered}`,
		503,
		'db',
		true,
		{ nested: [{ text: `x ${encodeURIComponent(remembered)}` }] },
		{},
		{ cause: new Error(remembered) },
	);
	assertNoSecret('ContractError', error, [secret('remembered', remembered)]);
	assert.equal(error.message, `database error: ${REDACTED}`);
	assert.equal(new ContractError('short stays', 400, 'validation', false).message, 'short stays');
});

test('base URL check: http(s) with a host, no whitespace, no user info; the message names the field, not the value', () => {
	const field = {
		credential: 'Contracts Telegram Bot API',
		field: 'Base URL',
		name: 'baseUrl',
		example: 'https://api.telegram.org',
	};
	for (const good of ['https://api.telegram.org', 'http://127.0.0.1:8081/', 'HTTPS://Example.com/path'])
		assert.equal(baseUrlProblem(good), null, good);
	const bad: [unknown, RegExp][] = [
		['api.telegram.org', /no scheme/],
		['localhost:8081', /no scheme/],
		['https://api.telegram .org', /whitespace/],
		[' https://api.telegram.org', /whitespace/],
		['ftp://x.org', /http/],
		['https://', /not a valid URL|no host/],
		[`https://u:${TOKEN}@api.telegram.org`, /user name or password/],
		['', /empty/],
		[undefined, /empty/],
	];
	for (const [value, problem] of bad) {
		assert.match(String(baseUrlProblem(value)), problem, String(value));
		assert.throws(
			() => checkedBaseUrl(value, field),
			(e: ContractError) =>
				e.details.code === 'BAD_CREDENTIAL_URL' &&
				e.message.startsWith('Contracts Telegram Bot API credential: Base URL (baseUrl) ') &&
				!e.message.includes(TOKEN),
		);
	}
	assert.equal(checkedBaseUrl('https://api.telegram.org//', field), 'https://api.telegram.org');
});

test('property: a secret inserted anywhere, in any form, never survives redaction', () => {
	const unit = fc.string({ unit: 'grapheme', maxLength: 30 });
	fc.assert(
		// No brackets: a secret that overlaps the marker "[REDACTED]" itself could be re-formed around it.
		fc.property(
			fc.string({ unit: 'grapheme', minLength: 4, maxLength: 40 }).filter((s) => !/[[\]]/.test(s)),
			unit,
			unit,
			(s, before, after) => {
				const r = new Redactor([s]);
				const forms = [s, encodeURIComponent(s), JSON.stringify(s).slice(1, -1), Buffer.from(s).toString('base64')];
				for (const form of forms) {
					const out = r.string(`${before}${form}${after}`);
					assert.ok(!out.includes(form), `form ${JSON.stringify(form)} survived in ${JSON.stringify(out)}`);
					const copy = r.value({ list: [`${before}${form}${after}`] });
					assert.ok(!JSON.stringify(copy).includes(form));
				}
			},
		),
		propertyParams('redact: any secret, any form', {
			numRuns: Math.min(2_000, Number(process.env.PROPERTY_RUNS) || 2_000),
		}),
	);
});
