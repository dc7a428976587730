/**
 * Pipeline Push tokens (seed 001 §3 step 4, variant B): a client proves it acts as `user_id` with
 * `token = base64url(HMAC-SHA256(secret, "contracts-push:v1:" + user_id))`, the secret being the Contracts
 * Push API credential's. The token does not expire: rotate the secret to revoke every token at once.
 * The same formula is in scripts/mint-push-token.js (a test checks both agree).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** Domain-separation prefix of the HMAC input (a secret reused elsewhere cannot mint push tokens). */
export const PUSH_TOKEN_PREFIX = 'contracts-push:v1:';
/** Shortest secret the credential accepts (characters). */
export const MIN_PUSH_SECRET_LENGTH = 32;
/** Longest user_id accepted (characters), as a subscriber or in a token. */
export const MAX_USER_ID_LENGTH = 256;

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

/**
 * The push token of `userId` (43 base64url characters).
 * @throws Error when `secret` is shorter than MIN_PUSH_SECRET_LENGTH or `userId` is not a valid user id
 *   (the message names the problem, never the secret)
 */
export function mintPushToken(userId: string, secret: string): string {
	if (typeof secret !== 'string' || secret.length < MIN_PUSH_SECRET_LENGTH)
		throw new Error(`the push secret must be at least ${MIN_PUSH_SECRET_LENGTH} characters`);
	const problem = userIdProblem(userId);
	if (problem) throw new Error(problem);
	return createHmac('sha256', secret)
		.update(PUSH_TOKEN_PREFIX + userId, 'utf8')
		.digest('base64url');
}

/**
 * True when `token` is `userId`'s push token under `secret`. Compared in constant time (both sides hashed
 * to 32 bytes first, so neither the length nor a prefix of the expected token leaks). Never throws: any
 * non-string, invalid user id or short secret is false.
 */
export function verifyPushToken(userId: unknown, token: unknown, secret: string): boolean {
	if (typeof token !== 'string' || token.length > 256) return false;
	if (typeof userId !== 'string' || userIdProblem(userId) !== null) return false;
	let expected: string;
	try {
		expected = mintPushToken(userId, secret);
	} catch {
		return false;
	}
	const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
	return timingSafeEqual(digest(token), digest(expected));
}
