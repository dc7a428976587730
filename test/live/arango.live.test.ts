/**
 * ArangoCAS against a real ArangoDB (3.12), run whenever ARANGO_URL is set (ARANGO_USER, ARANGO_PASSWORD
 * optional; root with an empty password by default). It creates its own database, applies
 * db/arango/schema.json with the migration, runs the same cases as the HTTP-level tests plus the
 * concurrency cases, and drops the database. Without ARANGO_URL every test reports itself skipped,
 * with the reason: ArangoDB cannot run on the machines this project is built on (no Docker engine, no
 * package ships arangod). See docs/testing.md "ArangoDB live suite" for `docker run arangodb:3.12`.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from '@jest/globals';
import { testSkipIf } from '../helpers/skip';
import { setTimeout as sleep } from 'node:timers/promises';
import { Database } from 'arangojs';
import { archive } from '../../nodes/ArangoCas/actions/atom/archive.operation';
import { lock } from '../../nodes/ArangoCas/actions/atom/lock.operation';
import { unlock } from '../../nodes/ArangoCas/actions/atom/unlock.operation';
import { unlockExpired } from '../../nodes/ArangoCas/actions/atom/unlockExpired.operation';
import { createBaseline } from '../../nodes/ArangoCas/actions/baseline/create.operation';
import { loadContext } from '../../nodes/ArangoCas/actions/analysis/loadContext.operation';
import { saveError } from '../../nodes/ArangoCas/actions/analysis/saveError.operation';
import { saveResult } from '../../nodes/ArangoCas/actions/analysis/saveResult.operation';
import { createProposal } from '../../nodes/ArangoCas/actions/proposal/create.operation';
import { mergeProposal } from '../../nodes/ArangoCas/actions/proposal/merge.operation';
import { rejectProposal } from '../../nodes/ArangoCas/actions/proposal/reject.operation';
import { ContractError } from '../../nodes/shared/errors';
import { RUN } from '../helpers/arangoOps';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrateArango } = require('../../scripts/lib/migrate-arango');

const URL_ = process.env.ARANGO_URL;
const SKIP = URL_
	? false
	: 'ARANGO_URL is not set: no ArangoDB server on this machine (see docs/testing.md, ArangoDB live suite)';
const auth = { username: process.env.ARANGO_USER || 'root', password: process.env.ARANGO_PASSWORD || '' };
const dbName = `contracts_live_${randomUUID().slice(0, 8)}`;
let db: Database;

beforeAll(async () => {
	if (SKIP) return;
	await migrateArango({ url: URL_, databaseName: dbName, auth, maxRetries: false });
	db = new Database({ url: URL_, databaseName: dbName, auth, maxRetries: false });
});

afterAll(async () => {
	if (SKIP) return;
	const system = new Database({ url: URL_, databaseName: '_system', auth });
	await system.dropDatabase(dbName).catch(() => undefined);
	system.close();
	db?.close();
});

async function rejection(promise: Promise<unknown>): Promise<ContractError> {
	try {
		await promise;
	} catch (error) {
		assert.ok(error instanceof ContractError, String(error));
		return error;
	}
	assert.fail('expected a failure');
}

/** A doc → section → active atom structure, with `proposals` proposal atoms for the atom. */
async function seedDoc(proposals = 2) {
	const tag = randomUUID().slice(0, 8);
	const doc = await db.collection('docs').save({ _key: `doc_${tag}`, title: 'Spec' });
	const section = await db.collection('docs').save({ _key: `sec_${tag}`, title: 'Section' });
	const atom = await db
		.collection('atoms')
		.save({ _key: `atom_${tag}`, content: 'The system shall…', status: 'active' }, { returnNew: true });
	await db.collection('structure_links').save({ _from: doc._id, _to: section._id, order: 1 });
	const edge = await db
		.collection('structure_links')
		.save({ _from: section._id, _to: atom._id, order: 7 }, { returnNew: true });
	const props = [];
	for (let i = 0; i < proposals; i++) {
		const p = await db
			.collection('atoms')
			.save({ _key: `prop${i}_${tag}`, content: `alt ${i}`, status: 'proposal' }, { returnNew: true });
		await db.collection('proposal_links').save({ _from: p._id, _to: atom._id, type: 'alternative', outdated: false });
		props.push(p);
	}
	return { doc, section, atom, edge, props };
}

