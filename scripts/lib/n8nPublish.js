'use strict';
/**
 * Publishing imported workflows through a running n8n's REST API (issue 27 §3), instead of one
 * `n8n publish:workflow --id=X` CLI process per workflow (2–14 s each: every CLI command boots n8n).
 * Routes and bodies as in n8n 2.4.8's dist code (the same in 2.41.1):
 *  - POST /rest/owner/setup {email, firstName, lastName, password} (no auth; owner.controller.js): creates the
 *    owner once per n8n database and answers with the `n8n-auth` cookie; a second call answers 400
 *    "Instance owner already setup", then POST /rest/login {emailOrLdapLoginId, password} (auth.controller.js)
 *    gives the cookie. The cookie's JWT carries a hash of the `browser-id` header, which n8n checks on every
 *    later request: the harness sends the same one (BROWSER_ID) on all of them.
 *  - GET /rest/workflows/:id → {data: {versionId, activeVersionId, …}} and POST /rest/workflows/:id/activate
 *    {versionId} (workflows.controller.js `activate`, ActivateWorkflowDto of @n8n/api-types): sets
 *    active/activeVersionId as publish:workflow does, and adds the workflow to the running ActiveWorkflowManager
 *    (webhooks, triggers, schedules at once; n8n rolls the activation back and answers 400 with its message
 *    when that fails, e.g. "Unrecognized node type"). n8n refuses to publish a workflow whose Execute Workflow
 *    nodes name (source database, fixed id) a sub-workflow that is not published yet: publishOrder() puts
 *    sub-workflows first.
 * The activation is stored in n8n's database: the next `n8n start` on it activates the workflows itself.
 */
const crypto = require('node:crypto');

/** The `browser-id` header of every harness request (n8n binds its auth cookie to it). */
const BROWSER_ID = 'contracts-harness';

/**
 * A harness owner account: fixed email and names, a random password that satisfies n8n's rules
 * (8–64 characters, a digit, an uppercase letter). Never logged.
 */
function generatedOwner() {
	return {
		email: 'harness@contracts.example.com',
		firstName: 'Contracts',
		lastName: 'Harness',
		password: `Harness-${crypto.randomBytes(18).toString('base64url')}-7`,
	};
}

/** The longest one REST request of the harness may take (ms): an activation that hangs fails start() instead. */
const REST_TIMEOUT_MS = 60_000;

/**
 * One JSON request to n8n's REST API at `baseUrl`. Resolves `{ status, ok, body, cookie }`: body parsed when
 * JSON (else the text), cookie the `n8n-auth=…` pair when n8n set one. Throws when n8n cannot be reached or
 * does not answer within REST_TIMEOUT_MS.
 */
