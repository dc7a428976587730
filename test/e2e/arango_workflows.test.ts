/**
 * The seed-000 workflows (workflows-json/arango/, scenarios 3.1–3.8) in a real n8n 2.4.8, imported and
 * published with WF99, the packed package installed. ArangoDB itself cannot run on these machines
 * (FACTS: ArangoDB), so the credential points at a stand-in ArangoDB on 127.0.0.1 answering real 3.12
 * response shapes (test/helpers/arangoStandIn.ts); 3.1's model is a stand-in Ollama. Checked: each
 * webhook's answer and the requests the node sent (bind vars from the body or If-Match, transaction
 * steps), a conflict → 409 + ops.errors, the three AI failure classes, the cron sweep, and
 * with ArangoDB unreachable → 503 (db) + ops.errors for every webhook. Issue 25: a refused or failed call
 * is answered with the ErrorEnvelope's public part only (PublicError: no details, input, _internal); its
 * details are in the ops.errors row its correlation_id finds.
 * Issue 11: every call carries an HS256 token (test/helpers/jwt.ts, a secret per run); without one,
 * with an expired, wrongly signed or unsigned one n8n refuses it (401/403) before the workflow runs;
 * the user the nodes act as is the token's sub (a body user_id that differs → 403 + ops.errors row;
 * A's token cannot release B's lock); no token appears in ops.errors or n8n's log.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, test } from '@jest/globals';
import { PublicError, SuccessItem } from '../../nodes/shared/contracts/envelope';
import { ArangoStandIn } from '../helpers/arangoStandIn';
import { setupDatabase, type TestDatabase } from '../helpers/db';
import { assertNoTokenLeaked, bearer, garbage, mint, testSecret, unsigned, type MintOptions } from '../helpers/jwt';
import { arangoCredential, jwtCredential, startN8n, WORKFLOWS, type RunningN8n } from '../helpers/n8n';
import { OLLAMA_ISSUES, OllamaStandIn } from '../helpers/ollamaStandIn';
import { shippedWebhooks } from '../helpers/webhooks';

const ARANGO_WORKFLOWS = path.join(WORKFLOWS, 'arango');

/** One call per webhook, with the seed's input body, the node that runs it and its success status. */
const CALLS: {
	path: string;
	node: string;
	status: number;
	body: Record<string, unknown>;
	headers?: Record<string, string>;
}[] = [
	{
		path: 'arango/ai-analysis',
		node: 'Load Context',
		status: 201,
		body: { target_atom_id: 'atom_uuid_v5', agent_role_key: 'tech_lead' },
	},
	{
		path: 'arango/merge',
		node: 'Merge Proposal',
		status: 200,
		body: {
			winner_proposal_id: 'atom_draft_x',
			current_active_id: 'atom_uuid_v5',
			user_id: 'user_123',
			structure_edge_id: 'structure_links/e1',
			expected_edge_rev: '_e1',
			allow_outdated: false,
		},
	},
	{
		path: 'arango/baseline',
		node: 'Create Baseline',
		status: 201,
		body: { doc_id: 'docs/doc_1', version_tag: 'v1.0', title: 'MVP Release' },
	},
	{
		path: 'arango/proposal',
		node: 'Create Proposal',
		status: 201,
		body: { target_active_id: 'atom_uuid_v5', new_content: 'Fixed text', comment: 'typo', author: 'user_123' },
	},
	{
		path: 'arango/reject',
		node: 'Reject Proposal',
		status: 200,
		body: { proposal_id: 'atom_draft_y', expected_proposal_rev: '_r1' },
	},
	{
		path: 'arango/lock',
		node: 'Lock Atom',
		status: 200,
		body: { atom_id: 'atom_uuid_v5', user_id: 'user_123', expected_rev: '_a1' },
	},
	{
		path: 'arango/unlock',
		node: 'Unlock Atom',
		status: 200,
		body: { atom_id: 'atom_uuid_v5', user_id: 'user_123' },
		headers: { 'if-match': '"_a1"' },
	},
	{
		path: 'arango/archive',
		node: 'Archive Atom',
		status: 200,
		body: { atom_id: 'atom_uuid_v5', reason: 'cancelled', expected_rev: '_a1', user_id: 'user_123' },
	},
];