const atomDoc = (key: string) => db.collection('atoms').document(key);

testSkipIf(SKIP)(
	'live: lock → 423 for another user → unlock by owner; stale _rev → 409 with the current _rev',
	async () => {
		const { atom } = await seedDoc(0);
		const locked = await lock.execute(db, { atom_id: atom._key, user_id: 'u1', expected_rev: atom._rev }, RUN);
		const other = await rejection(
			lock.execute(db, { atom_id: atom._key, user_id: 'u2', expected_rev: locked.data.atom_rev }, RUN),
		);
		assert.deepEqual([other.statusCode, other.details.locked_by], [423, 'u1']);
		const stale = await rejection(
			unlock.execute(db, { atom_id: atom._key, user_id: 'u1', expected_rev: atom._rev }, RUN),
		);
		assert.deepEqual([stale.statusCode, stale.details.current_rev], [409, locked.data.atom_rev]);
		await unlock.execute(db, { atom_id: atom._key, user_id: 'u1', expected_rev: locked.data.atom_rev }, RUN);
		const released = await atomDoc(atom._key);
		assert.deepEqual([released.locked_by, released.unlocked_by], [null, 'u1'], 'issue 25: unlocked_by names the user');
		// unlocking an atom that is not locked writes nothing: same _rev, unlocked_by kept
		const again = await unlock.execute(db, { atom_id: atom._key, user_id: 'u2', expected_rev: released._rev }, RUN);
		assert.equal(again.data.atom_rev, released._rev);
		const unchanged = await atomDoc(atom._key);
		assert.deepEqual([unchanged._rev, unchanged.unlocked_by], [released._rev, 'u1']);
		// a new lock clears unlocked_by
		await lock.execute(db, { atom_id: atom._key, user_id: 'u2', expected_rev: released._rev }, RUN);
		const relocked = await atomDoc(atom._key);
		assert.deepEqual([relocked.locked_by, relocked.unlocked_by], ['u2', null]);
	},
);

testSkipIf(SKIP)('live: 50 parallel locks of one atom → exactly one owner, 49 refusals', async () => {
	const { atom } = await seedDoc(0);
	const results = await Promise.allSettled(
		Array.from({ length: 50 }, (_, i) =>
			lock.execute(db, { atom_id: atom._key, user_id: `u${i}`, expected_rev: atom._rev }, RUN),
		),
	);
	const won = results.filter((r) => r.status === 'fulfilled');
	assert.equal(won.length, 1);
	for (const r of results) {
		if (r.status !== 'rejected') continue;
		const e = r.reason as ContractError;
		assert.ok([409, 423].includes(e.statusCode));
		// a lost race (1200) reads the _rev again after the conflict: never null while the atom exists
		if (e.statusCode === 409) assert.equal(typeof e.details.current_rev, 'string', JSON.stringify(e.details));
	}
	const stored = await atomDoc(atom._key);
	assert.equal(
		stored.locked_by,
		(won[0] as PromiseFulfilledResult<{ data: Record<string, unknown> }>).value.data.locked_by,
	);
});

testSkipIf(SKIP)('live: merge switches the edge, archives, activates, links, rebases and unlinks', async () => {
	const { atom, edge, props } = await seedDoc(3);
	const [winner] = props;
	const result = await mergeProposal.execute(
		db,
		{
			winner_proposal_id: winner._key,
			current_active_id: atom._key,
			user_id: 'u1',
			structure_edge_id: edge._id,
			expected_edge_rev: edge._rev,
		},
		RUN,
	);
	assert.equal(result.data.rebased_proposals_count, 2);
	assert.equal((await db.collection('structure_links').document(edge._key))._to, winner._id);
	assert.equal((await atomDoc(atom._key)).status, 'archived');
	assert.equal((await atomDoc(winner._key)).status, 'active');
	const links = await (
		await db.query({
			query: 'FOR l IN proposal_links FILTER l._to == @w OR l._from == @w RETURN l',
			bindVars: { w: winner._id },
		})
	).all();
	assert.equal(links.filter((l) => l._from === winner._id).length, 0, 'winner link removed');
	assert.ok(
		links
			.filter((l) => l._to === winner._id)
			.every((l) => l.outdated === true && l.rebased_from === atom._id && l.rebased_by === 'u1'),
		'rebased links name who merged',
	);
	const replaces = await (
		await db.query({ query: 'FOR r IN revision_links FILTER r._from == @w RETURN r', bindVars: { w: winner._id } })
	).all();
	assert.equal(replaces.length, 1);
});

