/**
 * Tokens for the shipped webhooks' JWT Auth (HS256, n8n's `jwtAuth` credential of scripts/lib/n8n.js
 * `jwtCredential`). `mint(sub, { secret })` signs `{ sub, ...extra }` with `secret`; `expiresIn` is
 * jsonwebtoken's form (seconds as a number, or "1h", "-1s" for an already expired token). A fresh random
 * secret per test run comes from `testSecret()`; a token signed with another secret is "wrongly signed".
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';

export interface MintOptions {
	secret: string;
	/** jsonwebtoken `expiresIn` (number = seconds, or e.g. "1h"); default 1 hour. */
	expiresIn?: number | string;
	/** Further claims (e.g. tenant_id, a custom identity claim). `sub` wins over an `extra.sub`. */
	extra?: Record<string, unknown>;
}

/** A random HS256 secret (32 bytes, base64url) for one test run. */
export function testSecret(): string {
	return randomBytes(32).toString('base64url');
}

/** A signed HS256 token for `sub`; `sub === undefined` leaves the claim out. */
export function mint(sub: string | undefined, { secret, expiresIn = 3600, extra = {} }: MintOptions): string {
	const payload = sub === undefined ? { ...extra } : { ...extra, sub };
	return jwt.sign(payload, secret, { algorithm: 'HS256', expiresIn: expiresIn as jwt.SignOptions['expiresIn'] });
}

/** The Authorization header of `token`. */
export function bearer(token: string): Record<string, string> {
	return { authorization: `Bearer ${token}` };
}

/** A random string shaped like a token (three dot-separated parts) that is not one. */
export function garbage(): string {
	return [0, 1, 2].map(() => randomBytes(12).toString('base64url')).join('.');
}

/** A forged token with `alg: none` and no signature (must be refused like a wrongly signed one). */
export function unsigned(sub: string): string {
	const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
	const now = Math.floor(Date.now() / 1000);
	return `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub, iat: now, exp: now + 3600 })}.`;
}

/** Each token of `tokens` found in `text` (a token is a secret: it must appear in no row or log). */
export function tokensIn(text: string, tokens: Iterable<string>): string[] {
	// the signature alone (when it is long enough to be unique) counts too
	return [...new Set(tokens)].filter((t) => {
		const signature = t.split('.')[2] ?? '';
		return text.includes(t) || (signature.length >= 16 && text.includes(signature));
	});
}

/**
 * Asserts that none of `minted` (more than 10 tokens) appears in any `ops.errors` row of `pool`'s
 * database (at least one row must exist to scan) or in n8n's `transcript`.
 */
export async function assertNoTokenLeaked(
	pool: { query(sql: string): Promise<{ rows: { row: string }[] }> },
	transcript: string,
	minted: Set<string>,
): Promise<void> {
	assert.ok(minted.size > 10, 'the suite minted tokens to look for');
	const { rows } = await pool.query('SELECT row_to_json(e)::text AS row FROM ops.errors e');
	assert.ok(rows.length > 0, 'the suite recorded errors to scan');
	assert.deepEqual(tokensIn(rows.map((r) => r.row).join('\n'), minted), []);
	assert.deepEqual(tokensIn(transcript, minted), []);
}