let db: TestDatabase;
let n8n: RunningN8n;
const arango = new ArangoStandIn();
const ollama = new OllamaStandIn();
const SECRET = testSecret();
/** The user of the seed bodies: every call's token is for this sub unless a test says otherwise. */
const USER = 'user_123';
/** Every token minted in this file, for the final scan. */
const minted = new Set<string>();
function token(sub: string, options: Partial<MintOptions> = {}): string {
	const t = mint(sub, { secret: SECRET, ...options });
	minted.add(t);
	return t;
}

/** The temp folder of the rewritten workflow files (removed after the tests). */
let dir: string | undefined;

beforeAll(async () => {
	db = await setupDatabase();
	await arango.up();
	await ollama.up();
	// The shipped 3.1 workflow calls http://127.0.0.1:11434 (Ollama's default): point it at the stand-in.
	const folder = mkdtempSync(path.join(tmpdir(), 'arango-wf-'));
	dir = folder;
	const files = readdirSync(ARANGO_WORKFLOWS)
		.filter((f) => f.endsWith('.json'))
		.map((f) => {
			const text = readFileSync(path.join(ARANGO_WORKFLOWS, f), 'utf8').replace('http://127.0.0.1:11434', ollama.url);
			writeFileSync(path.join(folder, f), text);
			return path.join(folder, f);
		});
	n8n = await startN8n(
		db.url,
		[path.join(WORKFLOWS, 'WF99e_catch_all.json'), path.join(WORKFLOWS, 'WF99_global_err_handler.json'), ...files],
		CALLS.map((c) => c.path),
		[arangoCredential(arango.url), jwtCredential(SECRET)],
	);
}, 30 * 60_000);