testSkipIf(SKIP)(
	'live: 50 parallel merges of one proposal set → 1 success, 49 conflicts, no orphan active atom',
	async () => {
		const { atom, edge, props } = await seedDoc(50);
		const results = await Promise.allSettled(
			props.map((p) =>
				mergeProposal.execute(
					db,
					{
						winner_proposal_id: p._key,
						current_active_id: atom._key,
						user_id: 'u1',
						structure_edge_id: edge._id,
						expected_edge_rev: edge._rev,
					},
					RUN,
				),
			),
		);
		assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
		for (const r of results) {
			if (r.status !== 'rejected') continue;
			const e = r.reason as ContractError;
			assert.equal(e.statusCode, 409);
			// a lost race (1200): the edge and both atoms read again, conflict_on consistent with them
			if (e.details.arango_error_num !== 1200) continue;
			const revs = e.details.current_revs as Record<string, string | null>;
			const ids = Object.keys(revs);
			assert.ok(
				ids.length === 3 && ids[0] === edge._id && ids[1] === atom._id && props.some((p) => p._id === ids[2]),
				JSON.stringify(e.details),
			);
			assert.equal(e.details.current_rev, revs[edge._id]);
			assert.deepEqual(e.details.conflict_on, revs[edge._id] === edge._rev ? [] : [edge._id]);
		}
		const active = await (
			await db.query({
				query: 'FOR a IN atoms FILTER a._key IN @keys AND a.status == "active" RETURN a._id',
				bindVars: { keys: [atom._key, ...props.map((p) => p._key)] },
			})
		).all();
		assert.equal(active.length, 1, 'exactly one active atom');
		assert.equal(
			(await db.collection('structure_links').document(edge._key))._to,
			active[0],
			'and the edge points to it',
		);
	},
);

testSkipIf(SKIP)('live: merge with a stale edge _rev → 409 and nothing changed', async () => {
	const { atom, edge, props } = await seedDoc(1);
	const error = await rejection(
		mergeProposal.execute(
			db,
			{
				winner_proposal_id: props[0]._key,
				current_active_id: atom._key,
				user_id: 'u1',
				structure_edge_id: edge._id,
				expected_edge_rev: '_stale',
			},
			RUN,
		),
	);
	assert.deepEqual([error.statusCode, error.details.current_rev], [409, edge._rev]);
	assert.equal((await atomDoc(props[0]._key)).status, 'proposal');
	assert.equal((await db.collection('structure_links').document(edge._key))._rev, edge._rev);
});

/**
 * Runs `during` while another stream transaction holds an uncommitted write to `collection/key`, then
 * aborts that transaction. ArangoDB (RocksDB, 3.11+) makes a second writer of the key wait for its lock
 * up to the lock timeout (--rocksdb.transaction-lock-timeout, 1 s by default) and then fail with
 * errorNum 1200 ("timeout waiting to lock key"): a lost race on demand. With `commitAfterMs` the holder
 * commits instead, after that delay (the waiting writer then conflicts with a newer `_rev`).
 */
async function whileHeld<T>(
	collection: string,
	key: string,
	during: () => Promise<T>,
	commitAfterMs?: number,
): Promise<{ result: T; heldRev: string }> {
	const holder = await db.beginTransaction({ write: [collection] });
	let committed = false;
	try {
		const held = await holder.step(() => db.collection(collection).update(key, { held_by_test: true }));
		const commit =
			commitAfterMs === undefined
				? undefined
				: sleep(commitAfterMs)
						.then(() => holder.commit())
						.then(() => {
							committed = true;
						});
		try {
			return { result: await during(), heldRev: held._rev };
		} finally {
			// a failed commit shows as a current_rev other than heldRev
			await commit?.catch(() => undefined);
		}
	} finally {
		if (!committed) await holder.abort().catch(() => undefined);
	}
}

