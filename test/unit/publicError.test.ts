/**
 * The public projection of an ErrorEnvelope (issue 25 §4): what the webhooks answer outside callers.
 * `publicError` on a table of errors, and the Error Pipe's envelope of a webhook's error item: its `public`
 * carries only ok/status_code/kind/message/correlation_id (+ the field of a validation error), never the
 * request (headers, body, webhookUrl, jwtPayload), ctx, error_context or `_internal`. A fast-check property
 * over hostile items checks the same for any input.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from '@jest/globals';
import fc from 'fast-check';
import {
	ErrorEnvelope,
	MAX_PUBLIC_MESSAGE_LENGTH,
	PublicError,
	type ErrorKind,
} from '../../nodes/shared/contracts/envelope';
import { failure, publicError, publicRunError } from '../../nodes/shared/envelopeBuilders';
import { errorJson } from '../../nodes/shared/node/runItems';
import { ContractError } from '../../nodes/shared/errors';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { hostileString, propertyParams } from '../helpers/property';
import { ArangoStub, CONFLICT_1200 } from '../helpers/arangoHttp';
import { failure as arangoFailure } from '../helpers/arangoOps';
import { RESOURCES } from '../../nodes/ArangoCas/actions';

const CORRELATION_ID = '6f1d2c3b-4a59-4e68-8f7a-0b1c2d3e4f50';
const KEYS = new Set([
	'ok',
	'status_code',
	'kind',
	'message',
	'correlation_id',
	'field',
	'code',
	'current_rev',
	'current_revs',
	'locked_until',
]);
/** A marker put in every place the answer must not come from: it never appears in a public answer. */
const MARK = 'INTERNAL-ONLY-7c1e';

/** A webhook's error item as it reaches the Error Pipe: the request's fields next to the node's error. */
function webhookErrorItem(error: ContractError, extra: Record<string, unknown> = {}): Record<string, unknown> {
	return {
		headers: { 'x-forwarded-for': `10.0.0.5 ${MARK}`, host: `n8n.internal:5678 ${MARK}` },
		body: { doc_id: `docs/${MARK}`, note: MARK },
		query: { q: MARK },
		webhookUrl: `http://n8n.internal:5678/webhook/arango/baseline?${MARK}`,
		jwtPayload: { sub: `user ${MARK}`, iat: 1 },
		executionMode: 'production',
		...errorJson(
			error,
			{ name: 'Create Baseline', type: 'n8n-nodes-contracts.arangoCas' },
			{
				correlation_id: CORRELATION_ID,
				workflow: `A3.3 ${MARK}`,
				node: 'Create Baseline',
				job_id: 17,
			},
		),
		_err: { node: 'Create Baseline', operation: 'insert', table: `baselines ${MARK}` },
		...extra,
	};
}

function assertPublicOnly(answer: unknown): PublicError {
	const parsed = PublicError.parse(answer);
	for (const key of Object.keys(answer as object)) assert.ok(KEYS.has(key), `unexpected key ${key}`);
	assert.ok(!JSON.stringify(answer).includes(MARK), `internal detail in ${JSON.stringify(answer)}`);
	return parsed;
}

test('a 422 keeps its message and names the field; a 403 names no field; both without the request', () => {
	const validation = normalizeErrorItem(
		webhookErrorItem(
			ContractError.validation(
				'invalid input: version_tag is required',
				{ code: 'VALIDATION', field: 'version_tag' },
				{ operation: 'validate', collection: 'baselines' },
			),
		),
		{ source: 'WF99' },
	).envelope;
	ErrorEnvelope.parse(validation);
	assert.ok(JSON.stringify(validation.error.details.input).includes(MARK), 'the request stays in the envelope');
	assert.deepEqual(assertPublicOnly(validation.public), {
		ok: false,
		status_code: 422,
		kind: 'validation',
		message: 'invalid input: version_tag is required',
		correlation_id: CORRELATION_ID,
		field: 'version_tag',
		code: 'VALIDATION',
	});

	const refused = normalizeErrorItem(
		webhookErrorItem(
			ContractError.forbidden(
				'the token\'s claim "sub" is missing',
				{ code: 'IDENTITY_CLAIM_INVALID', claim: 'sub', field: 'sub' },
				{ operation: 'authenticate' },
			),
		),
		{ source: 'WF99' },
	).envelope;
	assert.deepEqual(assertPublicOnly(refused.public), {
		ok: false,
		status_code: 403,
		kind: 'auth',
		message: 'the token\'s claim "sub" is missing',
		correlation_id: CORRELATION_ID,
		code: 'IDENTITY_CLAIM_INVALID',
	});
});