afterAll(async () => {
	await n8n?.stop();
	await arango.down();
	await ollama.down();
	await db?.drop();
	if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Posts `c.body` with a token for USER (or `auth`: another token, or null for none). */
async function call(c: (typeof CALLS)[number], auth: string | null = token(USER)) {
	arango.requests.length = 0;
	const res = await fetch(`${n8n.url}/webhook/${c.path}`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', ...(c.headers ?? {}), ...(auth === null ? {} : bearer(auth)) },
		body: JSON.stringify(c.body),
	});
	const text = await res.text();
	let json: unknown;
	try {
		json = JSON.parse(text);
	} catch {
		json = undefined;
	}
	return { status: res.status, text, json };
}

const errorCount = async () => (await db.pool.query('SELECT count(*)::int AS n FROM ops.errors')).rows[0].n as number;

/**
 * A refusal's answer (issue 25 §4): a strict PublicError (no details, _internal, input, ctx), holding
 * neither the request's body nor a token; `sent` is what the call sent (its body values and token).
 */
function publicAnswer(res: { json: unknown; text: string }, sent: string[] = []): PublicError {
	const answer = PublicError.parse(res.json);
	for (const key of ['details', '_internal', 'input', 'error', 'meta', 'data'])
		assert.ok(!(key in (res.json as object)), `the answer carries ${key}: ${res.text}`);
	for (const value of [...sent, 'jwtPayload', 'webhookUrl', 'headers'])
		assert.ok(!res.text.includes(value), `the answer carries ${value}: ${res.text}`);
	return answer;
}

/** The ops.errors row of a public answer (its details are there, not in the answer). */
async function errorRow(answer: PublicError) {
	const rows = await db.pool.query(
		'SELECT node, kind, status_code, retryable, details FROM ops.errors WHERE correlation_id = $1',
		[answer.correlation_id],
	);
	assert.equal(rows.rowCount, 1, `one ops.errors row for ${answer.correlation_id}`);
	return rows.rows[0] as {
		node: string;
		kind: string;
		status_code: number;
		retryable: boolean;
		details: { node_details?: Record<string, unknown>; error_context?: Record<string, unknown>; input?: unknown };
	};
}

const byPath = (p: string) => CALLS.find((c) => c.path === p)!;

/** The A3.8 cron may fire at any time: leave its sweep out of what a webhook call sent. */
const isSweep = (query: unknown) => /ignoreErrors: true/.test(String(query ?? ''));
const sent = () => arango.requests.filter((r) => !isSweep(r.body?.query));
const sentQueries = () => arango.queries().filter((q) => !isSweep(q.query));

test('every scenario 3.1–3.8 ships one workflow', () => {
	const files = readdirSync(ARANGO_WORKFLOWS)
		.filter((f) => f.endsWith('.json'))
		.sort();
	assert.deepEqual(
		files.map((f) => f.slice(0, 3)),
		['A31', 'A32', 'A33', 'A34', 'A35', 'A36', 'A37', 'A38'],
	);
});

for (const c of CALLS) {
	test(`${c.path}: answers ${c.status} with a SuccessItem from the node's result`, async () => {
		ollama.mode = 'ok';
		const res = await call(c);
		assert.equal(res.status, c.status, res.text);
		const envelope = SuccessItem.parse(res.json);
		assert.equal(envelope.status_code, c.status);
		assert.equal(envelope.meta.correlation.node, c.path === 'arango/ai-analysis' ? 'Save Result' : c.node);
	});
}

test('merge: begin, two queries carrying the transaction id, commit; bind vars from the body', async () => {
	await call(byPath('arango/merge'));
	assert.deepEqual(
		sent().map((r) => r.method),
		['POST', 'POST', 'POST', 'PUT'],
	);
	const [sw, unlink] = sentQueries();
	const trx = sent().at(-1)!.path.split('/').pop();
	assert.deepEqual([sw.trxId, unlink.trxId], [trx, trx]);
	assert.deepEqual(sw.bindVars, {
		current_key: 'atom_uuid_v5',
		winner_key: 'atom_draft_x',
		edge_key: 'e1',
		expected_edge_rev: '_e1',
		user_id: 'user_123',
		allow_outdated: false,
	});
});

test('unlock: the If-Match header is the expected revision; lock sends a 5-minute lease', async () => {
	await call(byPath('arango/unlock'));
	assert.equal(sentQueries()[0].bindVars.expected_rev, '_a1');
	await call(byPath('arango/lock'));
	assert.equal(sentQueries()[0].bindVars.lease_ms, 300_000);
});

test('ai-analysis: the prompt built from the atom reaches the model; its issues are saved', async () => {
	ollama.mode = 'ok';
	ollama.requests.length = 0;
	await call(byPath('arango/ai-analysis'));
	assert.equal(ollama.requests[0].prompt, 'Review: The system shall log in users.');
	assert.equal(ollama.requests[0].model, 'llama3');
	const save = arango.queries().find((q) => /type: "detected_in"/.test(q.query))!;
	assert.deepEqual(save.bindVars.issues, OLLAMA_ISSUES);
	assert.equal(save.bindVars.prompt_key, 'tech_lead_v1');
});

for (const [mode, code] of [
	['error', 'MODEL_ERROR'],
	['prose', 'INVALID_JSON'],
	['down', 'TIMEOUT'],
] as const) {
	test(`ai-analysis: model ${mode} → Save Error records ${code}`, async () => {
		if (mode === 'down') await ollama.down();
		else ollama.mode = mode;
		try {
			const res = await call(byPath('arango/ai-analysis'));
			const envelope = SuccessItem.parse(res.json);
			assert.deepEqual([envelope.data.success, envelope.data.error_code], [false, code], res.text);
			const saved = arango.queries().find((q) => /type: "ai_error"/.test(q.query))!;
			assert.equal(saved.bindVars.error_code, code);
		} finally {
			if (mode === 'down') await ollama.up();
		}
	});
}

test('a stale _rev → 409 public answer; the current _rev in its one ops.errors row', async () => {
	arango.queue(/locked_until: now \+ @lease_ms/, { rows: [{ outcome: 'REV_CONFLICT', current_rev: '_a9' }] });
	const res = await call(byPath('arango/lock'));
	assert.equal(res.status, 409, res.text);
	const answer = publicAnswer(res);
	assert.equal(answer.kind, 'conflict');
	// what a client retries with (issue 25 §4 review): the machine reason and the current _rev
	assert.deepEqual([answer.code, answer.current_rev], ['REV_CONFLICT', '_a9']);
	const row = await errorRow(answer);
	assert.deepEqual(row.details.node_details, {
		code: 'REV_CONFLICT',
		expected_rev: '_a1',
		current_rev: '_a9',
	});
	assert.deepEqual([row.node, row.status_code], ['Lock Atom', 409]);
});

test('a validation failure (no expected_rev, no If-Match) → 422 naming the field, recorded too', async () => {
	const res = await call({ ...byPath('arango/lock'), body: { atom_id: 'a1' } });
	assert.equal(res.status, 422);
	const answer = publicAnswer(res);
	assert.deepEqual([answer.kind, answer.field], ['validation', 'expected_rev']);
	assert.equal((await errorRow(answer)).details.node_details?.field, 'expected_rev');
});

test('ArangoDB unreachable: every webhook → 503 public answer (db) and an ops.errors row naming its node, with the details', async () => {
	await arango.down();
	try {
		for (const c of CALLS) {
			const res = await call(c);
			assert.equal(res.status, 503, `${c.path}: ${res.text}`);
			const answer = publicAnswer(res, [
				new URL(arango.url).host,
				...Object.values(c.body).filter((v): v is string => typeof v === 'string'),
			]);
			assert.equal(answer.kind, 'db', c.path);
			const row = await errorRow(answer);
			assert.equal(row.details.error_context?.node, c.node);
			assert.equal(row.details.node_details?.code, 'UNREACHABLE');
			assert.deepEqual([row.node, row.kind, row.status_code, row.retryable], [c.node, 'db', 503, true]);
			assert.ok(row.details.error_context?.collection, 'error_context names the collection');
			assert.ok(row.details.input, 'the request stays in ops.errors');
		}
	} finally {
		await arango.up();
	}
});

test('every Webhook of A31–A37 uses JWT Auth with the Contracts Webhook JWT credential', () => {
	const files = readdirSync(ARANGO_WORKFLOWS)
		.filter((f) => /^A3[1-7]/.test(f))
		.map((f) => path.join(ARANGO_WORKFLOWS, f));
	const hooks = shippedWebhooks(files);
	assert.deepEqual(
		hooks.map((h) => h.path).sort(),
		CALLS.map((c) => c.path).sort(),
		'one CALLS entry per shipped webhook',
	);
	for (const h of hooks)
		assert.deepEqual([h.authentication, h.jwtCredentialId], ['jwtAuth', 'jwtContracts01'], `${h.file} ${h.node}`);
});

test("no token: every arango webhook answers n8n's 401, sends nothing to ArangoDB and records no ops.errors row", async () => {
	const before = await errorCount();
	for (const c of CALLS) {
		const res = await call(c, null);
		assert.equal(res.status, 401, `${c.path}: ${res.text}`);
		assert.deepEqual(sent(), [], `${c.path} reached ArangoDB`);
	}
	// also a malformed Authorization header (no token after the scheme)
	const res = await fetch(`${n8n.url}/webhook/arango/lock`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', authorization: 'Bearer' },
		body: '{}',
	});
	assert.equal(res.status, 401);
	assert.equal(await errorCount(), before);
});