const mergeInput = (atom: { _key: string }, edge: { _id: string; _rev: string }, winner: { _key: string }) => ({
	winner_proposal_id: winner._key,
	current_active_id: atom._key,
	user_id: 'u1',
	structure_edge_id: edge._id,
	expected_edge_rev: edge._rev,
});

testSkipIf(SKIP)(
	'live (1200 on an atom): a merge while another transaction writes the winner → 409 with the current _revs of the edge and both atoms, conflict_on []',
	async () => {
		const { atom, edge, props } = await seedDoc(1);
		const { result: error } = await whileHeld('atoms', props[0]._key, () =>
			rejection(mergeProposal.execute(db, mergeInput(atom, edge, props[0]), RUN)),
		);
		assert.deepEqual(
			[error.statusCode, error.details.code, error.details.arango_error_num],
			[409, 'REV_CONFLICT', 1200],
			JSON.stringify(error.details),
		);
		assert.deepEqual(
			[error.details.expected_rev, error.details.current_rev],
			[edge._rev, edge._rev],
			'the edge did not change',
		);
		assert.deepEqual(error.details.current_revs, {
			[edge._id]: edge._rev,
			[atom._id]: atom._rev,
			[props[0]._id]: props[0]._rev,
		});
		assert.deepEqual(error.details.conflict_on, []);
		assert.match(error.message, /concurrent write to the structure edge or an atom of this merge/);
		assert.deepEqual(
			[(await atomDoc(atom._key)).status, (await atomDoc(props[0]._key)).status],
			['active', 'proposal'],
			'nothing merged',
		);
	},
);

testSkipIf(SKIP)(
	'live (1200 on the edge): a merge while another transaction moves the edge and commits → 409, current_rev = the new edge _rev, conflict_on [edge]',
	async () => {
		const { atom, edge, props } = await seedDoc(1);
		const { result: error, heldRev } = await whileHeld(
			'structure_links',
			edge._key,
			() => rejection(mergeProposal.execute(db, mergeInput(atom, edge, props[0]), RUN)),
			300,
		);
		assert.deepEqual(
			[error.statusCode, error.details.code, error.details.arango_error_num],
			[409, 'REV_CONFLICT', 1200],
			JSON.stringify(error.details),
		);
		assert.deepEqual([error.details.expected_rev, error.details.current_rev], [edge._rev, heldRev]);
		assert.deepEqual(error.details.current_revs, {
			[edge._id]: heldRev,
			[atom._id]: atom._rev,
			[props[0]._id]: props[0]._rev,
		});
		assert.deepEqual(error.details.conflict_on, [edge._id]);
	},
);

testSkipIf(SKIP)(
	"live (1200): Create Proposal while another transaction writes the target → 409 with the target's current _rev, nothing inserted",
	async () => {
		const { atom } = await seedDoc(0);
		const { result: error } = await whileHeld('atoms', atom._key, () =>
			rejection(createProposal.execute(db, { target_active_id: atom._key, new_content: 'late', author: 'u2' }, RUN)),
		);
		assert.deepEqual(
			[error.statusCode, error.details.code, error.details.arango_error_num],
			[409, 'REV_CONFLICT', 1200],
			JSON.stringify(error.details),
		);
		assert.deepEqual([error.details.current_rev, error.details.current_revs], [atom._rev, { [atom._id]: atom._rev }]);
		const links = await (
			await db.query({ query: 'FOR l IN proposal_links FILTER l._to == @a RETURN l', bindVars: { a: atom._id } })
		).all();
		assert.equal(links.length, 0);
	},
);

