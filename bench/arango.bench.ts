/**
 * `npm run bench:arango`: HTTP round trips and time per ArangoCAS operation (fewer is better).
 *
 * ArangoDB cannot run here, so the operations talk to a stand-in ArangoDB on 127.0.0.1 that answers
 * with the shapes of real 3.12 responses (../shared/reference) and adds BENCH_RTT_MS (default 2 ms) of
 * latency per request, like a database one network hop away. Both variants run in the same process
 * against the same stand-in:
 *   contracts — the node's operations as shipped: one AQL query where ArangoDB allows it, a stream
 *               transaction only where it must (merge: begin, 2 queries, commit);
 *   baseline  — the same AQL statements, each operation wrapped in its own stream transaction
 *               (begin, statements, commit), as the seed's "ArangoDB Transaction" headings read literally.
 * Prints round trips per operation for both, and the ratio of total time (baseline / contracts; higher
 * is better for us). BENCH_ROUNDS (default 200) executions per operation and variant.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Database } from 'arangojs';
import { RESOURCES } from '../nodes/ArangoCas/actions';
import { inStreamTransaction } from '../nodes/ArangoCas/transport/query';
import { realResponses } from '../test/helpers/arangoHttp';

const RTT_MS = Number(process.env.BENCH_RTT_MS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);

/** The OK result row the stand-in answers for each query (keyed by a phrase unique to that AQL). */
const OK_ROWS: [RegExp, unknown[]][] = [
	[/REMOVE pe IN proposal_links/, ['proposal_links/w1']],
	[/UPDATE \{ _key: e\._key, _rev: @expected_edge_rev \}/, [{ outcome: 'OK', structure_edge_rev: '_e2', changed_atoms: [{}, {}], rebased_proposals: [], revision_link_id: 'revision_links/r1' }]],
	[/ignoreErrors: true/, [{ id: 'atoms/a1', atom_rev: '_r' }]],
	[/INTO baseline_items/, [{ outcome: 'OK', illegal: [], baseline_id: 'baselines/b1', frozen_at: 1, items: ['atoms/a1'] }]],
	[/SORT p\.version DESC/, [{ outcome: 'OK', atom_exists: true, prompt_exists: true, atom_text: 't', prompt: { _id: 'prompts/p1', template: '{{content}}', model_config: {} }, issues_context: [] }]],
	[/type: "ai_error"/, [{ outcome: 'OK', error_artifact_id: 'artifacts/e1' }]],
	[/type: "detected_in"/, [{ outcome: 'OK', atom_exists: true, prompt_exists: true, artifact_ids: ['artifacts/i1'] }]],
	[/INTO proposal_links/, [{ outcome: 'OK', proposal_id: 'atoms/p9', proposal_rev: '_p', proposal_link_id: 'proposal_links/l9' }]],
	[/./, [{ outcome: 'OK', atom_rev: '_r2', new_locked_until: 1, proposal_rev: '_r2', archived_at: 1, structure_edges_removed: [] }]],
];

const INPUTS: Record<string, Record<string, unknown>> = {
	'atom.lock': { atom_id: 'a1', user_id: 'u1', expected_rev: '_r1' },
	'atom.unlock': { atom_id: 'a1', user_id: 'u1', expected_rev: '_r1' },
	'atom.archive': { atom_id: 'a1', user_id: 'u1', expected_rev: '_r1', reason: 'r' },
	'atom.unlockExpired': {},
	'proposal.create': { target_active_id: 'a1', new_content: 'x', author: 'u1' },
	'proposal.reject': { proposal_id: 'p1', expected_proposal_rev: '_r1' },
	'proposal.merge': { winner_proposal_id: 'p1', current_active_id: 'a1', user_id: 'u1', structure_edge_id: 'e1', expected_edge_rev: '_e1' },
	'baseline.create': { doc_id: 'doc_1', version_tag: 'v1' },
	'analysis.loadContext': { target_atom_id: 'a1', agent_role_key: 'tech_lead' },
	'analysis.saveResult': { target_atom_id: 'a1', prompt_id: 'prompts/p1', ai_response: { issues: [{ description: 'd', severity: 'low' }] } },
	'analysis.saveError': { target_atom_id: 'a1', status_code: 503 },
};

interface StandIn {
	url: string;
	requests: number;
	cursorBodies: { query: string; bindVars: Record<string, unknown> }[];
	close(): Promise<void>;
}

