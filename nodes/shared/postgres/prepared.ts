/**
 * Named (server-side prepared) statements for the hot paths of the ops.jobs queue (issue 29 P2): Claim Jobs and
 * Finish Job run the same text thousands of times per minute, and PostgreSQL spent about a third of their server
 * time parsing and planning it. They run as named statements on a pool of their own (namedStatementPool): a
 * second pool per credential pool whose connections run nothing else and plan them once
 * (`plan_cache_mode = force_generic_plan`, sent as each connection's first query). The setting stays off the
 * shared pool: on a connection it also reaches unnamed statements (PostgreSQL plans an unnamed statement
 * through the same plan cache) and would plan every query of every node without its parameters' values.
 *
 * Rules for a statement named here:
 *  - its result columns are listed, never `t.*`: a prepared statement whose row type changes (a migration
 *    adding a column while n8n runs) fails with SQLSTATE 0A000 "cached plan must not change result type" (the
 *    pool then drops that connection: one failed call per connection);
 *  - its generic plan must not depend on a parameter's value (no join sized from a `LIMIT $n`: use
 *    `= ANY (ARRAY(…))`), since PostgreSQL may choose it (test/integration/jobStatementsPrepared.test.ts);
 *  - behind PgBouncer: session pooling needs `server_reset_query = DISCARD ALL` (its default) so a new client
 *    does not meet a backend holding the name (42P05); not for transaction pooling, where the session setting
 *    would stay on a server connection other clients then get (docs/scaling-out.md: Claim Jobs and Finish Job
 *    need a direct or session connection; Claim Jobs' lease needs one anyway).
 */
import { createHash } from 'node:crypto';
import { Pool, type PoolClient } from 'pg';

/** A statement node-postgres prepares once per connection under `name` (`pool.query({ name, text, values })`). */
export interface NamedStatement {
	readonly name: string;
	readonly text: string;
}

/**
 * The named statement of `text`: `contracts_<label>_<first 12 hex of sha256(text)>`, so two versions of a
 * statement (an upgrade of the package in a running pool, a bench's variant) never share a name — node-postgres
 * refuses one name with two texts on a connection.
 * @param label lower-case letters, digits and `_` (part of the name)
 * @throws Error when the label is not that (a programming error)
 */
export function namedStatement(label: string, text: string): NamedStatement {
	if (!/^[a-z0-9_]{1,40}$/.test(label))
		throw new Error(`statement label ${JSON.stringify(label)} is not [a-z0-9_]{1,40}`);
	const digest = createHash('sha256').update(text).digest('hex').slice(0, 12);
	return { name: `contracts_${label}_${digest}`, text };
}

/** The session setting of namedStatementPool's connections: generic plans (PostgreSQL ≥ 12). */
export const GENERIC_PLAN_SETTING = 'SET plan_cache_mode = force_generic_plan';

const namedPools = new WeakMap<Pool, Pool>();

/**
 * The pool the named statements of `pool` run on: created on first use with `pool`'s options (same server,
 * database, user, password, TLS, the same most connections — opened only while calls need them, none kept
 * open), application_name `<pool's> (named statements)`, and
 * GENERIC_PLAN_SETTING as each connection's first query (node-postgres runs a connection's queries in order;
 * not a startup option, which PgBouncer refuses; a failure of it — a server older than 12, a pooler — is ignored:
 * the statements still run, planned per execution). Only single-statement calls outside a transaction may use
 * it: a caller in a transaction passes its client, which is used as it is. Idle connections close after
 * `pool`'s idle timeout and never keep the process alive; endNamedStatementPool ends it with `pool`.
 * `db` anything but a pg Pool (a PoolClient, a wrapper), or a pool ending or ended: returned unchanged.
 */
export function namedStatementPool<T>(db: T): T | Pool {
	if (!(db instanceof Pool)) return db;
	// an ended pool gets no new named pool (its callers fail on the pool itself, as before)
	const state = db as unknown as { ending?: boolean; ended?: boolean };
	if (state.ending || state.ended) return db;
	let named = namedPools.get(db);
	if (!named) {
		const options = db.options;
		named = new Pool({
			...options,
			// pg-pool keeps the password as a non-enumerable option: a spread would drop it
			password: options.password,
			min: 0,
			application_name: `${options.application_name ?? 'n8n-nodes-contracts'} (named statements)`,
			allowExitOnIdle: true,
		});
		// an idle connection's error (server restart, terminated backend) must not crash n8n
		named.on('error', () => undefined);
		named.on('connect', (client: PoolClient) => {
			client.query(GENERIC_PLAN_SETTING).catch(() => undefined);
		});
		namedPools.set(db, named);
	}
	return named;
}

/** Ends the named-statement pool of `pool`, if it has one (with `pool`: ./pool.ts closes both). */
export async function endNamedStatementPool(pool: Pool): Promise<void> {
	const named = namedPools.get(pool);
	if (!named) return;
	namedPools.delete(pool);
	await named.end().catch(() => undefined);
}