testSkipIf(SKIP)(
	'live (1200): Create Baseline while another transaction writes one of its atoms → 409 with current_revs of the reachable active atoms, no baseline',
	async () => {
		const { doc, section, atom } = await seedDoc(0);
		const second = await db.collection('atoms').save({ content: 'second', status: 'active' }, { returnNew: true });
		await db.collection('structure_links').save({ _from: section._id, _to: second._id, order: 9 });
		const { result: error } = await whileHeld('atoms', second._key, () =>
			rejection(createBaseline.execute(db, { doc_id: doc._id, version_tag: 'held', user_id: 'u1' }, RUN)),
		);
		assert.deepEqual(
			[error.statusCode, error.details.code, error.details.arango_error_num],
			[409, 'REV_CONFLICT', 1200],
			JSON.stringify(error.details),
		);
		assert.equal(error.details.current_rev, null);
		assert.deepEqual(error.details.current_revs, { [atom._id]: atom._rev, [second._id]: second._rev });
		const baselines = await (
			await db.query({ query: 'FOR b IN baselines FILTER b.doc_id == @d RETURN b', bindVars: { d: doc._id } })
		).all();
		assert.equal(baselines.length, 0);
	},
);

testSkipIf(SKIP)(
	'live: baseline snapshots each active atom once; archive of a snapshotted atom → PROTECTED_BY_BASELINE',
	async () => {
		const { doc, section, atom } = await seedDoc(0);
		await db.collection('structure_links').save({ _from: section._id, _to: atom._id, order: 8 }); // reachable twice
		const baseline = await createBaseline.execute(
			db,
			{ doc_id: doc._id, version_tag: 'v1.0', title: 'MVP', user_id: 'u1' },
			RUN,
		);
		assert.equal(baseline.data.items_snapshotted, 1);
		// issue 25: the baseline document names who created it
		assert.equal((await db.collection('baselines').document(String(baseline.data.baseline_id))).created_by, 'u1');
		// and so do its snapshot edges and the atoms it froze
		const items = await (
			await db.query({
				query: 'FOR i IN baseline_items FILTER i._from == @b RETURN i.created_by',
				bindVars: { b: baseline.data.baseline_id },
			})
		).all();
		assert.deepEqual(items, ['u1']);
		assert.equal((await atomDoc(atom._key)).baselined_by, 'u1');
		const again = await rejection(
			createBaseline.execute(db, { doc_id: doc._id, version_tag: 'v1.0', user_id: 'u1' }, RUN),
		);
		assert.equal(again.statusCode, 409);
		const current = await atomDoc(atom._key);
		const error = await rejection(
			archive.execute(db, { atom_id: atom._key, user_id: 'u1', expected_rev: current._rev }, RUN),
		);
		assert.deepEqual([error.statusCode, error.details.code], [409, 'PROTECTED_BY_BASELINE']);
	},
);

testSkipIf(SKIP)('live: docs → atoms edge → 422 and no baseline written', async () => {
	const { doc, atom } = await seedDoc(0);
	await db.collection('structure_links').save({ _from: doc._id, _to: atom._id, order: 1 });
	const error = await rejection(
		createBaseline.execute(db, { doc_id: doc._id, version_tag: 'bad', user_id: 'u1' }, RUN),
	);
	assert.equal(error.statusCode, 422);
	const count = await (
		await db.query({ query: 'FOR b IN baselines FILTER b.doc_id == @d RETURN 1', bindVars: { d: doc._id } })
	).all();
	assert.equal(count.length, 0);
});

testSkipIf(SKIP)('live: archive removes the structure edges and keeps the atom; proposal create/reject', async () => {
	const { atom, edge } = await seedDoc(0);
	const created = await createProposal.execute(
		db,
		{ target_active_id: atom._key, new_content: 'alt', author: 'u1' },
		RUN,
	);
	const link = await db.collection('proposal_links').document(String(created.data.proposal_link_id));
	assert.equal(link.created_by, 'u1', 'the proposal link names its creator');
	const rejected = await rejectProposal.execute(
		db,
		{
			proposal_id: String(created.data.proposal_id),
			expected_proposal_rev: String(created.data.proposal_rev),
			user_id: 'u2',
		},
		RUN,
	);
	const proposal = await db.collection('atoms').document(String(created.data.proposal_id));
	assert.deepEqual([proposal.status, proposal.rejected_by], ['rejected', 'u2']);
	assert.ok(rejected.data.proposal_rev);
	const archived = await archive.execute(
		db,
		{ atom_id: atom._key, user_id: 'u1', expected_rev: atom._rev, reason: 'gone' },
		RUN,
	);
	assert.deepEqual(archived.data.structure_edges_removed, [edge._id]);
	assert.equal((await atomDoc(atom._key)).status, 'archived');
});