for (const [label, bad] of [
	['an expired', () => token(USER, { expiresIn: -30 })],
	['a wrongly signed (another secret)', () => token(USER, { secret: testSecret() })],
	['an unsigned (alg none)', () => unsigned(USER)],
	['a garbage', () => garbage()],
] as const) {
	test(`${label} token → n8n's 403 on every arango webhook; the workflow does not run`, async () => {
		const before = await errorCount();
		for (const c of CALLS) {
			const t = bad();
			minted.add(t);
			const res = await call(c, t);
			assert.equal(res.status, 403, `${c.path}: ${res.text}`);
			assert.deepEqual(sent(), [], `${c.path} reached ArangoDB`);
			assert.ok(!res.text.includes(t), 'the answer does not echo the token');
		}
		assert.equal(await errorCount(), before);
	});
}

test("merge: the user_id bind var is the token's sub when the body names no user", async () => {
	const { user_id: _omitted, ...body } = byPath('arango/merge').body;
	const res = await call({ ...byPath('arango/merge'), body }, token('user_from_token'));
	assert.equal(res.status, 200, res.text);
	assert.equal(sentQueries()[0].bindVars.user_id, 'user_from_token');
});

test("proposal: the author bind var is the token's sub when the body names no author", async () => {
	const { author: _omitted, ...body } = byPath('arango/proposal').body;
	const res = await call({ ...byPath('arango/proposal'), body }, token('author_from_token'));
	assert.equal(res.status, 201, res.text);
	assert.equal(sentQueries()[0].bindVars.author, 'author_from_token');
});

