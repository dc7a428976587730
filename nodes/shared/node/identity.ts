/**
 * Who is calling: the Identity fields of the operations that act as a user (ArangoCAS atom.lock,
 * atom.unlock, atom.archive, proposal.create (its author), proposal.merge, proposal.reject, baseline.create,
 * analysis.loadContext / saveResult / saveError — the last five from node version 2; PipelineCapture
 * run.createRun, run.getStatus), and the resolver that turns them and the input item into the operation's
 * `user_id`.
 *
 * - Identity "Verified Token Claim" (`token`, the default): `user_id` is a claim (default `sub`) of the
 *   item's `json.jwtPayload`, which n8n's Webhook node puts on its item after verifying the caller's JWT
 *   (Authentication = JWT Auth). A body `user_id` that differs from it is refused.
 * - Identity "User ID Field" (`field`): `user_id` is the User ID field, for callers n8n authenticated
 *   another way (Header Auth from a trusted backend) and sub-workflows.
 *
 * Errors are ContractErrors of kind `auth`, never retryable: 401 UNAUTHENTICATED, 403
 * IDENTITY_CLAIM_INVALID, 403 IDENTITY_MISMATCH. They name the claim, never the token, a header or the
 * body's value.
 */
import type { IDataObject, IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import { ContractError } from '../errors';
import { isRecord } from '../json';
import { replaceUnstorable } from '../sanitize';
import { fromBody, readFields, snakeOf, type DirectDefaults, type FieldInit } from './fields';

/** Longest identity accepted from a token claim (the operations' user_id limit). */
export const MAX_IDENTITY_LENGTH = 256;
/** Claim read when the Identity Claim field is empty. */
export const DEFAULT_CLAIM = 'sub';

const WHERE = { operation: 'authenticate' };

/**
 * The three Identity fields, for `fieldsOf` (in place of a plain User ID field):
 * `identity` (options `token` | `field`, default `token`), `identityClaim` (shown for `token`, default
 * `sub`) and `userId` (shown for `field`, default: the body's, else the item's `user_id`).
 * @param who what the user does in this operation, e.g. "Who takes the lock (stored in locked_by)"
 * @param as the input key the identity fills and the body key checked against the token: `user_id`
 *        (field `userId`, "User ID") or `author` (field `author`, "Author")
 * @param options.sinceVersion the first node version that has the fields (`@version` >= it): on an older
 *        node they are hidden and the operation acts as no one (`readOperationInput` gives the identity key
 *        null), as it did before it took an identity — a saved workflow keeps working (ArangoCAS v1)
 */
export function identityFields(
	who: string,
	as: 'user_id' | 'author' = 'user_id',
	options: { sinceVersion?: number } = {},
): FieldInit[] {
	const field =
		as === 'author' ? { displayName: 'Author', name: 'author' } : { displayName: 'User ID', name: 'userId' };
	const since = options.sinceVersion === undefined ? {} : { '@version': [{ _cnd: { gte: options.sinceVersion } }] };
	const fields: FieldInit[] = [
		{
			displayName: 'Identity',
			name: 'identity',
			type: 'options',
			default: 'token',
			options: [
				{
					name: 'Verified Token Claim',
					value: 'token',
					description:
						'The user is a claim of the JWT the Webhook node verified (its Authentication set to JWT Auth); a body user_id that differs is refused with 403',
				},
				{
					name: 'User ID Field',
					value: 'field',
					description: `The user is the ${field.displayName} field: only for callers n8n authenticated another way (e.g. Header Auth from a trusted backend) or sub-workflows`,
				},
			],
			description: `${who}: where that user comes from. Without a verified token the item fails with 401; an unusable claim or a different body ${as} with 403.`,
		},
		{
			displayName: 'Identity Claim',
			name: 'identityClaim',
			default: DEFAULT_CLAIM,
			show: { identity: ['token'] },
			description:
				'Claim of the verified JWT payload ($json.jwtPayload) that holds the user ID: a non-empty string or an integer, at most 256 characters',
		},
		{
			...field,
			required: true,
			default: fromBody(as),
			show: { identity: ['field'] },
			description: `${who}. Trusted as given: use only behind a caller n8n authenticated.`,
		},
	];
	return fields.map((f) => ({ ...f, show: { ...f.show, ...since } }));
}

/** The Identity fields' values as `readFields` returns them. */
export interface IdentityParams {
	/** `token` (default when unset) or `field`. */
	identity?: unknown;
	/** Claim name for `token` (default `sub`). */
	identity_claim?: unknown;
	/** The User ID (or Author) field for `field`. */
	user_id?: unknown;
}

function authError(message: string, statusCode: 401 | 403, details: Record<string, unknown>): ContractError {
	return statusCode === 401
		? ContractError.unauthorized(message, details, WHERE)
		: ContractError.forbidden(message, details, WHERE);
}

function invalidParam(field: string, message: string): ContractError {
	return ContractError.validation(
		`invalid input: ${field} ${message}`,
		{ code: 'VALIDATION', field },
		{ operation: 'validate' },
	);
}

/** Reads `record[key]` as an own property (never the prototype's); a throwing getter reads as `failed`. */
function ownValue(record: Record<string, unknown>, key: string): { value?: unknown; failed?: true } {
	try {
		return Object.prototype.hasOwnProperty.call(record, key) ? { value: record[key] } : {};
	} catch {
		return { failed: true };
	}
}

/**
 * The identity a verified token gives: claim `claim` of `json.jwtPayload`, as a string (a safe integer
 * is String()-ed), after checking that the body does not name another user.
 * The identity is returned exactly as the operations store it: a claim with leading or trailing white
 * space is refused rather than trimmed, so " alice" can never act as "alice".
 * @param bodyKey the body key that must not name another user (`user_id`, or `author` for proposals)
 * @throws ContractError 401 UNAUTHENTICATED when `json.jwtPayload` is missing (no JWT verified)
 * @throws ContractError 403 IDENTITY_CLAIM_INVALID when the payload is not an object, or the claim is
 *         missing, not a non-blank string or safe integer, has leading/trailing white space, is longer than
 *         256 characters, or contains NUL or a lone surrogate (`details.claim`)
 * @throws ContractError 403 IDENTITY_MISMATCH when `json.body[bodyKey]` is neither null nor undefined and
 *         differs from the identity (a number is compared as its String(); any other type differs)
 */
export function tokenIdentity(json: IDataObject | Record<string, unknown>, claim: string, bodyKey = 'user_id'): string {
	const payload = ownValue(json, 'jwtPayload');
	const invalid = (reason: string) =>
		authError(
			`the token's claim "${claim}" ${reason}: issue tokens whose "${claim}" is the user ID, or set Identity Claim to the claim that holds it`,
			403,
			{
				code: 'IDENTITY_CLAIM_INVALID',
				claim,
			},
		);
	// A verified token whose payload is not a JSON object (jsonwebtoken returns it as a string) has no claims.
	if (payload.value !== undefined && payload.value !== null && !isRecord(payload.value))
		throw invalid("is missing (the token's payload is not a JSON object)");
	if (!isRecord(payload.value)) {
		throw authError(
			"no verified token on the item (json.jwtPayload is missing): set the Webhook node's Authentication to JWT Auth, or Identity to User ID Field",
			401,
			{ code: 'UNAUTHENTICATED' },
		);
	}
	const raw = ownValue(payload.value, claim).value; // an unreadable claim reads as missing
	if (raw === undefined || raw === null) throw invalid('is missing');
	if (!(typeof raw === 'string' && raw.trim() !== '') && !(typeof raw === 'number' && Number.isSafeInteger(raw))) {
		throw invalid('is not a non-empty string or an integer');
	}
	const identity = String(raw);
	if (identity !== identity.trim()) throw invalid('has leading or trailing white space');
	if (identity.length > MAX_IDENTITY_LENGTH) throw invalid(`is longer than ${MAX_IDENTITY_LENGTH} characters`);
	if (replaceUnstorable(identity).replaced) throw invalid('contains NUL or a lone surrogate');
	const body = ownValue(json, 'body');
	// Only an object body carries a user id; an unreadable one cannot be checked, so it is refused.
	const claimed = isRecord(body.value) ? ownValue(body.value, bodyKey) : body.failed ? body : {};
	if (claimed.failed || (claimed.value !== undefined && claimed.value !== null && !sameUser(claimed.value, identity))) {
		throw authError(
			`the body's ${bodyKey} is not the user of the token (claim "${claim}"): send the token of that user, or leave ${bodyKey} out of the body`,
			403,
			{ code: 'IDENTITY_MISMATCH', claim, field: `body.${bodyKey}` },
		);
	}
	return identity;
}

/** A body user_id names `identity`: the same string, or a number whose String() is it. */
function sameUser(value: unknown, identity: string): boolean {
	if (typeof value === 'string') return value === identity;
	if (typeof value === 'number') return String(value) === identity;
	return false;
}

/**
 * The `user_id` an operation acts as, from its Identity fields and the input item's json.
 * `token` (or unset): `tokenIdentity(json, identity_claim || "sub")`, a string. `field`: the User ID
 * field as read, null read as missing (the operation validates it: 422 when missing).
 * @param bodyKey the body key checked against the token (`user_id`, or `author`)
 * @throws ContractError 401/403 (see tokenIdentity); 422 VALIDATION for an Identity other than
 *         token/field or an Identity Claim that is not a name of 1–256 characters
 */
export function resolveUserId(
	params: IdentityParams,
	json: IDataObject | Record<string, unknown>,
	bodyKey = 'user_id',
): unknown {
	const mode = params.identity ?? 'token';
	// null only ever means "no Identity fields" (readOperationInput): an empty User ID field stays missing (422)
	if (mode === 'field') return params.user_id ?? undefined;
	if (mode !== 'token') throw invalidParam('identity', 'must be token or field');
	const claim = params.identity_claim ?? DEFAULT_CLAIM;
	if (typeof claim !== 'string' || claim.trim() === '' || claim.length > MAX_IDENTITY_LENGTH) {
		throw invalidParam('identity_claim', `must be a claim name of 1–${MAX_IDENTITY_LENGTH} characters`);
	}
	return tokenIdentity(json, claim.trim(), bodyKey);
}

/** Whether an operation's fields include the Identity fields. */
export function hasIdentity(fields: INodeProperties[]): boolean {
	return fields.some((f) => f.name === 'identity');
}

/** The input key the identity fills: that of the field shown for Identity = User ID Field (`user_id` or `author`). */
function identityKey(fields: INodeProperties[]): string {
	const field = fields.find((f) => (f.displayOptions?.show?.identity as unknown[] | undefined)?.includes('field'));
	return field ? snakeOf(field.name) : 'user_id';
}

/**
 * Reads an operation's fields for one item (`readFields`) and, when it has the Identity fields,
 * replaces `identity`, `identity_claim` and the identity key (`user_id`, or `author` for proposals) by the
 * resolved identity (null when the node's version hides the Identity fields: see identityFields `sinceVersion`). Both contract nodes call it after setting the item's ctx, so an identity error item
 * keeps its ctx. `direct`: as readFields (default expressions computed from the item).
 * @throws ContractError 401/403/422 as resolveUserId
 */
export function readOperationInput(
	fn: IExecuteFunctions,
	itemIndex: number,
	fields: INodeProperties[],
	json: IDataObject,
	direct?: DirectDefaults,
): Record<string, unknown> {
	const input = readFields(fn, itemIndex, fields, direct);
	if (!hasIdentity(fields)) return input;
	const key = identityKey(fields);
	// Identity hidden on this node version (identityFields `sinceVersion`): no user, as before it had one
	if (!('identity' in input)) return { ...input, [key]: null };
	const { identity, identity_claim, [key]: value, ...rest } = input;
	return { ...rest, [key]: resolveUserId({ identity, identity_claim, user_id: value }, json, key) };
}