testSkipIf(SKIP)('live: unlock expired clears only expired locks', async () => {
	const { atom } = await seedDoc(0);
	const other = await db
		.collection('atoms')
		.save({ content: 'x', status: 'active', locked_by: 'u9', locked_until: Date.now() + 600_000 });
	await db.collection('atoms').update(atom._key, { locked_by: 'u1', locked_until: Date.now() - 1000 });
	const result = await unlockExpired.execute(db, {}, RUN);
	assert.ok((result.data.unlocked as { id: string }[]).some((u) => u.id === atom._id));
	assert.equal((await atomDoc(other._key)).locked_by, 'u9');
	const cleared = await atomDoc(atom._key);
	assert.deepEqual([cleared.locked_by, cleared.unlocked_by], [null, 'system:expired']);
});

testSkipIf(SKIP)('live: analysis context, result and error artifacts', async () => {
	const { atom } = await seedDoc(0);
	const prompt = await db.collection('prompts').save({
		role_key: `fixer`,
		version: Date.now(),
		active: true,
		template: 'Fix {{content}}\n{{issues_context}}',
		model_config: { model: 'm', temperature: 0 },
	});
	const saved = await saveResult.execute(
		db,
		{
			target_atom_id: atom._key,
			prompt_id: prompt._id,
			model: 'm',
			ai_response: { issues: [{ description: 'd', severity: 'high' }] },
			user_id: 'u1',
		},
		RUN,
	);
	assert.equal(saved.data.artifacts_created, 1);
	const context = await loadContext.execute(
		db,
		{ target_atom_id: atom._key, agent_role_key: 'fixer', user_id: 'u1' },
		RUN,
	);
	assert.match(String(context.data.prompt), /- \[HIGH\] d/);
	assert.equal(context.data.requested_by, 'u1');
	const failed = await saveError.execute(
		db,
		{ target_atom_id: atom._key, prompt_id: prompt._id, status_code: 503, user_id: 'u1' },
		RUN,
	);
	assert.equal(failed.data.error_code, 'MODEL_ERROR');
	// issue 25: every artifact and edge written names who asked for the analysis
	const ids = [...(saved.data.artifact_ids as string[]), String(failed.data.error_artifact_id)];
	const actors = await (
		await db.query({
			query: `FOR id IN @ids LET a = DOCUMENT(id)
  RETURN { a: a.created_by, e: (FOR e IN UNION((FOR x IN semantic_links FILTER x._from == id RETURN x), (FOR x IN created_with FILTER x._from == id RETURN x)) RETURN e.created_by) }`,
			bindVars: { ids },
		})
	).all();
	assert.deepEqual(actors, [
		{ a: 'u1', e: ['u1', 'u1'] },
		{ a: 'u1', e: ['u1', 'u1'] },
	]);
});

/** Sets a lock the way the seed writes it: `locked_until` = DATE_ADD(DATE_NOW(), minutes, 'minutes'), an ISO string. */
async function seedLock(key: string, user: string, minutes: number): Promise<string> {
	const cursor = await db.query({
		query: `UPDATE @key WITH { locked_by: @user, locked_until: DATE_ADD(DATE_NOW(), @minutes, 'minutes') } IN atoms RETURN NEW`,
		bindVars: { key, user, minutes },
	});
	const [stored] = await cursor.all();
	assert.equal(typeof stored.locked_until, 'string', "the seed's DATE_ADD writes an ISO string");
	return stored._rev;
}