test('a 5xx answers a fixed text naming its kind, never its own message (servers, tables, addresses)', () => {
	const down = normalizeErrorItem(
		webhookErrorItem(
			ContractError.unavailable(
				`ArangoDB unreachable at http://10.0.0.7:8529 ${MARK}`,
				{ code: 'UNREACHABLE', url: MARK },
				{ operation: 'insert', collection: 'baselines' },
			),
		),
		{ source: 'WF99' },
	).envelope;
	assert.match(down.error.message, new RegExp(MARK), 'ops.errors keeps the real message');
	const answer = assertPublicOnly(down.public);
	assert.deepEqual([answer.status_code, answer.kind], [503, 'db']);
	assert.equal(
		answer.message,
		'the database could not complete the request (status 503); the correlation_id identifies it in the error log',
	);
	for (const [kind, status] of [
		['upstream', 502],
		['unknown', 500],
		['validation', 500],
	] as [ErrorKind, number][]) {
		const p = publicError({ status_code: status, kind, message: `boom ${MARK}`, correlation_id: CORRELATION_ID });
		assertPublicOnly(p);
		assert.match(p.message, /correlation_id/);
	}
	// a 5xx auth is our credential refused upstream (internal): the answer says nothing of authorisation
	const upstreamAuth = publicError({ status_code: 502, kind: 'auth', message: MARK, correlation_id: CORRELATION_ID });
	assert.doesNotMatch(upstreamAuth.message, /auth|credential|token/i);
});

test('only a validation error carries a field; a long message is cut, a pair never split', () => {
	const details = { node_details: { field: 'body.user_id' } };
	assert.equal(
		publicError({ status_code: 409, kind: 'conflict', message: 'm', correlation_id: CORRELATION_ID, details }).field,
		undefined,
	);
	assert.equal(
		publicError({ status_code: 400, kind: 'validation', message: 'm', correlation_id: CORRELATION_ID, details }).field,
		'body.user_id',
	);
	const long = publicError({
		status_code: 422,
		kind: 'validation',
		message: `${'x'.repeat(MAX_PUBLIC_MESSAGE_LENGTH - 2)}😀😀😀`,
		correlation_id: CORRELATION_ID,
	});
	assert.equal(long.message.length <= MAX_PUBLIC_MESSAGE_LENGTH, true);
	assert.ok(long.message.endsWith('…'));
	assert.ok(!/[\uD800-\uDBFF]…$/.test(long.message), 'no lone high surrogate before the ellipsis');
	assert.throws(() => PublicError.parse({ ...long, details: {} }), /Unrecognized key/);
});

test('failure() always builds the public projection, validated with the envelope', () => {
	const envelope = failure({
		status_code: 404,
		kind: 'not_found',
		message: 'atoms/a1 not found',
		retryable: false,
		source: 'A3.7',
		correlation: { correlation_id: CORRELATION_ID },
		ctx: { secret: MARK },
		raw_error: { message: MARK, http_code: 404, node_type: null },
		error_context: { node: MARK },
		extra_details: { input: { headers: MARK } },
		internal: { error_id: MARK },
	});
	assert.deepEqual(assertPublicOnly(envelope.public), {
		ok: false,
		status_code: 404,
		kind: 'not_found',
		message: 'atoms/a1 not found',
		correlation_id: CORRELATION_ID,
	});
	const { public: _dropped, ...withoutPublic } = envelope;
	assert.throws(() => ErrorEnvelope.parse(withoutPublic), /public/);
});

