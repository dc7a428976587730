/**
 * HTTP-level stand-in for ArangoDB 3.12 (nock 14 on arangojs's native fetch). Every reply is built from
 * a real server response in test/fixtures/arangodb/arangodb-3.12-http-examples.json (its source:
 * test/fixtures/README.md): its status line, headers and body keys; only the values a test is about
 * (result rows, stats, ids, error numbers) change.
 * Each scripted reply is consumed once, in order, and every request is recorded (method, path,
 * headers, JSON body) so tests can assert the AQL, bind vars and `x-arango-trx-id` sent.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import nock from 'nock';
import { Database } from 'arangojs';

/** The repository's copy (test/fixtures/README.md says where it comes from); tests read nothing outside the repo. */
export const EXAMPLES_FILE = path.resolve(__dirname, '..', 'fixtures', 'arangodb', 'arangodb-3.12-http-examples.json');

export interface RealResponse {
	status: number;
	headers: Record<string, string>;
	body: Record<string, unknown>;
}

let examples: Record<string, RealResponse> | undefined;

/** The real responses, parsed (`HTTP/1.1 201 Created`, headers, JSON body). */
export function realResponses(): Record<string, RealResponse> {
	if (examples) return examples;
	const raw = JSON.parse(readFileSync(EXAMPLES_FILE, 'utf8')) as Record<string, { response: string }>;
	examples = {};
	for (const [name, entry] of Object.entries(raw)) {
		const [head, ...rest] = entry.response.split('\n\n');
		const [statusLine, ...headerLines] = head.split('\n');
		const headers: Record<string, string> = {};
		for (const line of headerLines) {
			const i = line.indexOf(':');
			headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
		}
		delete headers['content-length'];
		examples[name] = { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(rest.join('\n\n')) };
	}
	return examples;
}

function real(name: string): RealResponse {
	const found = realResponses()[`${name}_single`];
	if (!found) throw new Error(`no real response ${name} in ${EXAMPLES_FILE}`);
	return structuredClone(found);
}

export interface RecordedRequest {
	method: string;
	path: string;
	headers: Record<string, string | string[] | undefined>;
	body: Record<string, unknown> | null;
}

export const ARANGO_URL = 'http://arango.test:8529';
export const ARANGO_DB = 'contracts';

export class ArangoStub {
	readonly requests: RecordedRequest[] = [];
	private readonly scope: nock.Scope;
	private readonly prefix = `/_db/${ARANGO_DB}`;

	constructor() {
		if (!nock.isActive()) nock.activate();
		nock.disableNetConnect();
		this.scope = nock(ARANGO_URL);
	}

	/** A Database pointed at the stub (create it after the stub: nock must be active first). */
	database(): Database {
		return new Database({
			url: ARANGO_URL,
			databaseName: ARANGO_DB,
			auth: { username: 'root', password: 'pw' },
			maxRetries: false,
		});
	}

	private record(method: string) {
		const requests = this.requests;
		return function (this: nock.ReplyFnContext, uri: string, body: unknown) {
			requests.push({
				method,
				path: uri,
				headers: { ...(this.req.headers as Record<string, string>) },
				body: typeof body === 'string' ? (body ? JSON.parse(body) : null) : (body as Record<string, unknown>),
			});
		};
	}

	private reply(method: 'POST' | 'PUT' | 'DELETE' | 'GET', route: string, response: RealResponse): this {
		const record = this.record(method);
		const interceptor =
			method === 'POST'
				? this.scope.post(this.prefix + route)
				: method === 'PUT'
					? this.scope.put(this.prefix + route)
					: method === 'DELETE'
						? this.scope.delete(this.prefix + route)
						: this.scope.get(this.prefix + route);
		interceptor.reply(function (this: nock.ReplyFnContext, uri: string, body: nock.Body) {
			record.call(this, uri, body);
			return [response.status, response.body, response.headers] as nock.ReplyFnResult;
		});
		return this;
	}

	/** POST /_api/cursor → 201 with `result` rows (shape of RestCursorCreateCursorForLimitReturnSingle). */
	cursor(result: unknown[], stats: { writesExecuted?: number; writesIgnored?: number } = {}): this {
		const response = real('RestCursorCreateCursorForLimitReturnSingle');
		response.body.result = result;
		delete response.body.count;
		const extra = response.body.extra as { stats: Record<string, number> };
		extra.stats.writesExecuted = stats.writesExecuted ?? 0;
		extra.stats.writesIgnored = stats.writesIgnored ?? 0;
		return this.reply('POST', '/_api/cursor', response);
	}

	/** POST /_api/cursor → an ArangoDB error (shape of RestCursorDeleteQueryFail, a real query error). */
	cursorError(code: number, errorNum: number, errorMessage: string): this {
		const response = real('RestCursorDeleteQueryFail');
		response.status = code;
		Object.assign(response.body, { code, errorNum, errorMessage });
		return this.reply('POST', '/_api/cursor', response);
	}

	/** POST /_api/transaction/begin → 201 running (RestTransactionBeginSingle). */
	begin(id: string): this {
		const response = real('RestTransactionBeginSingle');
		(response.body.result as { id: string }).id = id;
		return this.reply('POST', '/_api/transaction/begin', response);
	}

	/** POST /_api/transaction/begin → 404 1203 unknown collection (RestTransactionBeginNonExisting). */
	beginUnknownCollection(): this {
		return this.reply('POST', '/_api/transaction/begin', real('RestTransactionBeginNonExisting'));
	}

	/** PUT /_api/transaction/{id} → 200 committed (the real commit response). */
	commit(id: string): this {
		const response = real('RestTransactionBeginAbort');
		(response.body.result as { id: string }).id = id;
		return this.reply('PUT', `/_api/transaction/${id}`, response);
	}

	/** DELETE /_api/transaction/{id} → 200 aborted (the real abort response). */
	abort(id: string): this {
		const response = real('RestTransactionBeginCommit');
		(response.body.result as { id: string }).id = id;
		return this.reply('DELETE', `/_api/transaction/${id}`, response);
	}

	/** The next POST /_api/cursor fails at the socket (no server). */
	cursorNetworkError(code = 'ECONNREFUSED'): this {
		this.scope
			.post(`${this.prefix}/_api/cursor`)
			.replyWithError(Object.assign(new Error(`connect ${code} 127.0.0.1:8529`), { code }));
		return this;
	}

	/** Requests that are AQL cursors, with their query and bind vars. */
	queries(): { query: string; bindVars: Record<string, unknown>; trxId: string | undefined }[] {
		return this.requests
			.filter((r) => r.path.endsWith('/_api/cursor'))
			.map((r) => ({
				query: String(r.body?.query ?? ''),
				bindVars: (r.body?.bindVars ?? {}) as Record<string, unknown>,
				trxId: r.headers['x-arango-trx-id'] as string | undefined,
			}));
	}

	/** Every scripted reply was used. */
	isDone(): boolean {
		return this.scope.isDone();
	}

	/** Removes the interceptors and lets real connections through again. */
	static reset(): void {
		nock.cleanAll();
		nock.enableNetConnect();
	}
}

/** A 1200 conflict as /_api/cursor reports it for a failed CAS (HTTP 409, errorNum 1200). */
export const CONFLICT_1200 = [
	409,
	1200,
	'AQL: conflict, _rev values do not match [node #9: UpdateNode] (while executing)',
] as const;
