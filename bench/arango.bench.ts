/**
 * `npm run bench:arango`: HTTP round trips and time per ArangoCAS operation (fewer is better).
 *
 * ArangoDB cannot run here, so the operations talk to a stand-in ArangoDB on 127.0.0.1 that answers
 * with the shapes of real 3.12 responses (test/fixtures/arangodb) and adds BENCH_RTT_MS (default 2 ms) of
 * latency per request, like a database one network hop away. Both variants run in the same process
 * against the same stand-in:
 *   contracts — the node's operations as shipped: one AQL query where ArangoDB allows it, a stream
 *               transaction only where it must (merge: begin, 2 queries, commit);
 *   baseline  — the same AQL statements, each operation wrapped in its own stream transaction
 *               (begin, statements, commit), as the seed's "ArangoDB Transaction" headings read literally.
 * Prints round trips per operation for both, and the ratio of total time (baseline / contracts; higher
 * is better for us). BENCH_ARANGO_ROUNDS (default 200) executions per operation and variant.
 */
import { Database } from 'arangojs';
import { RESOURCES } from '../nodes/ArangoCas/actions';
import { inStreamTransaction } from '../nodes/ArangoCas/transport/query';
import { ArangoStandIn } from '../test/helpers/arangoStandIn';

const RTT_MS = Number(process.env.BENCH_RTT_MS ?? 2);
const ROUNDS = Number(process.env.BENCH_ARANGO_ROUNDS ?? 200);

/** One valid input per operation (`resource.operation`), as the node would pass it (test/unit/benchArangoInputs.test.ts). */
export const INPUTS: Record<string, Record<string, unknown>> = {
	'atom.lock': { atom_id: 'a1', user_id: 'u1', expected_rev: '_r1' },
	'atom.unlock': { atom_id: 'a1', user_id: 'u1', expected_rev: '_r1' },
	'atom.archive': { atom_id: 'a1', user_id: 'u1', expected_rev: '_r1', reason: 'r' },
	'atom.unlockExpired': {},
	'proposal.create': { target_active_id: 'a1', new_content: 'x', author: 'u1' },
	'proposal.reject': { proposal_id: 'p1', expected_proposal_rev: '_r1', user_id: 'u1' },
	'proposal.merge': {
		winner_proposal_id: 'p1',
		current_active_id: 'a1',
		user_id: 'u1',
		structure_edge_id: 'e1',
		expected_edge_rev: '_e1',
	},
	'baseline.create': { doc_id: 'doc_1', version_tag: 'v1', user_id: 'u1' },
	'analysis.loadContext': { target_atom_id: 'a1', agent_role_key: 'tech_lead', user_id: 'u1' },
	'analysis.saveResult': {
		target_atom_id: 'a1',
		prompt_id: 'prompts/p1',
		ai_response: { issues: [{ description: 'd', severity: 'low' }] },
		user_id: 'u1',
	},
	'analysis.saveError': { target_atom_id: 'a1', status_code: 503, user_id: 'u1' },
};

async function main() {
	const standIn = new ArangoStandIn(RTT_MS);
	await standIn.up();
	const db = new Database({
		url: standIn.url,
		databaseName: 'bench',
		auth: { username: 'root', password: '' },
		maxRetries: false,
	});
	const rows: { op: string; ours: number; base: number; oursMs: number; baseMs: number }[] = [];
	for (const resource of RESOURCES) {
		for (const op of resource.operations) {
			const name = `${resource.value}.${op.value}`;
			// contracts: the operation as shipped.
			standIn.requests.length = 0;
			await op.execute(db, INPUTS[name], { executionId: '1' });
			const ours = standIn.requests.length;
			const statements = standIn.queries().map(({ query, bindVars }) => ({ query, bindVars }));
			let t = performance.now();
			for (let i = 0; i < ROUNDS; i++) await op.execute(db, INPUTS[name], { executionId: '1' });
			standIn.requests.length = 0;
			const oursMs = (performance.now() - t) / ROUNDS;
			// baseline: the same statements, always inside a stream transaction of their own.
			const baseline = () =>
				inStreamTransaction(db, { write: ['atoms'] }, async (run) => {
					for (const s of statements) await run({ ...s, operation: 'bench', collection: 'atoms' });
				});
			standIn.requests.length = 0;
			await baseline();
			const base = op.value === 'merge' ? ours : standIn.requests.length;
			t = performance.now();
			for (let i = 0; i < ROUNDS; i++)
				await (op.value === 'merge' ? op.execute(db, INPUTS[name], { executionId: '1' }) : baseline());
			const baseMs = (performance.now() - t) / ROUNDS;
			rows.push({ op: name, ours, base, oursMs, baseMs });
		}
	}
	db.close();
	await standIn.down();
	console.log(
		`ArangoCAS round trips per operation (stand-in ArangoDB, ${RTT_MS} ms per request, ${ROUNDS} rounds each)`,
	);
	console.log('| operation | contracts: round trips | baseline: round trips | contracts ms/op | baseline ms/op |');
	console.log('|---|---|---|---|---|');
	for (const r of rows)
		console.log(`| ${r.op} | ${r.ours} | ${r.base} | ${r.oursMs.toFixed(2)} | ${r.baseMs.toFixed(2)} |`);
	const totalOurs = rows.reduce((s, r) => s + r.ours, 0);
	const totalBase = rows.reduce((s, r) => s + r.base, 0);
	const timeOurs = rows.reduce((s, r) => s + r.oursMs, 0);
	const timeBase = rows.reduce((s, r) => s + r.baseMs, 0);
	console.log(`total round trips: contracts ${totalOurs}, baseline ${totalBase}`);
	console.log(`ratio (baseline time / contracts time, higher is better): ${(timeBase / timeOurs).toFixed(2)}x`);
}

if (require.main === module)
	main().catch((error) => {
		console.error(error);
		process.exit(1);
	});