test("property: for any error item, the Error Pipe envelope's public answer is a strict PublicError holding nothing of the request", () => {
	const kinds = fc.constantFrom<ErrorKind>(
		'db',
		'upstream',
		'auth',
		'rate_limit',
		'validation',
		'not_found',
		'conflict',
		'locked',
		'unknown',
	);
	const clean = (max: number) => hostileString(max).filter((s) => !s.includes(MARK));
	const rev = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/), hostileString(80), fc.constant(null));
	const retryFactsArb = fc.record(
		{
			current_rev: fc.oneof(rev, fc.anything()),
			current_revs: fc.oneof(
				fc.dictionary(fc.oneof(fc.stringMatching(/^atoms\/[a-z0-9_]{1,20}$/), hostileString(40)), rev, {
					maxKeys: 120,
				}),
				fc.anything(),
			),
			locked_until: fc.oneof(
				fc.integer({ min: -1e15, max: 1e15 }),
				fc.double(),
				fc.date().map((d) => (Number.isNaN(d.getTime()) ? 'x' : d.toISOString())),
				hostileString(80),
			),
		},
		{ requiredKeys: [] },
	);
	const hostileRequest = fc.record({
		headers: fc.dictionary(
			hostileString(16),
			hostileString(64).map((s) => `${s}${MARK}`),
		),
		body: fc.oneof(fc.anything(), hostileString(200)).map((b) => ({ raw: b, mark: MARK })),
		webhookUrl: hostileString(64).map((s) => `http://x/${MARK}${s}`),
		jwtPayload: fc.anything().map((p) => ({ p, sub: MARK })),
	});
	fc.assert(
		fc.property(
			kinds,
			fc.integer({ min: 100, max: 700 }),
			clean(2000),
			fc.option(clean(300)),
			fc.option(fc.uuid()),
			hostileRequest,
			fc.option(fc.oneof(fc.stringMatching(/^[A-Z_]{1,64}$/), hostileString(80))),
			retryFactsArb,
			(kind, status, message, field, correlationId, request, code, facts) => {
				const item = {
					...request,
					error: {
						message,
						kind,
						status_code: status,
						details: {
							code: code ?? MARK,
							...(field === null ? {} : { field }),
							...facts,
							locked_by: `user ${MARK}`,
							arango_message: MARK,
						},
						ctx: correlationId === null ? { secret: MARK } : { correlation_id: correlationId, secret: MARK },
						error_context: { node: MARK, table: MARK },
					},
				};
				const { envelope } = normalizeErrorItem(item, { source: 'WF99' });
				const answer = PublicError.parse(envelope.public);
				for (const key of Object.keys(envelope.public)) assert.ok(KEYS.has(key), key);
				assert.ok(!JSON.stringify(envelope.public).includes(MARK));
				assert.equal(answer.correlation_id, envelope.meta.correlation.correlation_id);
				assert.deepEqual([answer.status_code, answer.kind], [envelope.status_code, envelope.error.kind]);
				if (answer.status_code >= 500) assert.match(answer.message, /correlation_id/);
				if (answer.field !== undefined) assert.equal(answer.kind, 'validation');
				if (answer.code !== undefined) assert.equal(answer.code, code);
				if (code !== null && /^[A-Z_]{1,64}$/.test(code)) assert.equal(answer.code, code);
				if (answer.kind !== 'conflict' && answer.kind !== 'locked')
					for (const key of ['current_rev', 'current_revs', 'locked_until']) assert.ok(!(key in answer), key);
				// (the Error Pipe stores JSON: a non-JSON value such as Infinity became null)
				if (typeof answer.current_rev === 'string') assert.equal(answer.current_rev, facts.current_rev);
				if (answer.locked_until !== undefined) assert.ok(!Number.isNaN(Date.parse(answer.locked_until)));
			},
		),
		propertyParams('public error projection'),
	);
});

test('every shipped Respond to Webhook node fed by a Call WF99 node answers {{ $json.public }} with its status', () => {
	const dir = path.join(__dirname, '..', '..', 'workflows-json');
	const files = [
		...readdirSync(dir).filter((f) => f.endsWith('.json')),
		...['arango', 'maas'].flatMap((sub) =>
			readdirSync(path.join(dir, sub))
				.filter((f) => f.endsWith('.json'))
				.map((f) => path.join(sub, f)),
		),
	];
	let checked = 0;
	for (const file of files) {
		const workflow = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as {
			nodes: { name: string; type: string; parameters: Record<string, unknown> }[];
			connections: Record<string, { main?: { node: string }[][] }>;
		};
		const fed = new Set(
			Object.entries(workflow.connections)
				.filter(([source]) => source.startsWith('Call WF99'))
				.flatMap(([, c]) => (c.main ?? []).flat().map((t) => t.node)),
		);
		for (const node of workflow.nodes.filter((n) => n.type === 'n8n-nodes-base.respondToWebhook' && fed.has(n.name))) {
			assert.deepEqual(
				node.parameters,
				{
					respondWith: 'json',
					responseBody: '={{ $json.public }}',
					options: { responseCode: '={{ $json.public.status_code }}' },
				},
				`${file}: ${node.name}`,
			);
			checked++;
		}
	}
	assert.equal(checked, 14, 'the Respond Error nodes of A31–A37, M00, M01, M18 and WF10');
});

