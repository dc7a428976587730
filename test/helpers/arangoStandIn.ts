/**
 * A stand-in ArangoDB on 127.0.0.1 (a real HTTP server) for tests that run the node inside n8n and for
 * the round-trip bench. It answers `/_api/cursor`, `/_api/transaction/begin` and commit/abort with the
 * shapes of real ArangoDB 3.12 responses (test/fixtures/arangodb), choosing the result rows of a query by
 * a phrase of its AQL; a test can queue other rows or an ArangoDB error for the next matching query
 * (or set `replyFn` to choose answers from the query and its bind vars),
 * and take the server down (connections refused) and up again on the same port.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { realResponses } from './arangoHttp';
import { SwitchableServer } from './switchableServer';

export interface StandInRequest {
	method: string;
	path: string;
	trxId: string | undefined;
	body: Record<string, unknown> | null;
}

export type Reply =
	| { rows: unknown[]; stats?: { writesExecuted?: number; writesIgnored?: number } }
	| { error: [number, number, string] };

/** The OK result row of each ArangoCAS query, keyed by a phrase unique to that AQL (first match wins). */
export const OK_ROWS: [RegExp, unknown[]][] = [
	[/REMOVE pe IN proposal_links/, ['proposal_links/w1']],
	[
		/UPDATE \{ _key: e\._key, _rev: @expected_edge_rev \}/,
		[
			{
				outcome: 'OK',
				structure_edge_rev: '_e2',
				changed_atoms: [
					{ id: 'atoms/a', status: 'archived' },
					{ id: 'atoms/w', status: 'active' },
				],
				rebased_proposals: [{ id: 'atoms/p2', outdated: true }],
				revision_link_id: 'revision_links/r1',
			},
		],
	],
	[/ignoreErrors: true/, [{ id: 'atoms/a1', atom_rev: '_r' }]],
	[
		/INTO baseline_items/,
		[{ outcome: 'OK', illegal: [], baseline_id: 'baselines/b1', frozen_at: 1_700_000_000_000, items: ['atoms/a1'] }],
	],
	[
		/SORT p\.version DESC/,
		[
			{
				outcome: 'OK',
				atom_exists: true,
				prompt_exists: true,
				atom_text: 'The system shall log in users.',
				prompt: {
					_id: 'prompts/tech_lead_v1',
					template: 'Review: {{content}}',
					model_config: { model: 'llama3', temperature: 0.1, response_format: 'json' },
				},
				issues_context: [],
			},
		],
	],
	[/type: "ai_error"/, [{ outcome: 'OK', error_artifact_id: 'artifacts/e1' }]],
	[/type: "detected_in"/, [{ outcome: 'OK', atom_exists: true, prompt_exists: true, artifact_ids: ['artifacts/i1'] }]],
	[
		/INTO proposal_links/,
		[{ outcome: 'OK', proposal_id: 'atoms/p9', proposal_rev: '_p1', proposal_link_id: 'proposal_links/l9' }],
	],
	[
		/./,
		[
			{
				outcome: 'OK',
				atom_rev: '_r2',
				new_locked_until: 1_700_000_300_000,
				proposal_rev: '_r2',
				archived_at: 1_700_000_000_000,
				structure_edges_removed: ['structure_links/e1'],
			},
		],
	],
];

export class ArangoStandIn extends SwitchableServer {
	readonly requests: StandInRequest[] = [];
	private queued: { pattern: RegExp; reply: Reply }[] = [];
	/**
	 * A per-test answer chooser, asked (after the queue) for every cursor query: return a Reply to answer
	 * with it, undefined for the OK row. E.g. a lock held by one user: LOCKED unless bind var user_id is hers.
	 */
	replyFn: ((query: string, bindVars: Record<string, unknown>) => Reply | undefined) | undefined;
	private trx = 1000;

	/** @param rttMs latency added to every answer (ms) */
	constructor(private readonly rttMs = 0) {
		super();
	}

	/** The next query matching `pattern` gets `reply` instead of its OK row. */
	queue(pattern: RegExp, reply: Reply): void {
		this.queued.push({ pattern, reply });
	}

	/** Cursor requests (query, bind vars, transaction header). */
	queries(): { query: string; bindVars: Record<string, unknown>; trxId: string | undefined }[] {
		return this.requests
			.filter((r) => r.path.endsWith('/_api/cursor'))
			.map((r) => ({
				query: String(r.body?.query),
				bindVars: (r.body?.bindVars ?? {}) as Record<string, unknown>,
				trxId: r.trxId,
			}));
	}

	private send(res: ServerResponse, status: number, body: unknown): void {
		const write = () => {
			res.writeHead(status, { 'content-type': 'application/json', server: 'ArangoDB' });
			res.end(JSON.stringify(body));
		};
		if (this.rttMs > 0) setTimeout(write, this.rttMs);
		else write();
	}

	protected handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
		const path = req.url ?? '';
		const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
		const trxId = req.headers['x-arango-trx-id'] as string | undefined;
		this.requests.push({ method: req.method ?? '', path, trxId, body });
		const real = realResponses();
		if (path.endsWith('/_api/cursor')) {
			const query = String(body?.query ?? '');
			const i = this.queued.findIndex((q) => q.pattern.test(query));
			const bindVars = (body?.bindVars ?? {}) as Record<string, unknown>;
			const reply: Reply =
				i >= 0
					? this.queued.splice(i, 1)[0].reply
					: (this.replyFn?.(query, bindVars) ?? { rows: OK_ROWS.find(([p]) => p.test(query))![1] });
			if ('error' in reply) {
				const [code, errorNum, errorMessage] = reply.error;
				return this.send(res, code, { ...real.RestCursorDeleteQueryFail_single.body, code, errorNum, errorMessage });
			}
			const template = real.RestCursorCreateCursorForLimitReturnSingle_single.body as {
				extra: { stats: Record<string, number> };
			};
			const stats = {
				...template.extra.stats,
				writesExecuted: reply.stats?.writesExecuted ?? 0,
				writesIgnored: reply.stats?.writesIgnored ?? 0,
			};
			return this.send(res, 201, {
				...template,
				result: reply.rows,
				count: undefined,
				extra: { ...template.extra, stats },
			});
		}
		if (path.endsWith('/_api/transaction/begin')) {
			return this.send(res, 201, {
				...real.RestTransactionBeginSingle_single.body,
				result: { id: String(++this.trx), status: 'running' },
			});
		}
		if (path.includes('/_api/transaction/')) {
			const status = req.method === 'PUT' ? 'committed' : 'aborted';
			return this.send(res, 200, {
				...real.RestTransactionBeginAbort_single.body,
				result: { id: path.split('/').pop(), status },
			});
		}
		this.send(res, 404, {
			...real.RestCursorCreateCursorUnknownCollection_single.body,
			errorMessage: `unknown path ${path}`,
		});
	}
}