test("A's valid token cannot release B's lock (423, ops.errors row); B's token can", async () => {
	// The stand-in plays an atom locked by user_B: LOCKED unless the query's user_id is user_B (the AQL's
	// owner check itself is covered by the AQL tests).
	arango.replyFn = (query, bindVars) =>
		/locked_by: null, locked_until: null/.test(query) && bindVars.user_id !== 'user_B'
			? { rows: [{ outcome: 'LOCKED', current_rev: '_a1', locked_by: 'user_B', locked_until: Date.now() + 300_000 }] }
			: undefined;
	try {
		const body = { atom_id: 'atom_uuid_v5', expected_rev: '_a1' };
		const asA = await call({ ...byPath('arango/unlock'), body }, token('user_A'));
		assert.equal(asA.status, 423, asA.text);
		const answer = publicAnswer(asA, ['user_B']);
		assert.equal(answer.kind, 'locked');
		assert.equal(answer.code, 'LOCKED');
		assert.match(
			String(answer.locked_until),
			/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
			'the lock end, never its owner',
		);
		assert.equal(sentQueries()[0].bindVars.user_id, 'user_A');
		const row = await errorRow(answer);
		assert.deepEqual([row.node, row.status_code], ['Unlock Atom', 423]);
		// the body cannot claim B's identity either: user_id = user_B with A's token is a mismatch
		const claimed = await call({ ...byPath('arango/unlock'), body: { ...body, user_id: 'user_B' } }, token('user_A'));
		assert.equal(claimed.status, 403, claimed.text);
		assert.deepEqual(sent(), []);
		const asB = await call({ ...byPath('arango/unlock'), body }, token('user_B'));
		assert.equal(asB.status, 200, asB.text);
	} finally {
		arango.replyFn = undefined;
	}
});

for (const [p, key] of [
	['arango/lock', 'user_id'],
	['arango/unlock', 'user_id'],
	['arango/archive', 'user_id'],
	['arango/merge', 'user_id'],
	['arango/proposal', 'author'],
]) {
	test(`${p}: a body ${key} ≠ the token's sub → 403 public answer (IDENTITY_MISMATCH in its one ops.errors row), nothing sent to ArangoDB`, async () => {
		const c = byPath(p);
		const res = await call({ ...c, body: { ...c.body, [key]: 'someone_else' } }, token(USER));
		assert.equal(res.status, 403, res.text);
		const answer = publicAnswer(res, ['someone_else']);
		assert.equal(answer.kind, 'auth');
		assert.deepEqual(sent(), []);
		const row = await errorRow(answer);
		assert.equal(row.details.node_details?.code, 'IDENTITY_MISMATCH');
		assert.deepEqual([row.node, row.kind, row.status_code], [c.node, 'auth', 403]);
	});
}