test("a FAILED run's stored error answers only its public message (Get Status, Pipeline Push)", () => {
	const fixed = (text: string, status = 500) =>
		`${text} (status ${status}); the correlation_id identifies it in the error log`;
	// rows stored before the fix: WF99's raw message of a 5xx, CASCADE_LIMIT's reason, a Fail with a bare message
	assert.equal(
		publicRunError({ message: `Generate failed after 4 attempts ${MARK}`, kind: 'upstream', status_code: 502 }),
		fixed('a service this request depends on failed', 502),
	);
	assert.equal(
		publicRunError({ message: `cascade stopped at ${MARK}`, code: 'CASCADE_LIMIT', stopped_at: 'B', attempted: 10 }),
		fixed('the request could not be completed'),
	);
	assert.equal(publicRunError({ message: MARK }), fixed('the request could not be completed'));
	assert.equal(
		publicRunError({ message: 'the query is too long', kind: 'validation', status_code: 422 }),
		'the query is too long',
	);
	for (const odd of [null, MARK, 42, [], { message: 7 }, { status_code: 404 }, { status_code: 4.5, message: MARK }])
		assert.ok(!publicRunError(odd).includes(MARK) && publicRunError(odd).length > 0, JSON.stringify(odd));
	fc.assert(
		fc.property(fc.anything(), hostileString(2000), (status, message) => {
			const answer = publicRunError({ status_code: status, kind: 'db', message: `${message}${MARK}` });
			const is4xx = typeof status === 'number' && Number.isInteger(status) && status >= 400 && status <= 499;
			assert.equal(answer.includes(MARK), is4xx && message.length + MARK.length <= MAX_PUBLIC_MESSAGE_LENGTH);
			assert.ok(answer.length >= 1 && answer.length <= MAX_PUBLIC_MESSAGE_LENGTH + 200);
		}),
		propertyParams('public run error'),
	);
});

test('a conflict answers its code and the facts a client retries with; a lock its end time; never locked_by', () => {
	const conflict = publicError({
		status_code: 409,
		kind: 'conflict',
		message: 'atoms/a1: _rev conflict: the document changed since it was read',
		correlation_id: CORRELATION_ID,
		details: {
			node_details: {
				code: 'REV_CONFLICT',
				arango_error_num: 1200,
				arango_message: `AQL: conflict [node #9: UpdateNode] ${MARK}`,
				expected_rev: '_r1',
				current_rev: '_r2',
				current_revs: { 'atoms/a1': '_r2', 'atoms/p1': null },
			},
		},
	});
	assert.deepEqual(assertPublicOnly(conflict), {
		ok: false,
		status_code: 409,
		kind: 'conflict',
		message: 'atoms/a1: _rev conflict: the document changed since it was read',
		correlation_id: CORRELATION_ID,
		code: 'REV_CONFLICT',
		current_rev: '_r2',
		current_revs: { 'atoms/a1': '_r2', 'atoms/p1': null },
	});
	const locked = publicError({
		status_code: 423,
		kind: 'locked',
		message: 'atoms/a1: locked by another user',
		correlation_id: CORRELATION_ID,
		details: { node_details: { code: 'LOCKED', locked_by: `user ${MARK}`, locked_until: Date.UTC(2026, 10, 28, 7) } },
	});
	assert.deepEqual(
		[locked.code, locked.locked_until, 'locked_by' in locked],
		['LOCKED', '2026-11-28T07:00:00.000Z', false],
	);
	// the facts are for conflicts and locks only; a code out of pattern, too many revs, an odd time: left out
	const other = publicError({
		status_code: 404,
		kind: 'not_found',
		message: 'atoms/a1: not found',
		correlation_id: CORRELATION_ID,
		details: { code: 'NOT_FOUND', current_rev: '_r2', locked_until: 1 },
	});
	assert.deepEqual([other.code, 'current_rev' in other, 'locked_until' in other], ['NOT_FOUND', false, false]);
	const odd = publicError({
		status_code: 409,
		kind: 'conflict',
		message: 'm',
		correlation_id: CORRELATION_ID,
		details: {
			code: 'lower-case',
			current_rev: 7,
			current_revs: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`atoms/a${i}`, '_r'])),
			locked_until: 1e20,
		},
	});
	assert.deepEqual(Object.keys(odd).sort(), ['correlation_id', 'kind', 'message', 'ok', 'status_code']);
});

test("every ArangoCAS operation's lost race (1200) answers REV_CONFLICT publicly with the re-read revisions", async () => {
	const merge = RESOURCES.flatMap((r) => r.operations).find((o) => o.value === 'merge')!;
	const stub = new ArangoStub()
		.begin('500')
		.cursorError(...CONFLICT_1200)
		.abort('500')
		.cursor([
			['structure_links/e1', '_e2'],
			['atoms/a1', '_a4'],
			['atoms/p1', null],
		]);
	const error = await arangoFailure(merge, stub.database(), {
		winner_proposal_id: 'p1',
		current_active_id: 'a1',
		user_id: 'user_123',
		structure_edge_id: 'structure_links/e1',
		expected_edge_rev: '_e1',
	});
	const { envelope } = normalizeErrorItem(webhookErrorItem(error), { source: 'WF99' });
	const answer = assertPublicOnly(envelope.public);
	assert.deepEqual(
		[answer.status_code, answer.code, answer.current_rev, answer.current_revs],
		[409, 'REV_CONFLICT', '_e2', { 'structure_links/e1': '_e2', 'atoms/a1': '_a4', 'atoms/p1': null }],
	);
	assert.doesNotMatch(answer.message, /AQL|node #|UpdateNode/);
	ArangoStub.reset();
});
