/**
 * Pipeline Push tokens (nodes/PipelinePush/transport/token.ts): HMAC-SHA256 of the user_id and an expiry,
 * checked in constant time, accepted until the expiry + 60 s of clock skew and refused when they live longer
 * than the max lifetime; scripts/mint-push-token.js mints the same token; anything else is refused, never thrown.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { contractsPushApiTest } from '../../nodes/PipelinePush/transport/credentialTest';
import { createHmac } from 'node:crypto';
import {
	checkPushToken,
	CLOCK_SKEW_SECONDS,
	mintPushToken,
	userIdProblem,
	verifyPushToken,
} from '../../nodes/PipelinePush/transport/token';
import { hostileString, propertyParams } from '../helpers/property';

const SECRET = randomBytes(32).toString('base64url');
const SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'mint-push-token.js');

test('a minted token verifies for its user only, and not under another secret', () => {
	const token = mintPushToken('alice', SECRET);
	assert.match(token, /^v2\.[0-9]{10}\.[A-Za-z0-9_-]{43}$/);
	assert.equal(verifyPushToken('alice', token, SECRET), true);
	assert.equal(verifyPushToken('bob', token, SECRET), false);
	assert.equal(verifyPushToken('alice', token, randomBytes(32).toString('base64url')), false);
	assert.equal(verifyPushToken('alice', token.slice(0, -1), SECRET), false);
	assert.equal(verifyPushToken('alice', `${token}A`, SECRET), false);
	assert.equal(
		verifyPushToken('alice', token.toLowerCase() === token ? token.toUpperCase() : token.toLowerCase(), SECRET),
		false,
	);
});

test('expiry: accepted until exp + 60 s of skew, then "expired"; a token living longer than the max is "too_long"', () => {
	const now = 1_800_000_000_000; // ms
	const token = mintPushToken('alice', SECRET, { expiresInSeconds: 600, now });
	const exp = now / 1000 + 600;
	assert.deepEqual(checkPushToken('alice', token, SECRET, { now }), { ok: true, expiresAt: exp });
	assert.equal(checkPushToken('alice', token, SECRET, { now: (exp + CLOCK_SKEW_SECONDS) * 1000 }).ok, true);
	assert.deepEqual(checkPushToken('alice', token, SECRET, { now: (exp + CLOCK_SKEW_SECONDS + 1) * 1000 }), {
		ok: false,
		reason: 'expired',
	});
	// a token from a backend whose clock is up to 60 s ahead is still accepted
	const long = mintPushToken('alice', SECRET, { expiresInSeconds: 3600, now });
	assert.equal(checkPushToken('alice', long, SECRET, { now, maxLifetimeSeconds: 3600 }).ok, true);
	assert.equal(checkPushToken('alice', long, SECRET, { now: now - 60_000, maxLifetimeSeconds: 3600 }).ok, true);
	assert.deepEqual(checkPushToken('alice', long, SECRET, { now: now - 61_000, maxLifetimeSeconds: 3600 }), {
		ok: false,
		reason: 'too_long',
	});
	assert.deepEqual(checkPushToken('alice', long, SECRET, { now, maxLifetimeSeconds: 600 }), {
		ok: false,
		reason: 'too_long',
	});
	// a wrong signature is "invalid", never "expired", whatever its exp says
	const forged = `v2.${exp - 10_000}.${token.split('.')[2]}`;
	assert.deepEqual(checkPushToken('alice', forged, SECRET, { now }), { ok: false, reason: 'invalid' });
	// the exp is signed: moving it forward breaks the signature
	assert.equal(verifyPushToken('alice', `v2.${exp + 1}.${token.split('.')[2]}`, SECRET, { now }), false);
	// the v1 form (no expiry) is refused
	const v1 = createHmac('sha256', SECRET).update('contracts-push:v1:alice', 'utf8').digest('base64url');
	assert.equal(verifyPushToken('alice', v1, SECRET), false);
	assert.throws(() => mintPushToken('alice', SECRET, { expiresInSeconds: 0 }), /expiresInSeconds/);
	assert.throws(() => mintPushToken('alice', SECRET, { expiresInSeconds: 8 * 86400 }), /7 days/);
});

test('mintPushToken refuses a short secret and a bad user_id, naming the problem, never the secret', () => {
	assert.throws(() => mintPushToken('alice', 'short-secret'), /at least 32 characters/);
	for (const bad of ['', ' alice', 'a\u0000b', 'x\ud800', 'y'.repeat(257)])
		assert.throws(
			() => mintPushToken(bad, SECRET),
			(e: Error) => /^user_id/.test(e.message) && !e.message.includes(SECRET),
		);
});

test('scripts/mint-push-token.js prints the same token as mintPushToken; usage errors exit 2 without the secret', () => {
	for (const [args, lifetime] of [
		[[], 3600],
		[['--expires-in', '15m'], 900],
		[['--expires-in', '90'], 90],
		[['--expires-in', '2d'], 172_800],
	] as const) {
		const before = Date.now();
		const out = execFileSync(process.execPath, [SCRIPT, '--user', 'alice@example.com', ...args], {
			env: { ...process.env, PUSH_SECRET: SECRET },
		}).toString();
		const after = Date.now();
		const exp = Number(out.split('.')[1]);
		assert.ok(exp >= Math.floor(before / 1000) + lifetime && exp <= Math.floor(after / 1000) + lifetime, out);
		// the same formula: mintPushToken at the script's second gives the same text
		assert.equal(
			out,
			`${mintPushToken('alice@example.com', SECRET, { expiresInSeconds: lifetime, now: (exp - lifetime) * 1000 })}\n`,
		);
	}
	for (const [args, env] of [
		[['--user', 'alice', '--expires-in', '8d'], { PUSH_SECRET: SECRET }],
		[['--user', 'alice', '--expires-in', '1w'], { PUSH_SECRET: SECRET }],
		[['--user', 'alice', '--expires-in', '0'], { PUSH_SECRET: SECRET }],
		[['--user', 'alice'], { PUSH_SECRET: 'short' }],
		[[], { PUSH_SECRET: SECRET }],
		[['--user', ' alice'], { PUSH_SECRET: SECRET }],
		[['--user', 'alice'], { PUSH_SECRET: '' }],
	] as const) {
		const r = spawnSync(process.execPath, [SCRIPT, ...args], { env: { ...process.env, ...env } });
		assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
		assert.ok(!r.stderr.toString().includes(SECRET) && r.stdout.length === 0);
	}
});

test('the credential test: a secret of 32+ characters is OK, shorter is an Error naming the field', async () => {
	const run = (secret: unknown) =>
		contractsPushApiTest.call({} as never, { id: 'x', name: 'x', type: 'contractsPushApi', data: { secret } } as never);
	assert.equal((await run(SECRET)).status, 'OK');
	const short = await run('0123456789');
	assert.equal(short.status, 'Error');
	assert.match(short.message, /Token Secret \(secret\): at least 32/);
	assert.ok(!short.message.includes('0123456789'));
	assert.equal((await run(undefined)).status, 'Error');
});

test('property: verify(user, token) is true exactly when token = mint(user) and unexpired; hostile inputs never throw', () => {
	const now = Date.now();
	fc.assert(
		fc.property(
			hostileString(300),
			fc.oneof(hostileString(60), fc.anything(), fc.constantFrom('v2.1.', 'v2.99999999999.x', 'v1.1.a')),
			fc.boolean(),
			fc.integer({ min: 1, max: 86_400 }),
			fc.integer({ min: -100_000, max: 100_000 }),
			(user, other, useMint, lifetime, shift) => {
				const valid = userIdProblem(user) === null;
				const minted = valid ? mintPushToken(user, SECRET, { expiresInSeconds: lifetime, now }) : undefined;
				const token = useMint && valid ? minted : other;
				const at = now + shift * 1000;
				const exp = Math.floor(now / 1000) + lifetime;
				const live =
					Math.floor(at / 1000) <= exp + CLOCK_SKEW_SECONDS &&
					exp - Math.floor(at / 1000) <= 86_400 + CLOCK_SKEW_SECONDS;
				const expected = valid && typeof token === 'string' && token === minted && live;
				assert.equal(verifyPushToken(user, token, SECRET, { now: at }), expected);
				if (valid) assert.equal(verifyPushToken(user, mintPushToken(user, SECRET), SECRET), true);
			},
		),
		propertyParams('push token verify'),
	);
});

test('property: userIdProblem accepts exactly trimmed, non-empty, ≤256, control-free, well-formed strings', () => {
	fc.assert(
		fc.property(fc.oneof(hostileString(300), fc.anything()), (value) => {
			const expected =
				typeof value === 'string' &&
				value.length > 0 &&
				value.length <= 256 &&
				value === value.trim() &&
				// eslint-disable-next-line no-control-regex
				!/[\u0000-\u001f\u007f]/.test(value) &&
				Buffer.from(value, 'utf8').toString('utf8') === value;
			assert.equal(userIdProblem(value) === null, expected, JSON.stringify(value));
		}),
		propertyParams('push user_id check'),
	);
});
