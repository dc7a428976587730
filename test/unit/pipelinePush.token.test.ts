/**
 * Pipeline Push tokens (nodes/PipelinePush/transport/token.ts): HMAC-SHA256 of the user_id, checked in
 * constant time; scripts/mint-push-token.js mints the same token; anything else is refused, never thrown.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { contractsPushApiTest } from '../../nodes/PipelinePush/transport/credentialTest';
import { mintPushToken, userIdProblem, verifyPushToken } from '../../nodes/PipelinePush/transport/token';
import { hostileString, propertyParams } from '../helpers/property';

const SECRET = randomBytes(32).toString('base64url');
const SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'mint-push-token.js');

test('a minted token verifies for its user only, and not under another secret', () => {
	const token = mintPushToken('alice', SECRET);
	assert.match(token, /^[A-Za-z0-9_-]{43}$/);
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

test('mintPushToken refuses a short secret and a bad user_id, naming the problem, never the secret', () => {
	assert.throws(() => mintPushToken('alice', 'short-secret'), /at least 32 characters/);
	for (const bad of ['', ' alice', 'a\u0000b', 'x\ud800', 'y'.repeat(257)])
		assert.throws(
			() => mintPushToken(bad, SECRET),
			(e: Error) => /^user_id/.test(e.message) && !e.message.includes(SECRET),
		);
});

test('scripts/mint-push-token.js prints the same token as mintPushToken; usage errors exit 2 without the secret', () => {
	const out = execFileSync(process.execPath, [SCRIPT, '--user', 'alice@example.com'], {
		env: { ...process.env, PUSH_SECRET: SECRET },
	}).toString();
	assert.equal(out, `${mintPushToken('alice@example.com', SECRET)}\n`);
	for (const [args, env] of [
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

test('property: verify(user, token) is true exactly when token = mint(user); hostile inputs never throw', () => {
	fc.assert(
		fc.property(
			hostileString(300),
			fc.oneof(hostileString(60), fc.anything()),
			fc.boolean(),
			(user, other, useMint) => {
				const valid = userIdProblem(user) === null;
				const token = useMint && valid ? mintPushToken(user, SECRET) : other;
				const expected = valid && typeof token === 'string' && token === mintPushToken(user, SECRET);
				assert.equal(verifyPushToken(user, token, SECRET), expected);
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
