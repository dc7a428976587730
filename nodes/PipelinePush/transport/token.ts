/**
 * Pipeline Push tokens (seed 001 §3 step 4, variant B): a client proves it acts as `user_id` until an
 * expiry with `token = "v2." + exp + "." + base64url(HMAC-SHA256(secret, "contracts-push:v2:" + exp + ":" + user_id))`,
 * `exp` being the expiry in Unix seconds (decimal) and the secret the Contracts Push API credential's.
 * The server accepts a token until `exp` + CLOCK_SKEW_SECONDS, and refuses one whose `exp` lies more than
 * the node's Max Token Lifetime (+ skew) ahead (a token minted for longer is refused, whoever minted it).
 * Rotating the secret still revokes every token at once. The v1 form (no expiry) is refused.
 * The same formula is in scripts/mint-push-token.js (a test checks both agree).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** Domain-separation prefix of the HMAC input (a secret reused elsewhere cannot mint push tokens). */
export const PUSH_TOKEN_PREFIX = 'contracts-push:v2:';
/** Shortest secret the credential accepts (characters). */
export const MIN_PUSH_SECRET_LENGTH = 32;
/** Longest user_id accepted (characters), as a subscriber or in a token. */
export const MAX_USER_ID_LENGTH = 256;
/** Clock difference allowed between the minting backend and the server (seconds), both ways. */
export const CLOCK_SKEW_SECONDS = 60;
/** Default lifetime of a minted token (seconds): 1 hour. */
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 3600;
/** Default and greatest Max Token Lifetime of the server (seconds): 1 day and 7 days. */
export const DEFAULT_MAX_TOKEN_LIFETIME_SECONDS = 86_400;
export const MAX_TOKEN_LIFETIME_LIMIT_SECONDS = 7 * 86_400;
/** A token's shape: version, expiry (Unix seconds, at most 12 digits), 43 base64url characters. */
const TOKEN = /^v2\.([1-9][0-9]{0,11})\.([A-Za-z0-9_-]{43})$/;

/** Lone UTF-16 surrogates (not storable in PostgreSQL text, nor encodable as UTF-8). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Why `userId` cannot be a push user (null when it can): not a string, empty, longer than
 * MAX_USER_ID_LENGTH, leading/trailing white space, a control character (NUL included) or a lone surrogate.
 * The message names the field `user_id` and never quotes the value.
 */
export function userIdProblem(userId: unknown): string | null {
	if (typeof userId !== 'string') return 'user_id must be a string';
	if (userId.length === 0) return 'user_id must not be empty';
	if (userId.length > MAX_USER_ID_LENGTH) return `user_id must be at most ${MAX_USER_ID_LENGTH} characters`;
	if (userId !== userId.trim()) return 'user_id must not start or end with white space';
	if (CONTROL.test(userId)) return 'user_id must not contain control characters';
	if (LONE_SURROGATE.test(userId)) return 'user_id must be well-formed Unicode (no lone surrogates)';
	return null;
}

export interface MintOptions {
	/** Lifetime in seconds from `now` (default DEFAULT_TOKEN_LIFETIME_SECONDS); at least 1. */
	expiresInSeconds?: number;
	/** The clock (ms since the epoch; default Date.now()). */
	now?: number;
}

/**
 * The push token of `userId`, valid until now + `expiresInSeconds` (the form `v2.<exp>.<43 characters>`).
 * @throws Error when `secret` is shorter than MIN_PUSH_SECRET_LENGTH, `userId` is not a valid user id, or
 *   `expiresInSeconds` is not a whole number of seconds from 1 to MAX_TOKEN_LIFETIME_LIMIT_SECONDS (the message names the problem, never the secret)
 */
export function mintPushToken(userId: string, secret: string, options: MintOptions = {}): string {
	const lifetime = options.expiresInSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
	if (!Number.isSafeInteger(lifetime) || lifetime < 1 || lifetime > MAX_TOKEN_LIFETIME_LIMIT_SECONDS)
		throw new Error(
			`expiresInSeconds must be a whole number of seconds from 1 to ${MAX_TOKEN_LIFETIME_LIMIT_SECONDS} (7 days)`,
		);
	const exp = Math.floor((options.now ?? Date.now()) / 1000) + lifetime;
	return `v2.${exp}.${mac(userId, exp, secret)}`;
}

function mac(userId: string, exp: number, secret: string): string {
	if (typeof secret !== 'string' || secret.length < MIN_PUSH_SECRET_LENGTH)
		throw new Error(`the push secret must be at least ${MIN_PUSH_SECRET_LENGTH} characters`);
	const problem = userIdProblem(userId);
	if (problem) throw new Error(problem);
	return createHmac('sha256', secret).update(`${PUSH_TOKEN_PREFIX}${exp}:${userId}`, 'utf8').digest('base64url');
}

export interface VerifyOptions {
	/** The clock (ms since the epoch; default Date.now()). */
	now?: number;
	/** Greatest lifetime accepted (seconds from now to `exp`; default DEFAULT_MAX_TOKEN_LIFETIME_SECONDS). */
	maxLifetimeSeconds?: number;
	/** Clock skew allowed (seconds; default CLOCK_SKEW_SECONDS). */
	skewSeconds?: number;
}

/**
 * Why a token is refused: `invalid` (malformed, the v1 form, wrong user or secret), `expired` (`exp` +
 * CLOCK_SKEW_SECONDS has passed) or `too_long` (`exp` more than the max lifetime + skew ahead). A token
 * is only said to be expired or too long when its signature is right.
 */
export type PushTokenCheck =
	| { ok: true; expiresAt: number }
	| { ok: false; reason: 'invalid' | 'expired' | 'too_long' };

/**
 * Checks `token` for `userId` under `secret` at `options.now`. The signature is compared in constant time
 * (both sides hashed to 32 bytes first, so neither the length nor a prefix of the expected value leaks).
 * `expiresAt` is `exp` in Unix seconds. Never throws: any non-string, invalid user id or short secret is
 * `invalid`.
 */
export function checkPushToken(
	userId: unknown,
	token: unknown,
	secret: string,
	options: VerifyOptions = {},
): PushTokenCheck {
	const invalid = { ok: false, reason: 'invalid' } as const;
	if (typeof token !== 'string' || token.length > 256) return invalid;
	if (typeof userId !== 'string' || userIdProblem(userId) !== null) return invalid;
	const match = TOKEN.exec(token);
	if (!match) return invalid;
	const exp = Number(match[1]);
	let expected: string;
	try {
		expected = mac(userId, exp, secret);
	} catch {
		return invalid;
	}
	const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
	if (!timingSafeEqual(digest(match[2]), digest(expected))) return invalid;
	const now = Math.floor((options.now ?? Date.now()) / 1000);
	const skew = options.skewSeconds ?? CLOCK_SKEW_SECONDS;
	if (now > exp + skew) return { ok: false, reason: 'expired' };
	const max = options.maxLifetimeSeconds ?? DEFAULT_MAX_TOKEN_LIFETIME_SECONDS;
	if (exp - now > max + skew) return { ok: false, reason: 'too_long' };
	return { ok: true, expiresAt: exp };
}

/** True when `checkPushToken` accepts `token` (see there). Never throws. */
export function verifyPushToken(userId: unknown, token: unknown, secret: string, options: VerifyOptions = {}): boolean {
	return checkPushToken(userId, token, secret, options).ok;
}