testSkipIf(SKIP)('live (§3.6.2): only the owner unlocks, even an expired lock; the sweep clears it', async () => {
	const { atom } = await seedDoc(0);
	await db.collection('atoms').update(atom._key, { locked_by: 'u1', locked_until: Date.now() - 60_000 });
	const rev = (await atomDoc(atom._key))._rev;
	const other = await rejection(unlock.execute(db, { atom_id: atom._key, user_id: 'u2', expected_rev: rev }, RUN));
	assert.deepEqual([other.statusCode, other.details.locked_by], [423, 'u1']);
	assert.equal((await atomDoc(atom._key)).locked_by, 'u1', 'nothing changed');
	const swept = await unlockExpired.execute(db, {}, RUN);
	assert.ok((swept.data.unlocked as { id: string }[]).some((u) => u.id === atom._id));
	assert.equal((await atomDoc(atom._key)).locked_by, null);
});

testSkipIf(SKIP)('live (§3.6.1 deviation): the holder renews its own lock; another user still gets 423', async () => {
	const { atom } = await seedDoc(0);
	const first = await lock.execute(
		db,
		{ atom_id: atom._key, user_id: 'u1', expected_rev: atom._rev, lease_minutes: 1 },
		RUN,
	);
	const renewed = await lock.execute(
		db,
		{ atom_id: atom._key, user_id: 'u1', expected_rev: String(first.data.atom_rev), lease_minutes: 10 },
		RUN,
	);
	assert.ok(Number(renewed.data.locked_until) > Number(first.data.locked_until));
	const other = await rejection(
		lock.execute(db, { atom_id: atom._key, user_id: 'u2', expected_rev: String(renewed.data.atom_rev) }, RUN),
	);
	assert.equal(other.statusCode, 423);
});

testSkipIf(SKIP)(
	'live: an ISO locked_until (seed DATE_ADD) is honoured by lock, unlock, archive, merge and the sweep',
	async () => {
		const { atom, edge, props } = await seedDoc(1);
		// future ISO deadline held by u1: active for every check
		let rev = await seedLock(atom._key, 'u1', 5);
		const locked = await rejection(lock.execute(db, { atom_id: atom._key, user_id: 'u2', expected_rev: rev }, RUN));
		assert.equal(locked.statusCode, 423);
		assert.ok(Math.abs(Number(locked.details.locked_until) - (Date.now() + 5 * 60_000)) < 60_000, 'reported in ms');
		const archived = await rejection(
			archive.execute(db, { atom_id: atom._key, user_id: 'u2', expected_rev: rev }, RUN),
		);
		assert.equal(archived.statusCode, 423);
		const merged = await rejection(
			mergeProposal.execute(
				db,
				{
					winner_proposal_id: props[0]._key,
					current_active_id: atom._key,
					user_id: 'u2',
					structure_edge_id: edge._id,
					expected_edge_rev: edge._rev,
				},
				RUN,
			),
		);
		assert.equal(merged.statusCode, 423);
		const swept = await unlockExpired.execute(db, {}, RUN);
		assert.ok(
			!(swept.data.unlocked as { id: string }[]).some((u) => u.id === atom._id),
			'an unexpired ISO lock is not swept',
		);
		const byOwner = await unlock.execute(db, { atom_id: atom._key, user_id: 'u1', expected_rev: rev }, RUN);
		assert.ok(byOwner.data.atom_rev);
		// past ISO deadline: free for lock (and swept)
		rev = await seedLock(atom._key, 'u1', -5);
		const taken = await lock.execute(db, { atom_id: atom._key, user_id: 'u2', expected_rev: rev }, RUN);
		assert.equal(taken.data.locked_by, 'u2');
		rev = await seedLock(atom._key, 'u1', -5);
		const sweep = await unlockExpired.execute(db, {}, RUN);
		assert.ok(
			(sweep.data.unlocked as { id: string }[]).some((u) => u.id === atom._id),
			'an expired ISO lock is swept',
		);
		assert.equal((await atomDoc(atom._key)).locked_by, null);
	},
);