async function startStandIn(): Promise<StandIn> {
	const real = realResponses();
	const cursor = real.RestCursorCreateCursorForLimitReturnSingle_single;
	const begin = real.RestTransactionBeginSingle_single;
	const ended = real.RestTransactionBeginAbort_single;
	let trx = 1000;
	const state = { requests: 0, cursorBodies: [] as StandIn['cursorBodies'] };
	const send = (res: ServerResponse, status: number, body: unknown) => {
		setTimeout(() => {
			res.writeHead(status, { 'content-type': 'application/json' });
			res.end(JSON.stringify(body));
		}, RTT_MS);
	};
	const server = createServer((req: IncomingMessage, res: ServerResponse) => {
		let raw = '';
		req.on('data', (chunk) => (raw += chunk));
		req.on('end', () => {
			state.requests++;
			const url = req.url ?? '';
			if (url.endsWith('/_api/cursor')) {
				const body = JSON.parse(raw) as { query: string; bindVars: Record<string, unknown> };
				state.cursorBodies.push(body);
				const rows = OK_ROWS.find(([pattern]) => pattern.test(body.query))![1];
				return send(res, 201, { ...cursor.body, result: rows, count: undefined });
			}
			if (url.endsWith('/_api/transaction/begin')) return send(res, 201, { ...begin.body, result: { id: String(++trx), status: 'running' } });
			if (url.includes('/_api/transaction/')) return send(res, 200, { ...ended.body, result: { id: url.split('/').pop(), status: req.method === 'PUT' ? 'committed' : 'aborted' } });
			send(res, 404, { error: true, code: 404, errorNum: 404, errorMessage: 'unknown path' });
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}`,
		get requests() {
			return state.requests;
		},
		set requests(v: number) {
			state.requests = v;
		},
		cursorBodies: state.cursorBodies,
		close: () => new Promise<void>((resolve) => server.close(() => resolve())),
	};
}

async function main() {
	const standIn = await startStandIn();
	const db = new Database({ url: standIn.url, databaseName: 'bench', auth: { username: 'root', password: '' }, maxRetries: false });
	const rows: { op: string; ours: number; base: number; oursMs: number; baseMs: number }[] = [];
	for (const resource of RESOURCES) {
		for (const op of resource.operations) {
			const name = `${resource.value}.${op.value}`;
			// contracts: the operation as shipped.
			standIn.requests = 0;
			standIn.cursorBodies.length = 0;
			await op.execute(db, INPUTS[name], { executionId: '1' });
			const ours = standIn.requests;
			const statements = [...standIn.cursorBodies];
			let t = performance.now();
			for (let i = 0; i < ROUNDS; i++) await op.execute(db, INPUTS[name], { executionId: '1' });
			const oursMs = (performance.now() - t) / ROUNDS;
			// baseline: the same statements, always inside a stream transaction of their own.
			const baseline = () =>
				inStreamTransaction(db, { write: ['atoms'] }, async (run) => {
					for (const s of statements) await run({ ...s, operation: 'bench', collection: 'atoms' });
				});
			standIn.requests = 0;
			await baseline();
			const base = op.value === 'merge' ? ours : standIn.requests;
			t = performance.now();
			for (let i = 0; i < ROUNDS; i++) await (op.value === 'merge' ? op.execute(db, INPUTS[name], { executionId: '1' }) : baseline());
			const baseMs = (performance.now() - t) / ROUNDS;
			rows.push({ op: name, ours, base, oursMs, baseMs });
		}
	}
	db.close();
	await standIn.close();
	console.log(`ArangoCAS round trips per operation (stand-in ArangoDB, ${RTT_MS} ms per request, ${ROUNDS} rounds each)`);
	console.log('| operation | contracts: round trips | baseline: round trips | contracts ms/op | baseline ms/op |');
	console.log('|---|---|---|---|---|');
	for (const r of rows) console.log(`| ${r.op} | ${r.ours} | ${r.base} | ${r.oursMs.toFixed(2)} | ${r.baseMs.toFixed(2)} |`);
	const totalOurs = rows.reduce((s, r) => s + r.ours, 0);
	const totalBase = rows.reduce((s, r) => s + r.base, 0);
	const timeOurs = rows.reduce((s, r) => s + r.oursMs, 0);
	const timeBase = rows.reduce((s, r) => s + r.baseMs, 0);
	console.log(`total round trips: contracts ${totalOurs}, baseline ${totalBase}`);
	console.log(`ratio (baseline time / contracts time, higher is better): ${(timeBase / timeOurs).toFixed(2)}x`);
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