async function rest(baseUrl, route, { method = 'GET', body, cookie } = {}) {
	const res = await fetch(`${baseUrl}/rest${route}`, {
		signal: AbortSignal.timeout(REST_TIMEOUT_MS),
		method,
		headers: {
			'browser-id': BROWSER_ID,
			...(body === undefined ? {} : { 'content-type': 'application/json' }),
			...(cookie ? { cookie } : {}),
		},
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	let parsed = text;
	try {
		parsed = JSON.parse(text);
	} catch {
		// not JSON: keep the text
	}
	const setCookies = typeof res.headers.getSetCookie === 'function' ? res.headers.getSetCookie() : [];
	const auth = setCookies.map((c) => c.split(';')[0]).find((c) => c.startsWith('n8n-auth='));
	return { status: res.status, ok: res.ok, body: parsed, cookie: auth };
}

/** n8n's error message of an answer (`{message}`), else the start of its body. */
function messageOf(answer) {
	const body = answer.body;
	if (body && typeof body === 'object' && typeof body.message === 'string') return body.message;
	return String(typeof body === 'string' ? body : JSON.stringify(body)).slice(0, 300);
}

/**
 * Logs in as `owner` on the n8n at `baseUrl`, creating that owner first when the instance has none.
 * Resolves `{ cookie, created }` (`created`: true when this call set the owner up). Throws with n8n's answer
 * (status and message; never the password) when neither the setup nor the login works, e.g. when another
 * owner exists with another password.
 */
async function ownerSession(baseUrl, owner) {
	const setup = await rest(baseUrl, '/owner/setup', { method: 'POST', body: owner });
	if (setup.ok && setup.cookie) return { cookie: setup.cookie, created: true };
	const login = await rest(baseUrl, '/login', {
		method: 'POST',
		body: { emailOrLdapLoginId: owner.email, password: owner.password },
	});
	if (login.ok && login.cookie) return { cookie: login.cookie, created: false };
	throw new Error(
		`n8n owner ${owner.email}: POST /rest/owner/setup answered HTTP ${setup.status} (${messageOf(setup)}), POST /rest/login HTTP ${login.status} (${messageOf(login)})`,
	);
}

/**
 * The ids of `workflows` ([{ id, nodes }], the imported JSON) in an order n8n accepts: each workflow after the
 * imported sub-workflows its Execute Workflow nodes name (source database, a fixed id), otherwise in the given
 * order. A cycle among them cannot be published by n8n either: its members come in some order (n8n then refuses
 * the first of them it cannot activate, with its message).
 */
function publishOrder(workflows) {
	const ids = new Set(workflows.map((w) => w.id));
	const refs = new Map(
		workflows.map((w) => [
			w.id,
			(w.nodes || [])
				.filter((n) => n.type === 'n8n-nodes-base.executeWorkflow' && !n.disabled)
				.filter((n) => !n.parameters?.source || n.parameters.source === 'database')
				.map((n) => {
					const p = n.parameters?.workflowId;
					return p && typeof p === 'object' ? p.value : p;
				})
				.filter((id) => typeof id === 'string' && !id.startsWith('=') && id !== w.id && ids.has(id)),
		]),
	);
	const order = [];
	const state = new Map(); // id → 'visiting' | 'done'
	const visit = (id) => {
		if (state.has(id)) return;
		state.set(id, 'visiting');
		for (const sub of refs.get(id) || []) visit(sub);
		state.set(id, 'done');
		order.push(id);
	};
	for (const w of workflows) visit(w.id);
	return order;
}

/**
 * Publishes each workflow of `ids` (in that order; publishOrder()) on the running n8n at `baseUrl`, with the
 * auth cookie of ownerSession(): reads its current versionId, then activates that version, unless that version
 * is already the active one. Resolves `{ activated, alreadyActive }` (ids). Throws on the first failure:
 * "publishing workflow <id> (<name>) failed: HTTP <status> <n8n's message>".
 */
async function publishWorkflows(baseUrl, cookie, ids) {
	const activated = [];
	const alreadyActive = [];
	for (const id of ids) {
		const got = await rest(baseUrl, `/workflows/${encodeURIComponent(id)}`, { cookie });
		const workflow = got.body && typeof got.body === 'object' ? got.body.data : undefined;
		if (!got.ok || !workflow?.versionId)
			throw new Error(
				`publishing workflow ${id} failed: GET /rest/workflows/${id} answered HTTP ${got.status} ${messageOf(got)}`,
			);
		if (workflow.activeVersionId === workflow.versionId) {
			alreadyActive.push(id);
			continue;
		}
		const answer = await rest(baseUrl, `/workflows/${encodeURIComponent(id)}/activate`, {
			method: 'POST',
			body: { versionId: workflow.versionId },
			cookie,
		});
		if (!answer.ok)
			throw new Error(
				`publishing workflow ${id} (${workflow.name}) failed: HTTP ${answer.status} ${messageOf(answer)}`,
			);
		activated.push(id);
	}
	return { activated, alreadyActive };
}

module.exports = { BROWSER_ID, generatedOwner, rest, ownerSession, publishOrder, publishWorkflows };