testSkipIf(SKIP)(
	'live: Save Error on a missing atom keeps the AI error (artifact naming the atom, no failed_for edge)',
	async () => {
		const missing = `gone_${randomUUID().slice(0, 8)}`;
		const saved = await saveError.execute(
			db,
			{ target_atom_id: missing, status_code: 503, error_message: 'model crashed', user_id: 'u1' },
			RUN,
		);
		assert.deepEqual([saved.statusCode, saved.data.error_code, saved.data.target_missing], [201, 'MODEL_ERROR', true]);
		const artifact = await db.collection('artifacts').document(String(saved.data.error_artifact_id));
		assert.deepEqual(
			[artifact.type, artifact.target_missing, artifact.error_details.target_atom_id],
			['ai_error', true, `atoms/${missing}`],
		);
		const edges = await (
			await db.query({ query: 'FOR e IN semantic_links FILTER e._from == @a RETURN e', bindVars: { a: artifact._id } })
		).all();
		assert.equal(edges.length, 0);
	},
);

/** The statuses of many concurrent pairs, and the 409s they answered (each loser must be a 409). */
function settle(results: PromiseSettledResult<unknown>[]): boolean[] {
	for (const r of results)
		if (r.status === 'rejected') assert.equal((r.reason as ContractError).statusCode, 409, String(r.reason));
	return results.map((r) => r.status === 'fulfilled');
}

testSkipIf(SKIP)(
	'live race: Archive vs Create Baseline serialise — an archived atom is never in a baseline',
	async () => {
		for (let round = 0; round < 20; round++) {
			const { doc, atom } = await seedDoc(0);
			const [archived, baselined] = settle(
				await Promise.allSettled([
					archive.execute(db, { atom_id: atom._key, user_id: 'u1', expected_rev: atom._rev, reason: 'race' }, RUN),
					createBaseline.execute(db, { doc_id: doc._id, version_tag: `v${round}`, user_id: 'u1' }, RUN),
				]),
			);
			const stored = await atomDoc(atom._key);
			const items = await (
				await db.query({ query: 'FOR i IN baseline_items FILTER i._to == @a RETURN i', bindVars: { a: atom._id } })
			).all();
			assert.ok(
				!(stored.status === 'archived' && items.length > 0),
				`round ${round}: archived atom in a baseline (archive ${archived}, baseline ${baselined})`,
			);
			assert.ok(archived || baselined, 'one of the two commits');
		}
	},
);

testSkipIf(SKIP)(
	'live race: Create Proposal vs Merge serialise — no proposal stays linked to the archived atom',
	async () => {
		for (let round = 0; round < 20; round++) {
			const { atom, edge, props } = await seedDoc(1);
			const [created, merged] = settle(
				await Promise.allSettled([
					createProposal.execute(db, { target_active_id: atom._key, new_content: 'late', author: 'u2' }, RUN),
					mergeProposal.execute(
						db,
						{
							winner_proposal_id: props[0]._key,
							current_active_id: atom._key,
							user_id: 'u1',
							structure_edge_id: edge._id,
							expected_edge_rev: edge._rev,
						},
						RUN,
					),
				]),
			);
			const stale = await (
				await db.query({ query: 'FOR l IN proposal_links FILTER l._to == @a RETURN l', bindVars: { a: atom._id } })
			).all();
			if (merged)
				assert.equal(
					stale.length,
					0,
					`round ${round}: a proposal (created ${created}) is still linked to the merged-away atom`,
				);
			assert.ok(created || merged, 'one of the two commits');
		}
	},
);

testSkipIf(SKIP)(
	'live race: Create Proposal vs Archive serialise — a proposal that commits is ordered before the archive',
	async () => {
		for (let round = 0; round < 20; round++) {
			const { atom } = await seedDoc(0);
			const [created, archived] = settle(
				await Promise.allSettled([
					createProposal.execute(db, { target_active_id: atom._key, new_content: 'late', author: 'u2' }, RUN),
					archive.execute(db, { atom_id: atom._key, user_id: 'u1', expected_rev: atom._rev, reason: 'race' }, RUN),
				]),
			);
			const stored = await atomDoc(atom._key);
			// the archive CAS-compares the _rev it was given: a proposal's touch before it makes it fail
			if (created && archived) assert.fail(`round ${round}: both committed, so one did not see the other`);
			assert.equal(stored.status, archived ? 'archived' : 'active');
			assert.ok(created || archived);
		}
	},
);