test("a body that is not JSON → n8n's own 422, without a stack trace or a server path (NODE_ENV=production, as the demo runs n8n)", async () => {
	for (const c of CALLS) {
		const res = await fetch(`${n8n.url}/webhook/${c.path}`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...bearer(token(USER)) },
			body: '{"doc_id": ',
		});
		const text = await res.text();
		assert.equal(res.status, 422, `${c.path}: ${text}`);
		assert.doesNotMatch(text, /stack|node_modules|\.js:\d+|\/(?:home|root|usr|tmp|opt)\//, `${c.path}: ${text}`);
		assert.match(text, /Failed to parse request body/);
	}
});

// Issue 25 §4: every write webhook refuses a verified token without a usable sub, and records the sub as the actor.
for (const [label, payload] of [
	['no sub', undefined],
	['a blank sub', ''],
	['sub " alice"', ' alice'],
] as const) {
	test(`a verified token with ${label} → 403 on every arango webhook (IDENTITY_CLAIM_INVALID in ops.errors), nothing sent to ArangoDB or the model`, async () => {
		ollama.requests.length = 0;
		for (const c of CALLS) {
			const t = mint(payload, { secret: SECRET });
			minted.add(t);
			const { user_id: _u, author: _a, ...body } = c.body;
			const res = await call({ ...c, body }, t);
			assert.equal(res.status, 403, `${c.path}: ${res.text}`);
			const answer = publicAnswer(res);
			assert.equal(answer.kind, 'auth');
			assert.deepEqual(sent(), [], `${c.path} reached ArangoDB`);
			const row = await errorRow(answer);
			assert.deepEqual([row.node, row.details.node_details?.code], [c.node, 'IDENTITY_CLAIM_INVALID'], c.path);
		}
		assert.equal(ollama.requests.length, 0, 'the model was not called');
	});
}

test("baseline, reject and ai-analysis store the token's sub as their actor (created_by, rejected_by, the artifacts' created_by)", async () => {
	ollama.mode = 'ok';
	const baseline = await call(byPath('arango/baseline'), token('baseline_actor'));
	assert.equal(baseline.status, 201, baseline.text);
	assert.equal(sentQueries()[0].bindVars.user_id, 'baseline_actor');
	assert.match(sentQueries()[0].query, /created_by: @user_id \} INTO baselines/);
	const reject = await call(byPath('arango/reject'), token('reject_actor'));
	assert.equal(reject.status, 200, reject.text);
	assert.equal(sentQueries()[0].bindVars.user_id, 'reject_actor');
	assert.match(sentQueries()[0].query, /rejected_by: @user_id/);
	const analysis = await call(byPath('arango/ai-analysis'), token('analysis_actor'));
	assert.equal(analysis.status, 201, analysis.text);
	const save = sentQueries().find((q) => /type: "detected_in"/.test(q.query))!;
	assert.equal(save.bindVars.user_id, 'analysis_actor');
	for (const mode of ['error', 'down'] as const) {
		if (mode === 'down') await ollama.down();
		else ollama.mode = mode;
		try {
			const failed = await call(byPath('arango/ai-analysis'), token(`analysis_${mode}_actor`));
			assert.equal(failed.status, 201, failed.text);
			const saved = sentQueries().find((q) => /type: "ai_error"/.test(q.query))!;
			assert.equal(saved.bindVars.user_id, `analysis_${mode}_actor`);
		} finally {
			if (mode === 'down') await ollama.up();
			ollama.mode = 'ok';
		}
	}
});

test("no token used in this file appears in any ops.errors row or in n8n's log", async () => {
	await assertNoTokenLeaked(db.pool, n8n.transcript(), minted);
});

test('A3.8: the published cron workflow runs the expired-lock sweep within a minute', async () => {
	arango.requests.length = 0;
	const deadline = Date.now() + 75_000;
	while (Date.now() < deadline && !arango.queries().some((q) => /ignoreErrors: true/.test(q.query))) {
		await new Promise((r) => setTimeout(r, 1000));
	}
	const sweep = arango.queries().find((q) => /ignoreErrors: true/.test(q.query));
	assert.ok(sweep, 'no Unlock Expired query within 75 s');
	assert.deepEqual(sweep.bindVars, { batch_size: 500, unlocked_by: 'system:expired' });
}, 90_000);
